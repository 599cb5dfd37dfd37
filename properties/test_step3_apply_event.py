"""Step 3, ``apply_event``: the ledger row, the total and the cursor are saved together or not at all.

Claims:
* for any sequence of calls, from a fresh store or from a cursor anywhere in
  the seq range (rows possibly missing below it), with ``seq``, ``delta``
  and ``fault`` drawn from their whole domains (``resume.testing.strategies.arguments``),
  each call's outcome is the model's (``model.Store.apply_event``); inside
  ``fault`` the connection sees the row and the total written and the cursor
  not moved, and a second connection sees nothing of it yet; after the call
  a second connection sees exactly the model's store, and no transaction
  is left open;
* a statement of the call that fails (a FAKE, ``resume.testing.drivers.statements``:
  the n-th statement raises an Exception or a BaseException instead of
  running; each call is made again with n = 1, 2, ... until it runs without
  a failure, so that every statement of it fails once, its COMMIT included)
  makes the call raise that very error, changing nothing and leaving no
  transaction;
* a store locked by another connection gives sqlite3.OperationalError after
  the connection's busy timeout (waited once, not twice), changing nothing
  and leaving no transaction;
* two connections never both apply ``last + 1`` (decision 4).
"""

import contextlib
import sqlite3
import time

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from resume.testing.strategies import arguments
from resume.testing import model
from resume.testing.drivers import busy, statements, store_files
from resume.testing.plugin.first_look import first_look, searching
from resume.testing.drivers.store_files import opened, prefill, read, temp_store_path


# A call is drawn as an intention and made concrete against the model's
# cursor when it runs, so that it stays interesting as the cursor moves:
#   next          seq = last + 1
#   same again    seq = last - k (k = 0..3), or the first seq 0 (k = 4: far below
#                 a cursor at the top), the delta the ledger holds (a true duplicate;
#                 with no row, or below 0, the model says Conflict / ValueError)
#   other delta   the same seq, a delta that differs from the ledger's
#   gap           seq = last + 1 + k
#   any seq       seq from the run's class of it, else its whole domain; delta 1
#   any delta     delta from the run's class of it, else its whole domain, at the
#                 next seq, past a gap, at the cursor, below it or at seq 0:
#                 an invalid delta meets every path, not only the next event's
# In the run of a class that holds any int value (arguments.AS_CLASS: an int
# subclass, a float, an object with __index__...), every call gives its seq,
# wherever the intention places it, as a value of that class: the class meets
# every path, the next event's (whose seq is written) included.
INTENTIONS = ["next", "same again", "other delta", "gap", "any seq", "any delta"]


# One run per class of each parameter (``arguments.INT_CLASSES`` for seq and
# delta, ``arguments.HOOK_KINDS`` for fault): the run draws that parameter from
# its class (seq or delta on every other call, fault on every call), the rest
# from their whole domains. With the
# classes mixed in one run per parameter, a short run met a class such as
# "one past an end" in 1 example of 50 under some seeds and never under
# others; a run of its own reaches it in every example.
FAULT_KINDS = [kind for kind in arguments.HOOK_KINDS if not kind.startswith("awaitable")]
# And one run per class of failure of a statement of the call (``resume.testing.drivers.statements``,
# a FAKE: the n-th statement, n drawn, raises an error of that class instead of running).
RUNS = ([("seq", kind) for kind in arguments.INT_CLASSES] + [("delta", kind) for kind in arguments.INT_CLASSES]
        + [("fault", kind) for kind in FAULT_KINDS] + [("statement", kind) for kind in statements.ERRORS])


# Strategies are built once, here: one built at each draw costs more than the draw.
# A run weighs the intention that uses its parameter as much as all the others
# together: a value of its class for seq or delta, and for fault the next seq
# (fault runs only when a call applies an event).
_WEIGHTED = {"seq": "any seq", "delta": "any delta", "fault": "next", "statement": "next"}
_INTENTIONS = {parameter: st.sampled_from(INTENTIONS + [kind] * len(INTENTIONS)) for parameter, kind in _WEIGHTED.items()}
_CLASS = {"seq": arguments.int_classes(model.SEQ_MIN, model.SEQ_MAX),
          "delta": arguments.int_classes(model.DELTA_MIN, model.DELTA_MAX),
          "fault": {kind: arguments.hooks(kind=kind) for kind in FAULT_KINDS}}
# Beside a seq or delta of the run's class, no fault half the time (the usual call), else any:
# most of fault's domain fails before the cursor moves, and the class would meet no commit.
_ANY_FAULT = st.none() | arguments.hooks()
_PLACES = st.sampled_from([4, 0, 1, 2, 3])  # k, seq 0 first: what a run starts from, and shrinks to
_ERRORS = {kind: st.sampled_from(errors) for kind, errors in statements.ERRORS.items()}


