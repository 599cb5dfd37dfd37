"""Step 3, ``apply_event``: the ledger row, the total and the cursor are saved together or not at all.

Claims:
* for any sequence of attempts, from a fresh store or from a cursor anywhere
  in the seq range (rows possibly missing below it), each outcome — True,
  False, Gap, Conflict, ValueError — and the state a second connection sees
  right after the call match a few-line model; no transaction is left open;
* bad argument types and ranges raise ValueError and change nothing;
* a ``fault`` raising any BaseException sees the total already updated and
  the cursor not yet moved, and afterwards the state and ledger are exactly
  as before, no transaction is open, and the very same object propagates;
* a store locked by another connection gives sqlite3.OperationalError after
  about the 1 s busy timeout, changing nothing and leaving no transaction.
"""

import contextlib
import sqlite3
import time

import pytest
from hypothesis import example, given, note
from hypothesis import strategies as st

from resume.testing import strategies as sts
from resume.testing.store import opened, prefill, read, temp_store_path


def is_valid_int(value, low, high):
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


class Model:
    """SPEC step 3 and decision 6, in a few lines."""

    def __init__(self, last=-1, total=0, ledger=None):
        self.last, self.total, self.ledger = last, total, dict(ledger or {})

    def apply(self, seq, delta):
        if not (is_valid_int(seq, sts.SEQ_MIN, sts.SEQ_MAX) and is_valid_int(delta, sts.DELTA_MIN, sts.DELTA_MAX)):
            return "ValueError"
        if seq == self.last + 1:
            self.ledger[seq] = delta
            self.total += delta
            self.last = seq
            return True
        if seq <= self.last:
            return False if self.ledger.get(seq) == delta else "Conflict"
        return "Gap"

    def seen(self):
        return (self.last, self.total), self.ledger


def outcome(impl, call):
    """The call's result, or the name of the contract's exception it raised."""
    try:
        return call()
    except impl.Gap:
        return "Gap"
    except impl.Conflict:
        return "Conflict"
    except ValueError:
        return "ValueError"


@st.composite
def starts(draw):
    """(last, total, ledger) to start from: fresh, or a cursor anywhere with some rows below it."""
    if draw(st.booleans()):
        return -1, 0, {}
    last = draw(sts.seqs())
    below = range(max(0, last - 3), last + 1)
    ledger = {seq: draw(sts.deltas()) for seq in below if draw(st.booleans())}
    return last, draw(st.integers(-(10**6), 10**6)), ledger


# An attempt is drawn as an intention and made concrete against the model's
# cursor when it runs, so that it stays interesting as the cursor moves:
#   next          seq = last + 1, any delta
#   same again    seq = last - k, the delta the ledger holds (a true duplicate;
#                 with no row, or below 0, the model says Conflict / ValueError)
#   other delta   seq = last - k, a delta that differs from the ledger's
#   gap           seq = last + 1 + k
#   bad seq / bad delta
# Revisits are as likely as new events: a "changed delta taken for a
# duplicate" bug must not hide behind rare plans.
ATTEMPT_KINDS = ["next", "same again", "other delta", "gap", "bad seq", "bad delta"]


@st.composite
def attempts(draw):
    kind = draw(st.sampled_from(ATTEMPT_KINDS))
    if kind == "bad seq":
        return kind, draw(sts.bad_ints(sts.SEQ_MIN, sts.SEQ_MAX)), draw(sts.deltas())
    if kind == "bad delta":
        return kind, draw(st.integers(-1, 1)), draw(sts.bad_ints(sts.DELTA_MIN, sts.DELTA_MAX))
    return kind, draw(st.integers(0, 3)), draw(sts.deltas())


def concrete(model, attempt):
    kind, k, value = attempt
    if kind == "next":
        return model.last + 1, value
    if kind == "gap":
        return model.last + 1 + max(k, 1), value
    if kind == "bad seq":
        return k, value
    if kind == "bad delta":
        return model.last + 1 + k, value
    seq = model.last - k
    stored = model.ledger.get(seq)
    if kind == "same again":
        return seq, (stored if stored is not None else value)
    if stored is None:
        return seq, value
    return seq, (stored + 1 if stored < sts.DELTA_MAX else stored - 1)


@given(start=starts(), plan=st.lists(attempts(), min_size=3, max_size=16))
# Every run: a committed seq redelivered with another delta (Conflict, nothing
# changes); random plans from a random start reach it in only some runs.
@example(start=(-1, 0, {}), plan=[("next", 0, 5), ("other delta", 0, 0), ("next", 0, 7)])
def test_outcomes_and_the_committed_state_follow_the_model(impl, start, plan):
    model = Model(*start)
    with temp_store_path() as path, opened(impl, path) as con:
        if start[0] != -1:
            prefill(path, *start)
        for attempt in plan:
            seq, delta = concrete(model, attempt)
            expected = model.apply(seq, delta)
            got = outcome(impl, lambda: impl.apply_event(con, seq, delta))
            note(f"apply_event(con, {seq!r}, {delta!r}) -> {got!r}, model {expected!r}")
            assert got == expected
            assert not con.in_transaction
            # Read by a second connection right after the call: committed, at once.
            assert read(path) == model.seen()
            assert impl.state(con) == model.seen()[0]


bad_calls = st.one_of(
    st.tuples(sts.bad_ints(sts.SEQ_MIN, sts.SEQ_MAX), sts.deltas()),
    st.tuples(st.just(1), sts.bad_ints(sts.DELTA_MIN, sts.DELTA_MAX)),
)


