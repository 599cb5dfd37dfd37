"""Step 6, ``consume_session``: a bound that the mutation run of quality/ showed untested.

Claim: with an invalid timeout, the closing wait is bounded by ONE second,
not by nothing: a ``wait_closed()`` that takes a few tenths of a second is
waited for, and no ``abort()`` follows; then ValueError propagates.

Why: cosmic-ray's mutant ``CLOSE_TIMEOUT_FALLBACK = 0.0`` (give up on the
closing wait at once, then abort) survived the suite, which checks only that
a closing wait that hangs ends within about a second.
"""

import asyncio

import pytest

from resume.testing import peers, store, tasks

SLOW_CLOSE = 0.3  # seconds: well inside the one-second bound, even on a busy machine


# A few of properties/timeouts.py's kinds: each case costs SLOW_CLOSE seconds.
@pytest.mark.parametrize("timeout", [0, -1, float("nan"), True, None], ids=repr)
def test_with_an_invalid_timeout_a_slow_but_timely_closing_wait_is_awaited_not_aborted(impl, timeout):
    async def scenario(con):
        async with peers.Peer(b"", eof=False) as peer:
            reader, writer = await asyncio.open_connection(peers.HOST, peer.port, limit=64)
            # FAKE closing wait (peers.CloseFault): slow, but well within one second.
            fake = peers.CloseFault(writer, SLOW_CLOSE)
            try:
                async with asyncio.timeout(1.0 + SLOW_CLOSE + 2.0):
                    await impl.consume_session(reader, fake, con, timeout)
            except ValueError:
                raised = True
            else:
                raised = False
            finally:
                if not writer.transport.is_closing():
                    writer.transport.abort()
                await asyncio.sleep(0)
            return raised, fake.transport.aborts

    with store.temp_store_path() as path:
        con = impl.open_store(path)
        try:
            raised, aborts = tasks.run(scenario(con))
        finally:
            con.close()
    assert raised, "an invalid timeout must raise ValueError"
    assert aborts == 0, f"a closing wait of {SLOW_CLOSE} s was aborted: it is bounded by one second"