@st.composite
def calls(draw, parameter, kind):
    intention = draw(_INTENTIONS[parameter])
    values = arguments.any_seqs() if intention == "any seq" else arguments.any_deltas()
    if intention == _WEIGHTED[parameter] != "next":
        values = _CLASS[parameter][kind]
    fault = draw(_CLASS["fault"][kind] if parameter == "fault" else _ANY_FAULT)
    as_class = arguments.AS_CLASS.get(kind) if parameter == "seq" else None
    failure = draw(_ERRORS[kind]) if parameter == "statement" else None  # at each statement in turn
    return intention, draw(_PLACES), draw(values), fault, as_class, failure


PLANS = {run: st.lists(calls(*run), min_size=1, max_size=12) for run in RUNS}


def concrete(world, call):
    """``(seq, delta)`` of a drawn call, against the model's store as it is now."""
    kind, k, value, _, as_class, _ = call
    if kind == "any seq":
        return value, 1
    seq, delta = placed(world, kind, k, value)
    return (as_class(seq) if as_class else seq), delta


def placed(world, kind, k, value):
    """``(seq, delta)`` where the intention ``kind`` places a call on the model's store now."""
    below = world.last - k if k < 4 else model.SEQ_MIN
    if kind == "any delta":
        return (world.last + 1, world.last + 2, world.last, world.last - 1, model.SEQ_MIN)[k], value
    delta = value if model.is_delta(value) else 1
    if kind == "next":
        return world.last + 1, delta
    if kind == "gap":
        return world.last + 1 + max(k, 1), delta
    seq = below
    stored = world.ledger.get(seq)
    if kind == "same again" or stored is None:
        return seq, (stored if stored is not None else delta)
    return seq, model.other_delta(stored)


