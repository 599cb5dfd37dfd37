"""Step 6, ``consume_session``: a timeout at either end of its valid range is valid; one step outside is not.

SPEC.md: "``timeout`` must be a positive, finite ``int`` or ``float``, not
``bool``" (decision 10: an int too large to become a float is invalid). At the
ends (``domains.TIMEOUT_ENDS``: the smallest positive float, the largest finite
float, the largest int that still becomes a float) a session is NOT refused:
with the largest it runs to EOF and returns the state; with the smallest it may
time out at its first wait, but never raises ValueError; either way the
connection is reclaimed. One step outside (``domains.TIMEOUTS_JUST_OUTSIDE``: 0.0,
-5e-324, inf, 2**1024) it raises ValueError and consumes nothing.

Over a real loopback socket with the real publisher, a fresh store each time;
async tests on pytest-asyncio, each example checked for leaks
(``resume.testing.hygiene``).
"""

import asyncio

import pytest
from hypothesis import given

from resume.publisher import Publisher
from resume.testing import domains, model, peers, store
from resume.testing.hygiene import each_example_clean
from resume.testing.tasks import model_outcome

WITHIN = 5.0  # no wait here should come near this; the machine is shared
LOG = [(0, 5), (1, -3)]
LINES = [model.frame(*event) for event in LOG]


async def _session(impl, con, timeout):
    async with Publisher(LOG) as publisher:
        reader, writer = await asyncio.open_connection(peers.HOST, publisher.port, limit=model.READER_LIMIT)
        writer.write(b"RESUME -1\n")
        await writer.drain()
        got = await model_outcome(impl, impl.consume_session(reader, writer, con, timeout), WITHIN)
        closed = writer.transport.is_closing()
        if not closed:  # leave nothing open for another test to trip over
            writer.transport.abort()
            await asyncio.sleep(0)
        return got, closed, [model.ack(seq) for seq in publisher.acks]


async def _run(impl, timeout):
    with store.temp_store_path() as path:
        con = impl.open_store(path)
        try:
            result = await _session(impl, con, timeout)
            con.execute("SELECT 1")  # still open
            return result, store.read(path)
        finally:
            con.close()


async def _predicted(timeout, committed=len(LINES), ending=None):
    """The model's session: the publisher's lines, or the first ``committed`` of them and then ``ending``."""
    expected = model.Store()
    return await expected.session(LINES[:committed], ending, timeout), expected.snapshot()


@pytest.mark.asyncio
@given(domains.timeout_ends())
@each_example_clean
async def test_a_timeout_at_either_end_of_the_valid_range_is_accepted(impl, case):
    label, timeout = case
    (got, closed, acks), stored = await _run(impl, timeout)
    what = f"consume_session(reader, writer, con, {timeout!r}) ({label})"
    # The smallest positive timeout may end the session at any of its waits.
    expected = [await _predicted(timeout)]
    if label == "timeout low":
        expected += [await _predicted(timeout, committed, "TimeoutError") for committed in range(len(LINES) + 1)]
    found = [session for session, snapshot in expected if got == session.outcome and stored == snapshot]
    if not found:
        model.expect(got, expected[0][0].outcome, what)
        assert stored == expected[0][1], f"{what}: the store"
    assert acks == found[0].acks, f"{what}: the ACKs"
    assert closed, "the connection was not reclaimed"


@pytest.mark.asyncio
@given(domains.timeout_ends(valid=False))
@each_example_clean
async def test_a_timeout_one_step_outside_the_valid_range_is_value_error(impl, case):
    label, timeout = case
    (got, closed, acks), stored = await _run(impl, timeout)
    predicted, snapshot = await _predicted(timeout)
    what = f"consume_session(reader, writer, con, {timeout!r}) ({label})"
    model.expect(got, predicted.outcome, what)
    assert closed and acks == predicted.acks and stored == snapshot, what
