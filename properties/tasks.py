"""Running the code under test as an asyncio task, with a bound and a cancellation point.

A broken implementation may hang (a read with no timeout, a closing wait with
no bound); ``outcome_within`` turns that into a value a test can assert on
instead of a suite that never ends.
"""

import asyncio
import gc

HUNG = "hung"
RETURNED = "returned"
RAISED = "raised"
CANCELLED = "cancelled"


def run(coroutine):
    """``asyncio.run(coroutine)``, then collect garbage at once.

    Whatever a broken implementation left behind (an unclosed transport, a
    task whose error nobody retrieved, a coroutine never awaited) is then
    finalized here, inside the test that made it, not at some later moment
    in another test (where, on CPython 3.11, a finalizer running inside
    pytest's report can even crash it: "AST constructor recursion depth
    mismatch").
    """
    try:
        return asyncio.run(coroutine)
    finally:
        gc.collect()


async def outcome_within(awaitable, seconds):
    """Await ``awaitable`` as a task for at most ``seconds``; return ``(kind, value)``.

    ``kind`` is RETURNED (value: the result), RAISED (value: the exception
    object), CANCELLED (value: None) or HUNG (value: None; the task was then
    cancelled and given one more second).
    """
    task = asyncio.ensure_future(awaitable)
    return await outcome_of(task, seconds)


async def outcome_of(task, seconds):
    """Like ``outcome_within`` for a task that is already running."""
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "never retrieved" log at some random later moment
        return HUNG, None
    if task.cancelled():
        return CANCELLED, None
    if task.exception() is not None:
        return RAISED, task.exception()
    return RETURNED, task.result()


async def cancel_after(task, iterations):
    """Cancel ``task`` after ``iterations`` turns of the event loop (0: at once).

    Returns ``task.cancel()``: False if the task had already finished.
    """
    for _ in range(iterations):
        await asyncio.sleep(0)
    return task.cancel()
