"""Step 5, ``consume_line``: the business ACK comes only after the commit.

One claim: for any sequence of calls, from a fresh store or from a cursor
anywhere in the seq range (rows possibly missing below it), with ``line``
drawn from its whole domain (``strategies.lines()``) or made a frame
against the model's cursor (the next event, a duplicate, a conflict, a gap)
and ``fault`` from its whole domain (``arguments.hooks()``; one run per class
of fault, one that draws lines from their whole domain, and one run per
class of line, at a smaller budget), each call's
outcome is the model's (``model.Store.consume_line``: ``b"ACK <seq>\\n"`` for
a new event and for a duplicate, step 1's or step 3's error otherwise, a
fault's own exception as that very object); ``fault`` is passed through to
``apply_event`` (called exactly when and as often as the model calls it,
never by ``consume_line`` itself); right after the call a second connection
sees exactly the model's store, the connection's own ``state`` agrees, and
no transaction is left open.
"""

import contextlib
import sqlite3

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from resume.testing.strategies import arguments
from resume.testing import model
from resume.testing.drivers import store_files
from resume.testing.plugin.first_look import first_look, searching
from resume.testing.strategies import values as sts
from resume.testing.drivers.store_files import opened, prefill, temp_store_path


# A line is drawn as an intention and made a frame against the model's
# cursor when it is sent, so that it stays interesting as the cursor moves:
#   next        seq = last + 1
#   duplicate   seq = last - k, the delta the ledger holds (with no row: any delta)
#   conflict    seq = last - k, a delta that differs from the ledger's
#   gap         seq = last + 1 + k
#   gap again   a gap's frame (seq = last + 1 + k), the events that fill its hole, then the
#               gap's frame again: a refusal is not kept for later, and now it is the next event
#   any line    a value from the whole domain of ``line``
INTENTIONS = ["next", "duplicate", "conflict", "gap", "gap again", "any line"]

# Which parameter a run draws from its whole domain more often: ``line``, or
# ``fault`` of one class (each in a run of its own, so that every class gets
# the whole budget in every run: a class drawn in a mix comes once in tens of calls).
FAULT_KINDS = [kind for kind in arguments.HOOK_KINDS if not kind.startswith("awaitable")]
FOCUS = ["line"] + [f"fault: {kind}" for kind in FAULT_KINDS]

# Strategies are built once, here: one built at each draw costs more than the draw.
LINES, HOOKS = sts.lines(), arguments.hooks()
_FORWARD = INTENTIONS + ["next"] * 3  # mostly forward, so that the ledger grows and faults get called
_ANY_LINE, _FORWARD_ONLY = st.sampled_from(_FORWARD + ["any line"] * len(_FORWARD)), st.sampled_from(_FORWARD)
_MOSTLY_THE_CLASS = st.sampled_from(_FORWARD + ["any line"] * 3 * len(_FORWARD))  # a run of one class of line
_THE_CLASS = st.just("any line")


@st.composite
def calls(draw, focus, last=False):
    if focus.startswith("fault: "):
        kind = draw(_FORWARD_ONLY)
    elif focus == "line":
        kind = draw(_ANY_LINE)
    else:  # a run of one class of line, whose plans end in a line of it (``last``)
        kind = draw(_THE_CLASS if last else _MOSTLY_THE_CLASS)
    line = None
    if kind == "any line":
        line = draw(sts.lines(focus.removeprefix("line: ")) if focus.startswith("line: ") else LINES)
    if focus.startswith("fault: "):
        fault = draw(arguments.hooks(kind=focus.removeprefix("fault: ")))
    else:
        fault = draw(HOOKS if draw(st.booleans()) else st.none())
    return kind, draw(st.integers(0, 3)), draw(st.integers(model.DELTA_MIN, model.DELTA_MAX)), line, fault


# And one run per class of line (``strategies.LINE_KINDS``), in a test of its own with a smaller
# budget: consume_line must hand the line to step 1 as it came, whatever its class (a receiver
# that strips it, splits it at its LFs or decodes it first shows only with that class).
LINE_FOCUS = [f"line: {kind}" for kind in sorted(sts.LINE_KINDS)]
# (Its plans end in a line of the class: every example has one.)
PLANS = {focus: st.lists(calls(focus), min_size=1, max_size=12) for focus in FOCUS}
PLANS.update({focus: st.tuples(st.lists(calls(focus), max_size=11), calls(focus, last=True)).map(
    lambda drawn: [*drawn[0], drawn[1]]) for focus in LINE_FOCUS})


