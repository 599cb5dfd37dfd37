"""Step 5, ``consume_line``: the business ACK comes only after the commit.

Claims:
* a new event and a duplicate with the same content both return exactly
  ``b"ACK <seq>\\n"``, anywhere in the seq range, and right after the ACK a
  second connection sees the event committed;
* a parse error (any invalid frame, non-bytes too), a gap, a conflict and a
  fault (any BaseException, passed through to apply_event) each propagate —
  the fault as the very same object — with no ACK returned, nothing
  committed and no transaction left open.
"""

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from resume.testing import strategies as sts
from resume.testing.store import opened, prefill, read, temp_store_path


def ack(seq):
    return b"ACK " + str(seq).encode("ascii") + b"\n"


@given(
    new=st.lists(sts.deltas(), min_size=1, max_size=5),
    start=st.one_of(st.just(-1), st.integers(-1, sts.SEQ_MAX - 5), st.just("top")),
    resend=st.lists(st.integers(0, 4), max_size=4),
)
def test_new_and_duplicate_events_are_acked_with_their_seq_after_the_commit(impl, new, start, resend):
    if start == "top":
        start = sts.SEQ_MAX - len(new)  # the last event is 2147483647
    with temp_store_path() as path, opened(impl, path) as con:
        prefill(path, start, 0)
        total, ledger = 0, {}
        for offset, delta in enumerate(new):
            seq = start + 1 + offset
            total += delta
            ledger[seq] = delta
            assert impl.consume_line(con, sts.frame(seq, delta)) == ack(seq)
            assert read(path) == ((seq, total), ledger)  # visible to another connection at once
        for offset in resend:
            seq = start + 1 + offset % len(new)
            assert impl.consume_line(con, sts.frame(seq, ledger[seq])) == ack(seq)
            assert not con.in_transaction
        assert read(path) == ((start + len(new), total), ledger)


@st.composite
def failing_lines(draw, history, kind):
    """``(kind, line, fault, expected)`` that consume_line must refuse, after ``history`` was applied from seq 0."""
    applied = len(history)
    delta = draw(sts.deltas())
    if kind == "parse error":
        return kind, draw(sts.invalid_frames()), None, ValueError
    if kind == "gap":
        return kind, sts.frame(applied + draw(st.integers(1, 3)), delta), None, "Gap"
    if kind == "conflict":
        # An applied seq with other content; or, with nothing applied, seq 0
        # while the test sets the cursor to 0 with no ledger row (decision 6).
        seq = draw(st.integers(0, max(0, applied - 1)))
        if seq < applied and history[seq] == delta:
            delta = delta + 1 if delta < sts.DELTA_MAX else delta - 1
        return kind, sts.frame(seq, delta), None, "Conflict"
    error = draw(sts.fault_errors())

    def fault():
        raise error

    return kind, sts.frame(applied, delta), fault, error


@pytest.mark.parametrize("kind", ["parse error", "gap", "conflict", "fault"])
@given(history=st.lists(sts.deltas(), max_size=4), data=st.data())
def test_errors_propagate_with_no_ack_and_nothing_committed(impl, kind, history, data):
    _, line, fault, expected = data.draw(failing_lines(history, kind), label="failure")
    with temp_store_path() as path, opened(impl, path) as con:
        for seq, delta in enumerate(history):
            impl.apply_event(con, seq, delta)
        if kind == "conflict" and not history:
            prefill(path, 0, 0)
        before = read(path)
        note(f"before: {before}")
        returned = None
        try:
            returned = impl.consume_line(con, line, fault)
        except BaseException as error:  # faults include KeyboardInterrupt and friends
            raised = error
        else:
            raised = None
        assert returned is None, f"{returned!r} returned for a {kind}"
        if kind == "fault":
            assert raised is expected
        elif expected == ValueError:
            assert isinstance(raised, ValueError)
        else:
            assert isinstance(raised, getattr(impl, expected))
        assert not con.in_transaction
        assert read(path) == before
