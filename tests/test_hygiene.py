"""The per-example hygiene of async property tests (``resume.testing.drivers.hygiene``).

An example that leaves a task running or a descriptor open must fail, and
name what it left; a clean one must pass; a failing one keeps its own error.
"""

import asyncio
import socket

import pytest

from resume.testing.drivers import hygiene
from resume.testing.drivers.hygiene import DescriptorsLeftOpen, TasksLeftRunning, each_example_clean


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    """A leak is waited out for SETTLE_WITHIN before it fails: shorter here, where every leak is on purpose."""
    monkeypatch.setattr(hygiene, "SETTLE_WITHIN", 0.2)


class Boom(Exception):
    pass


@pytest.mark.asyncio
async def test_a_clean_example_passes_even_with_a_close_still_under_way():
    @each_example_clean("consume_session")
    async def example():
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname())
        writer.close()  # its socket goes a turn of the loop later
        server.close()
        await server.wait_closed()

    await example()


@pytest.mark.asyncio
@pytest.mark.parametrize("body_fails", [False, True], ids=["body passes", "body fails"])
async def test_a_task_left_running_is_cancelled_and_fails_the_example(body_fails):
    """A leak fails a passing example; a failing one keeps its own error, the leak added as a note."""
    left = []

    @each_example_clean("consume_session")
    async def example():
        left.append(asyncio.create_task(asyncio.sleep(60)))
        if body_fails:
            raise Boom()

    with pytest.raises(Boom if body_fails else TasksLeftRunning, match=None if body_fails else "sleep") as caught:
        await example()
    assert left[0].cancelled()
    if body_fails:
        assert any("task(s)" in note for note in caught.value.__notes__)


@pytest.mark.asyncio
async def test_a_descriptor_left_open_fails_the_example():
    left = []

    @each_example_clean("consume_session")
    async def example():
        left.append(socket.socket())

    try:
        with pytest.raises(DescriptorsLeftOpen, match="socket"):
            await example()
    finally:
        left[0].close()
