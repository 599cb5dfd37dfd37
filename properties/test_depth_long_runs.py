"""Depth: sessions of hundreds of lines, up to the error.

The plans of ``resume.testing.strategies.runs`` stand for long runs in a few steps (a
run of 200-700 new events, a resend or a conflicting resend far behind the
cursor, a gap, a malformed frame), so a window, cache, pruning rule or cap
that starts at the N-th line is reached, and a failure still shrinks to
the first failing N. (Runs through ``apply_event`` and ``consume_line`` on
one store: ``test_depth_foreign_stores.py``.) The claim, checked against
the model (``model.Store``): at the instant of an error (``consume_session``
and ``run_client``, with or without a ``before_ack`` that raises at some
line) the session ends on the FIRST refused line with that line's error (the
very object, for the hook's), the lines after it are not acted on: the store
holds the model up to that line (the hook's line included: it was
committed), and the peer read the ACKs of exactly the lines before it,
nothing more.
"""

import asyncio

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from resume.testing import model
from resume.testing.drivers import peers, store_files, tasks
from resume.testing.strategies import runs
from resume.testing.drivers.hygiene import each_example_clean

HOST = peers.HOST
TIMEOUT = 5.0  # nothing here should ever wait this long


from resume.testing.drivers.errors import HookFailure  # noqa: E402 - the test's own, raised by its before_ack


@pytest.mark.asyncio
@given(plan=runs.plans(),
       entry=st.sampled_from(["consume_session", "run_client"]),
       hook_at=st.none() | st.integers(0, 5) | st.integers(0, 10**4))
@each_example_clean("consume_session")
async def test_a_long_session_ends_at_the_instant_of_its_first_error(impl, plan, entry, hook_at):
    # Always a new event last: a receiver that went on past a refused line would apply it.
    lines = runs.frames_of(plan + [("run", 1, 1)])
    hook_error = HookFailure("before_ack refuses")
    expected = model.Store()
    predicted = await expected.session([line.frame for line in lines], timeout=TIMEOUT,
                                       before_ack=_before_ack([], hook_error, hook_at))
    runs.record_sizes(expected.last + 1, lines_in_session=len(lines))
    note(f"{entry} of {len(lines)} lines: " + ", ".join(line.frame.decode("ascii", "backslashreplace").strip()
                                                      for line in lines[:6]) + (", ..." if len(lines) > 6 else "")
         + (f"; before_ack raises at its call number {hook_at + 1}" if hook_at is not None else "")
         + f"; expected of the client: {len(predicted.acks)} ACKs, then it {predicted.outcome}")
    with store_files.temp_store_path() as path:
        outcome, received, hooked = await _session(impl, path, entry, lines, hook_error, hook_at)
        model.expect(outcome, predicted.outcome, f"a session of {len(lines)} lines through {entry}")
        resume = model.resume_line(model.LAST_MIN) if entry == "run_client" else b""
        if received != resume + b"".join(predicted.acks):
            model.differs("what the server read from the client (the ACKs of the lines before the error)",
                          f"{len(predicted.acks)} ACKs: " + _acks(resume + b"".join(predicted.acks)),
                          f"{received.count(b'ACK ')} ACKs: " + _acks(received),
                          predicted.sent_clause([received] if received else []))
        if hooked != predicted.calls:
            model.differs("the calls of before_ack (once per committed line, in order)",
                          f"before_ack for seqs {predicted.calls}", f"before_ack for seqs {hooked}",
                          model.OBSERVED["before_ack calls"])
        store_files.expect(path, expected, "the store after the session (the lines up to the error, no more)")


def _before_ack(hooked, hook_error, hook_at):
    def before_ack(seq):
        hooked.append(seq)
        if hook_at is not None and len(hooked) == hook_at + 1:
            raise hook_error
    return before_ack


async def _session(impl, path, entry, lines, hook_error, hook_at):
    hooked = []
    before_ack = _before_ack(hooked, hook_error, hook_at)
    script = b"".join(line.frame for line in lines)
    async with peers.Peer(script) as peer:
        if entry == "run_client":
            outcome = await tasks.model_outcome(impl, impl.run_client(HOST, peer.port, path, TIMEOUT, before_ack), 60)
        else:
            con = impl.open_store(path)
            try:
                reader, writer = await asyncio.open_connection(HOST, peer.port, limit=model.READER_LIMIT)
                outcome = await tasks.model_outcome(impl, impl.consume_session(reader, writer, con, TIMEOUT, before_ack), 60)
            finally:
                con.close()
        await peer.all_ended(2.0)
        received = peer.connections[0].received if peer.connections else b""
    return outcome, received, hooked


def _acks(data):
    """ACK lines in a few words: ``ACK 0, ACK 1, ..., ACK 200``."""
    lines = data.decode("ascii", "backslashreplace").split("\n")
    lines = [line for line in lines if line]
    shown = lines if len(lines) <= 6 else lines[:3] + ["..."] + lines[-2:]
    return ", ".join(shown) or "nothing"