@given(args=bad_calls)
def test_bad_arguments_raise_value_error_and_change_nothing(impl, args):
    with temp_store_path() as path, opened(impl, path) as con:
        impl.apply_event(con, 0, 5)  # seq 1 is next: 1.0 or True would fit if accepted
        before = read(path)
        with pytest.raises(ValueError):
            impl.apply_event(con, *args)
        assert not con.in_transaction
        assert read(path) == before


@given(history=st.lists(sts.deltas(), max_size=4), delta=sts.deltas(), error=sts.fault_errors())
def test_a_fault_of_any_kind_rolls_everything_back_and_the_same_object_propagates(impl, history, delta, error):
    with temp_store_path() as path, opened(impl, path) as con:
        for seq, d in enumerate(history):
            assert impl.apply_event(con, seq, d) is True
        before = read(path)
        (last, total), _ = before
        seen_in_fault = []

        def fault():
            seen_in_fault.append(impl.state(con))
            raise error

        try:
            impl.apply_event(con, last + 1, delta, fault)
            raised = None
        except BaseException as caught:  # KeyboardInterrupt, SystemExit... are the point here
            raised = caught
        assert raised is error
        assert seen_in_fault == [(last, total + delta)]  # total updated, cursor not moved
        assert not con.in_transaction
        assert read(path) == before
        assert impl.state(con) == before[0]
        # Nothing half-written is left behind: the same event now applies.
        assert impl.apply_event(con, last + 1, delta) is True
        assert read(path) == ((last + 1, total + delta), {**before[1], last + 1: delta})


def test_a_locked_store_gives_operational_error_after_the_busy_timeout_and_changes_nothing(impl, tmp_path):
    # One example only: it waits out the 1 s busy timeout.
    path = str(tmp_path / "store.db")
    with opened(impl, path) as con:
        impl.apply_event(con, 0, 5)
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            started = time.monotonic()
            with pytest.raises(sqlite3.OperationalError):
                impl.apply_event(con, 1, 7)
            waited = time.monotonic() - started
            assert not con.in_transaction
            other.execute("ROLLBACK")
        assert 0.8 <= waited < 5, waited  # "about a second"; the upper bound allows for a loaded machine
        assert read(path) == ((0, 5), {0: 5})
        assert impl.apply_event(con, 1, 7) is True  # the connection is still usable


def _outcome_or_error(impl, call):
    """Like ``outcome``, but any exception becomes its type's name (an unexpected one included)."""
    try:
        return call()
    except impl.Conflict:
        return "Conflict"
    except Exception as error:
        return type(error).__name__


MOMENTS = 4  # apply_event's first statements at which the second connection acts, each in turn


@given(
    last=st.sampled_from([-1, 0, sts.SEQ_MAX - 1]) | st.integers(-1, sts.SEQ_MAX - 1),
    mine=sts.deltas(),
    theirs=st.none() | sts.deltas(),
)
def test_two_connections_never_both_apply_last_plus_one(impl, last, mine, theirs):
    """Decision 4: ``last`` is read inside the writing transaction (BEGIN IMMEDIATE).

    The test owns the connection it passes to apply_event, so sqlite3's trace
    callback (called as each of its statements starts) lets the test act at
    the moment the implementation issues its ``at``-th statement (each of the
    first MOMENTS in turn, a fresh store each time): a second
    connection then applies ``last + 1`` itself (``theirs``, the same delta
    when None). Whatever the moment, exactly one of the two applies it; the
    first call returns False (same delta) or raises Conflict (another delta)
    if the second got there first, never another error (an IntegrityError
    means it read ``last`` before it held the write lock); the second, if the
    first holds the lock, gets OperationalError (decision 4's locked store;
    its busy timeout is cut to 50 ms so that an example costs no second).
    """
    theirs = mine if theirs is None else theirs
    for at in range(MOMENTS):
        _race_at(impl, last, at, mine, theirs)


def _race_at(impl, last, at, mine, theirs):
    with temp_store_path() as path:
        with opened(impl, path) as con, opened(impl, path) as other:
            prefill(path, last, 0)
            other.execute("PRAGMA busy_timeout = 50")
            statements, acted = [], []

            def on_statement(sql):
                statements.append(sql)
                if len(statements) - 1 == at:
                    acted.append(_outcome_or_error(impl, lambda: impl.apply_event(other, last + 1, theirs)))

            con.set_trace_callback(on_statement)
            try:
                mine_result = _outcome_or_error(impl, lambda: impl.apply_event(con, last + 1, mine))
            finally:
                con.set_trace_callback(None)
            note(f"apply_event's statements: {statements}")
            note(f"the second connection applied at statement #{at}: {acted or 'never (fewer statements)'}; "
                 f"the first got {mine_result!r}")
            theirs_applied = acted == [True]
            assert acted in ([], [True], ["OperationalError"]), acted
            assert mine_result in (True, False, "Conflict"), f"apply_event raised {mine_result}"
            assert (mine_result is True) + theirs_applied == 1, "last + 1 was applied twice, or not at all"
            if theirs_applied:
                assert mine_result == (False if mine == theirs else "Conflict")
            applied = theirs if theirs_applied else mine
            assert read(path) == ((last + 1, applied), {last + 1: applied})
            assert not con.in_transaction and not other.in_transaction


def test_gap_and_conflict_are_exceptions(impl):
    """Step 3: "Declare Gap and Conflict as subclasses of Exception" (so `except Exception` handles them)."""
    assert issubclass(impl.Gap, Exception)
    assert issubclass(impl.Conflict, Exception)
