"""Step 4, ``replay``: never pass a truncated log off as a successful recovery.

One claim, drawn over the whole domain of ``(events, last, limit)``
(``strategies.REPLAY_KINDS``, one run per class so that every class gets the
whole budget: a valid log as a caller passes it with the cursor in each
relation to it, ``last`` and ``limit`` from their whole domains, every kind
of malformed log, every range at its ends together, one past each end):
what ``replay`` returns or raises is what the model predicts
(``model.replay``), a result is a new list, the caller's log is left
exactly as it was (the same item objects, equal to a deep copy taken
before), and the answer follows the log when the caller changes it between
two calls, while the list the first call returned stays as it was.
"""

import collections.abc
import operator
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resume.testing import model
from resume.testing.plugin.first_look import first_look, searching
from resume.testing.strategies import values as sts


def check(impl, events, last, limit):
    """Compare ``impl.replay(events, last, limit)`` with the model; return the implementation's outcome."""
    what = model.call_text("replay", events, last, limit)
    # A deep copy of the caller's log (an iterator is left for the call to read).
    before = pickle.loads(pickle.dumps(events)) if isinstance(events, collections.abc.Collection) else None
    items = list(events) if before is not None else None
    expected = model.replay(events, last, limit)
    got = model.outcome_of(impl, impl.replay, events, last, limit)
    if getattr(got, "kind", None) == "ResyncRequired" == model.replay_probe_wanted(expected, events, last):
        expected = model.replay_order_or_check(expected, check_there(impl, events, limit))
    model.expect(got, expected, what)
    if isinstance(got, model.Returned):
        if not (isinstance(got.value, list) and got.value is not events):
            model.differs(what, "a new list", "the very list it was given" if got.value is events else
                          f"a {type(got.value).__name__}", model.OBSERVED["new list"])
    if before is not None:
        if not (events == before and len(events) == len(items) and all(map(operator.is_, items, events))):
            model.differs(what, f"the caller's log left as it was: {before!r}, the very same items",
                          f"the log is now {events!r}" + ("" if events != before else " (equal, but other item objects)"),
                          model.OBSERVED["log unchanged"])
    return got


def check_there(impl, events, limit):
    """Whether ``impl`` refuses ``events`` and ``limit`` with ValueError where no ResyncRequired is
    due (the cursor just before the log's first seq): it has the check that refuses them."""
    probe = pickle.loads(pickle.dumps(events))  # the caller's log is not the probe's
    cursor = model.replay_probe_cursor(events)
    return getattr(model.outcome_of(impl, impl.replay, probe, cursor, limit), "kind", None) == "ValueError"


@pytest.mark.parametrize("kind", sorted(sts.REPLAY_KINDS))
@searching()
@given(data=st.data())
def test_replay_does_what_the_model_predicts(impl, kind, data):
    events, last, limit = data.draw(sts.replay_args(kind), label="events, last, limit")
    got = check(impl, events, last, limit)
    if isinstance(got, model.Returned) and got.value and isinstance(events, list):
        # The caller changes the first item it was given: the next answer must show it.
        at = events.index(got.value[0])
        seq, delta = events[at]
        events[at] = (seq, model.other_delta(delta))
        kept, copy = got.value, list(got.value)
        check(impl, events, last, limit)
        if kept != copy:  # a new list each time: the one the caller kept is the caller's
            model.differs(f"the list replay({events!r}, {last!r}, {limit!r}) returned before, kept by the caller",
                          f"left as it was: {copy!r}", f"it is now {kept!r}", model.OBSERVED["new list"])


test_replay_does_what_the_model_predicts_first_look = first_look(
    test_replay_does_what_the_model_predicts,
    data=st.data())


def test_replay_of_the_largest_log_cuts_from_the_cursor_by_the_limit(impl):
    # A start (5) and a limit (5) that share bits: every operator in place of
    # ``start + limit`` (|, ^, &, <<, -, *, ...) gives another slice.
    check(impl, [(seq, 0) for seq in range(model.LOG_MAX)], 4, 5)


def test_resync_required_is_an_exception(impl):
    """Step 4: "Declare ResyncRequired as a subclass of Exception" (so `except Exception` handles it)."""
    model.expect_exception_class(impl, "ResyncRequired")
