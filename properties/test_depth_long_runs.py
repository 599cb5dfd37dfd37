"""Depth: hundreds of events on one store, and sessions of hundreds of lines, up to the error.

The plans of ``resume.testing.runs`` stand for long runs in a few steps (a
run of 200-700 new events, a resend or a conflicting resend far behind the
cursor, a gap, a malformed frame), so a window, cache, pruning rule or cap
that starts at the N-th event is reached, and a failure still shrinks to
the first failing N. Claims, checked against the one-cursor model:

* ``apply_event`` / ``consume_line``, line after line on ONE store: each
  result (True / False / ACK, Gap, Conflict, ValueError) is the model's, no
  transaction is left open, ``state`` follows the model after every line,
  and a connection of the test's own reads the model's checkpoint and ledger
  at the end;
* the instant of an error (``consume_session`` and ``run_client``, with or
  without a ``before_ack`` that raises at some line): the session ends on
  the FIRST refused line with that line's error (the very object, for the
  hook's), the lines after it are not acted on: the store holds the model
  up to that line (the hook's line included: it was committed), and the
  peer read the ACKs of exactly the lines before it, nothing more.
"""

import asyncio

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from resume.testing import peers, runs, store, tasks
from resume.testing.hygiene import each_example_clean
from resume.testing.tasks import RAISED, RETURNED

HOST = peers.HOST
TIMEOUT = 5.0  # nothing here should ever wait this long


class HookFailure(Exception):
    """Raised by the test's before_ack at one chosen line; must come out as this very object."""


@runs.shrink_fast()
@given(plan=runs.plans(), via=st.sampled_from(["apply_event", "consume_line"]))
def test_long_runs_on_one_store_follow_the_one_cursor_model(impl, plan, via):
    lines = runs.Cursor().lines(plan)
    if via == "apply_event":
        lines = [line for line in lines if line.outcome != "malformed"]
    model = runs.Cursor()
    runs.record_sizes(sum(line.outcome == "applied" for line in lines),
                      far_back=max((line.back for line in lines), default=0))
    with store.temp_store_path() as path, store.opened(impl, path) as con:
        for index, line in enumerate(lines):
            expected = runs.expected_call(line, via)
            if line.seq is not None:
                model.take(line.seq, line.delta)
            got = runs.call(impl, con, line, via)
            assert got == expected, f"line {index} ({line.frame!r}): {got}, expected {expected}"
            assert not con.in_transaction, f"a transaction left open after line {index}"
            assert impl.state(con) == (model.last, model.total), f"after line {index} ({line.frame!r})"
        note(f"{len(lines)} lines, cursor {model.last}, total {model.total}")
        assert store.read(path) == ((model.last, model.total), model.deltas)


@pytest.mark.asyncio
@runs.shrink_fast()
@given(plan=runs.plans(),
       entry=st.sampled_from(["consume_session", "run_client"]),
       hook_at=st.none() | st.integers(0, 10**4))
@each_example_clean
async def test_a_long_session_ends_at_the_instant_of_its_first_error(impl, plan, entry, hook_at):
    # Always a new event last: a receiver that went on past a refused line would apply it.
    lines = runs.Cursor().lines(plan + [("run", 1, 1)])
    accepted, failing = runs.until_first_error(lines)
    hook_error = HookFailure("before_ack refuses") if hook_at is not None and accepted else None
    if hook_error is not None:
        hook_at = min(hook_at, len(accepted) - 1)
        committed, acked = accepted[: hook_at + 1], accepted[:hook_at]
    else:
        committed, acked = accepted, accepted
    runs.record_sizes(sum(line.outcome == "applied" for line in lines), lines_in_session=len(lines))
    note(f"{len(lines)} lines; the first refused: "
         f"{'none' if failing is None else f'line {len(accepted)} {failing.frame!r} ({failing.outcome})'}; "
         f"before_ack raises at: {'never' if hook_error is None else f'line {hook_at}'}")
    model = runs.Cursor()
    for line in committed:
        model.take(line.seq, line.delta)
    with store.temp_store_path() as path:
        outcome, received, hooked = await _session(impl, path, entry, lines, hook_error, hook_at)
        kind, value = outcome
        if hook_error is not None:
            assert kind == RAISED and value is hook_error, f"the session ended with {kind} {value!r}"
        elif failing is not None:
            wanted = {"gap": impl.Gap, "conflict": impl.Conflict, "malformed": ValueError}[failing.outcome]
            assert kind == RAISED and isinstance(value, wanted), \
                f"line {len(accepted)} ({failing.outcome}) ended the session with {kind} {value!r}"
        else:
            assert (kind, value) == (RETURNED, (model.last, model.total))
        resume = b"RESUME -1\n" if entry == "run_client" else b""
        assert received == resume + b"".join(b"ACK %d\n" % line.seq for line in acked), \
            "the ACKs the peer read are not exactly those of the lines before the error"
        assert hooked == [line.seq for line in committed], "before_ack was not called once per committed line, in order"
        assert store.read(path) == ((model.last, model.total), model.deltas), \
            "the store does not hold exactly the lines up to the error"


async def _session(impl, path, entry, lines, hook_error, hook_at):
    hooked = []

    def before_ack(seq):
        hooked.append(seq)
        if hook_error is not None and len(hooked) == hook_at + 1:
            raise hook_error

    script = b"".join(line.frame for line in lines)
    async with peers.Peer(script) as peer:
        if entry == "run_client":
            outcome = await tasks.outcome_within(
                impl.run_client(HOST, peer.port, path, TIMEOUT, before_ack), 60)
        else:
            con = impl.open_store(path)
            try:
                reader, writer = await asyncio.open_connection(HOST, peer.port, limit=64)
                outcome = await tasks.outcome_within(
                    impl.consume_session(reader, writer, con, TIMEOUT, before_ack), 60)
            finally:
                con.close()
        await peer.all_ended(2.0)
        received = peer.connections[0].received if peer.connections else b""
    return outcome, received, hooked