@pytest.mark.parametrize("parameter,kind", RUNS, ids=[f"{parameter}: {kind}" for parameter, kind in RUNS])
@searching(max(5, settings.default.max_examples // 5))  # 5-10 ms an example; 30 runs
@given(start=arguments.store_states(), data=st.data())
def test_apply_event_does_what_the_model_predicts(impl, parameter, kind, start, data):
    plan = data.draw(PLANS[parameter, kind], label="plan")
    expected = start.copy()
    failing = statements.failing_connections() if parameter == "statement" else contextlib.nullcontext()
    with temp_store_path() as path, failing, opened(impl, path) as con:
        if start.last != model.LAST_MIN:
            prefill(path, start.last, start.total, start.ledger)
        with opened(impl, path) as other:  # a second connection of the file's own: a reader beside the write
            calls_on_one_store(impl, con, other, path, expected, plan)


def calls_on_one_store(impl, con, other, path, expected, plan):
    for call in plan:
        seq, delta = concrete(expected, call)
        # A statement run makes the call again and again, its n-th statement failing, n = 1, 2, ...
        # until it runs whole (the call's own statements are a handful: the bound is a backstop).
        for nth in range(1, 50):
            if not one_call(impl, con, other, path, expected, seq, delta, call[3], call[5], nth):
                break


def one_call(impl, con, other, path, expected, seq, delta, fault, failure, nth):
    """Call apply_event (its ``nth`` statement raising an error of class ``failure``, if given),
    compare with the model, which moves ``expected``; whether the statement failed."""
    before = expected.copy()
    theirs, mine, seen = arguments.fresh(fault), arguments.fresh(fault), []
    if isinstance(mine, arguments.Hook):
        # Inside fault: the call's own connection (its cursor, its total and its ledger, the row of
        # this event included), the file's state() on a second connection (a reader beside a write
        # in progress: decision 4's lock leaves it alone), and the file as another reader sees it.
        mine.observer = lambda: seen.append(((impl.state(con), store_files.ledger_on(con)),
                                             model.outcome_of(impl, impl.state, other), read(path)))
    error = failure and model.drawn_error(failure, "a FAKE failure of a statement")
    armed = failure is not None and statements.arm(con, nth, error)
    got = model.outcome_of(impl, impl.apply_event, con, seq, delta, mine)
    failed = armed and con.fired
    if armed:
        con.disarm()
    prediction = expected.apply_event(seq, delta, theirs, failed or None)
    what = model.call_text("apply_event", model.CON, seq, delta, fault=fault, on=before,
                           kind=before.what_it_is(seq, delta))
    if failed:
        what += f", where its statement number {nth} raises {error!r}"
    note(what)
    model.expect(got, prediction, what)
    if isinstance(mine, arguments.Hook) and mine.calls != theirs.calls and not failed:
        model.differs(what, f"fault called {len(theirs.calls)} time(s), with no argument",
                      f"called {len(mine.calls)} time(s)" + (f", with {mine.calls}" if any(mine.calls) else ""),
                      model.calls_clause(fault, model.OBSERVED["fault calls"]))
    if seen:
        inside_fault(what, before, before.at_fault(seq, delta), seen)
    store_files.expect_at_rest(impl, con, expected, what, path)
    return failed


def inside_fault(what, before, inside, seen):
    """What fault saw (``seen``: one look per call) is the model's: its own connection the row and
    the total written and the cursor not moved; a reader the committed store."""
    what = f"{what}, looked at from inside fault()"
    event("inside fault: con's ledger and cursor, state() on a second connection, the file read")
    for own, theirs, read_there in seen:
        if own != inside.snapshot():
            model.differs(what, f"on con: state(con) = {inside.state()} and the ledger {inside.snapshot()[1]} "
                                "(the row and the total written, the cursor not moved yet)",
                          f"on con: state(con) = {own[0]} and the ledger {own[1]}", model.OBSERVED["inside fault"])
        reader = f"{what}: state(other) on a second connection of open_store's, while con writes"
        if isinstance(theirs, model.Returned) and theirs != model.Returned(before.state()):
            model.differs(reader, repr(before.state()), repr(theirs.value), model.OBSERVED["inside fault"])  # torn
        model.expect(theirs, model.Returned(before.state(), "D4"), reader)  # a reader must not wait (decision 4)
        if read_there != before.snapshot():
            model.differs(what, f"another connection still sees {store_files.text(before.snapshot())}",
                          f"it sees {store_files.text(read_there)}", model.OBSERVED["inside fault"])


test_apply_event_does_what_the_model_predicts_first_look = first_look(
    test_apply_event_does_what_the_model_predicts,
    start=arguments.store_states(), data=st.data())


BUSY = 0.2  # seconds: the busy timeout the locked-store test gives the connection


def test_a_locked_store_gives_operational_error_after_the_busy_timeout_and_changes_nothing(impl, tmp_path):
    # One example only: it waits out the busy timeout, cut from open_store's 1 s (step 2's
    # test checks that value) to BUSY: apply_event must wait what its connection says, once:
    # a call that takes twice as long waited twice (a retry), or longer than its connection says.
    path = str(tmp_path / "store.db")

    def locked(call, *args):
        started = time.monotonic()
        got = model.outcome_of(impl, call, con, *args)
        waited = time.monotonic() - started
        store = model.Store(0, 5, {0: 5})
        what = (model.call_text(call.__name__, model.CON, *args, on=store, kind=store.what_it_is(*args))
                + ", while another connection holds the write lock")
        model.expect(got, model.Store(0, 5, {0: 5}).locked(*args), what)
        if con.in_transaction:
            model.differs(what, "no transaction left open", "con.in_transaction is True", model.OBSERVED["busy wait"])
        if not 0.8 * BUSY <= waited < 2 * BUSY:
            model.differs(f"{what}, the connection's busy timeout {BUSY} s", f"raises after about {BUSY} s, once",
                          f"raises after {waited:.2f} s",
                          model.OBSERVED["no busy wait" if waited < 0.5 * BUSY else "busy wait"])

    with opened(impl, path) as con:
        impl.apply_event(con, 0, 5)
        con.execute(f"PRAGMA busy_timeout = {int(BUSY * 1000)}")
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            locked(impl.apply_event, 1, 7)
            # A duplicate too: last is read inside the transaction that writes (decision 4), so
            # the duplicate's answer waits for the lock (through consume_line as well: step 5's test).
            locked(impl.apply_event, 0, 5)
            # Invalid arguments are refused as such, lock or no lock (checked before any wait).
            for seq, delta in [(True, 5), (1, 1.0), (1, model.DELTA_MAX + 1)]:
                what = (model.call_text("apply_event", model.CON, seq, delta, on=model.Store(0, 5, {0: 5}))
                        + ", while another connection holds the write lock")
                model.expect(model.outcome_of(impl, impl.apply_event, con, seq, delta),
                             model.Store(0, 5, {0: 5}).apply_event(seq, delta), what)
                if con.in_transaction:
                    model.differs(what, "no transaction left open", "con.in_transaction is True", "S3.int-args")
            other.execute("ROLLBACK")
        after = model.Store(0, 5, {0: 5}, because="D4.locked")  # nothing changed
        store_files.expect(path, after, "the store after the calls that found it locked")
        # A reader that arrives during the write (in fault) and holds its read for three busy
        # timeouts: a rollback journal's COMMIT waits for it once, then fails; WAL's never waits.
        reader = busy.ReaderFor(path, 3 * BUSY)
        try:
            started = time.monotonic()
            got = model.outcome_of(impl, impl.apply_event, con, 1, 7, reader.start)
            waited = time.monotonic() - started
        finally:
            reader.stop()
        wal = store_files.in_wal(path)
        predicted = model.commit_beside_a_reader(after.copy().apply_event(1, 7), wal)
        what = ("apply_event(con, 1, 7, fault=a hook that starts a read transaction on another connection, "
                f"held {3 * BUSY:g} s) on a store at last=0, total=5 "
                f"({'WAL' if wal else 'a rollback journal'}; the busy timeout {BUSY} s)")
        model.expect(got, predicted, what)
        if not wal and not 0.8 * BUSY <= waited < 2 * BUSY:
            model.differs(what, f"raises after about {BUSY} s, once", f"raises after {waited:.2f} s",
                          model.OBSERVED["busy wait"])
        if isinstance(predicted, model.Returned):
            after.apply_event(1, 7)
        store_files.expect_at_rest(impl, con, after, what, path)
        model.expect(model.outcome_of(impl, impl.apply_event, con, after.last + 1, 7),
                     after.apply_event(after.last + 1, 7),
                     f"then apply_event(con, {after.last + 1}, 7), the reader gone")  # the connection is still usable


MOMENTS = 4  # apply_event's first statements at which the second connection acts, each in turn


@given(
    last=st.sampled_from([model.LAST_MIN, 0, model.SEQ_MAX - 1]) | st.integers(model.LAST_MIN, model.SEQ_MAX - 1),
    mine=st.integers(model.DELTA_MIN, model.DELTA_MAX),
    theirs=st.none() | st.integers(model.DELTA_MIN, model.DELTA_MAX),
    ahead=st.sampled_from([0, 1]),
)
def test_two_connections_never_both_apply_last_plus_one(impl, last, mine, theirs, ahead):
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
    its busy timeout is cut to 0: the first holds the lock until the second returns, so waiting could only cost time).
    With ``ahead`` the first asks for ``last + 2``: a Gap, or, if the second applied ``last + 1``
    first, the next event, its delta added to the total the second left (no lost update).
    """
    theirs = mine if theirs is None else theirs
    for at in range(MOMENTS):
        _race_at(impl, last, at, mine, theirs, last + 1 + ahead)


def _race_at(impl, last, at, mine, theirs, seq):
    with temp_store_path() as path:
        with opened(impl, path) as con, opened(impl, path) as other:
            prefill(path, last, 0)
            other.execute("PRAGMA busy_timeout = 0")  # the lock is never released while it waits: fail at once
            statements, acted = [], []

            def on_statement(sql):
                statements.append(sql)
                if len(statements) - 1 == at:
                    acted.append(model.outcome_of(impl, impl.apply_event, other, last + 1, theirs))

            con.set_trace_callback(on_statement)
            try:
                mine_result = model.outcome_of(impl, impl.apply_event, con, seq, mine)
            finally:
                con.set_trace_callback(None)
            note(f"apply_event's statements: {statements}")
            note(f"the second connection's apply_event(other, {last + 1}, {theirs}) at statement #{at}: "
                 f"{', '.join(map(str, acted)) or 'never (fewer statements)'}; "
                 f"the first's apply_event(con, {seq}, {mine}) {model.plain(mine_result)}")
            what = (model.call_text("apply_event", model.CON, seq, mine, on=model.Store(last, 0))
                    + f", with another connection applying {last + 1} at its statement #{at}")
            # The second connection either applied first, or found the write lock held.
            if acted not in ([], [model.Returned(True)], [model.LOCKED]):
                model.differs(f"{what}: the other connection's call", f"{model.Returned(True)} or {model.LOCKED}",
                              model.plain(acted[0]), "D4")
            world = model.Store(last, 0)
            if acted == [model.Returned(True)]:
                world.apply_event(last + 1, theirs)
            model.expect(mine_result, model.raced(world.apply_event(seq, mine)), what)
            world.because = "D4"
            store_files.expect(path, world, f"{what}, then another connection reads the store")
            if con.in_transaction or other.in_transaction:
                model.differs(what, "no transaction left open on either connection", "one is open", "D4")


def test_gap_and_conflict_are_exceptions(impl):
    """Step 3: "Declare Gap and Conflict as subclasses of Exception" (so `except Exception` handles them)."""
    for name in ("Gap", "Conflict"):
        model.expect_exception_class(impl, name)