def concrete(store, call):
    """The lines of a drawn call, against the model's store as it is now: one line, or for
    "gap again" the gap's frame, the events that fill its hole, and the gap's frame again."""
    kind, k, delta, line, _ = call
    if kind == "any line":
        return [line]
    if kind == "gap again":  # refused, then its hole filled, then sent again: now it is the next event
        event("a frame refused as a gap, sent again once its hole is filled")
        gap = max(k, 1)
        line = model.frame(store.last + 1 + gap, delta)
        return [line] + [model.frame(store.last + 1 + i, delta) for i in range(gap)] + [line]
    if kind in ("next", "gap"):
        return [model.frame(store.last + 1 + (max(k, 1) if kind == "gap" else 0), delta)]
    seq = store.last - k
    stored = store.ledger.get(seq)
    if kind == "duplicate" or stored is None:
        return [model.frame(seq, delta if stored is None else stored)]
    return [model.frame(seq, model.other_delta(stored))]


@pytest.mark.parametrize("focus", FOCUS)
@searching(max(5, settings.default.max_examples // 2))  # a few ms an example; 10 runs
@given(start=arguments.store_states(), data=st.data())
def test_consume_line_does_what_the_model_predicts(impl, focus, start, data):
    calls_as_predicted(impl, start, data.draw(PLANS[focus], label="plan"))


@pytest.mark.parametrize("focus", LINE_FOCUS)
@settings(max_examples=max(3, settings.default.max_examples // 8))  # one run per class: 43 runs
@given(start=arguments.store_states(), data=st.data())
def test_consume_line_takes_every_class_of_line_as_the_model_does(impl, focus, start, data):
    calls_as_predicted(impl, start, data.draw(PLANS[focus], label="plan"))


def calls_as_predicted(impl, start, plan):
    """Make the calls of ``plan`` on a store at ``start``; each outcome, the fault's calls and the store are the model's."""
    expected = start.copy()
    with temp_store_path() as path, opened(impl, path) as con:
        if start.last != model.LAST_MIN:
            prefill(path, start.last, start.total, start.ledger)
        for line, fault in ((line, call[-1]) for call in plan for line in concrete(expected, call)):
            parsed = model.parse(line)
            what = model.call_text("consume_line", model.CON, line, fault=fault, on=expected,
                                   kind=expected.what_it_is(*parsed) if parsed else "not a frame")
            note(what)
            theirs, mine = arguments.fresh(fault), arguments.fresh(fault)
            prediction = expected.consume_line(line, theirs)
            model.expect(model.outcome_of(impl, impl.consume_line, con, line, mine), prediction, what)
            if isinstance(mine, arguments.Hook) and mine.calls != theirs.calls:
                model.differs(f"{what}: the calls of fault", f"{len(theirs.calls)} call(s), with no argument",
                              f"{len(mine.calls)} call(s)" + (f", with {mine.calls}" if any(mine.calls) else ""),
                              model.calls_clause(fault, "S5.fault"))
            store_files.expect_at_rest(impl, con, expected, what, path)


test_consume_line_does_what_the_model_predicts_first_look = first_look(
    test_consume_line_does_what_the_model_predicts,
    start=arguments.store_states(), data=st.data())




def test_a_locked_store_gives_operational_error_through_consume_line_too(impl, tmp_path):
    """Decision 4 through step 5: a duplicate's answer waits for the lock too (``last`` is read
    inside the transaction that writes), so ``consume_line`` raises OperationalError after the busy
    timeout, returns no ACK and leaves no transaction open. (Step 3's test times the wait.)"""
    path = str(tmp_path / "store.db")
    with opened(impl, path) as con:
        impl.apply_event(con, 0, 5)
        con.execute("PRAGMA busy_timeout = 200")  # not open_store's 1 s: step 2 checks that value
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            what = (model.call_text("consume_line", model.CON, model.frame(0, 5), on=model.Store(0, 5, {0: 5}),
                                    kind="a duplicate, same delta") + ", while another connection holds the write lock")
            model.expect(model.outcome_of(impl, impl.consume_line, con, model.frame(0, 5)),
                         model.Store(0, 5, {0: 5}).locked(0, 5), what)
            if con.in_transaction:
                model.differs(what, "no transaction left open", "con.in_transaction is True",
                              model.OBSERVED["busy wait"])
            other.execute("ROLLBACK")
