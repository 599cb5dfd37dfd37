"""Running the code under test as an asyncio task, with a bound and a cancellation point.

A broken implementation may hang (a read with no timeout, a closing wait with
no bound); ``outcome_within`` turns that into a value a test can assert on
instead of a suite that never ends.
"""

import asyncio

from resume.testing import model

HUNG = "hung"
RETURNED = "returned"
RAISED = "raised"
CANCELLED = "cancelled"


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


async def until(condition, task, seconds):
    """Wait until ``condition()`` is true or ``task`` is done, for at most ``seconds``.

    Returns ``condition()``. Never raises, so a test that then asserts on the
    task's outcome always gets to retrieve it (an unretrieved task error is
    logged at some random later moment).
    """
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition() and not task.done() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.001)
    return condition()


async def cancel_after(task, iterations):
    """Cancel ``task`` after ``iterations`` turns of the event loop (0: at once).

    Returns ``task.cancel()``: False if the task had already finished.
    """
    for _ in range(iterations):
        await asyncio.sleep(0)
    return task.cancel()


async def model_outcome(impl, awaitable, seconds):
    """``outcome_within`` as a ``model`` outcome, to compare with a prediction.

    A hang is ``Raised("hung")`` (no prediction is ever that); a task that
    was cancelled is ``Raised("CancelledError")``.
    """
    kind, value = await outcome_within(awaitable, seconds)
    if kind == RETURNED:
        return model.Returned(value)
    if kind == RAISED:
        return model.Raised(model.kind_of_class(type(value), impl), value)
    return model.Raised("CancelledError" if kind == CANCELLED else f"hung (still running after {seconds} s)")


def describe(outcome):
    """A task's ``(kind, value)`` in plain words: ``raises ValueError: ...``, ``returns (0, 5)``, ``hung``."""
    kind, value = outcome
    if kind == HUNG:
        return "it was still running at the bound (it hung)"
    if kind == CANCELLED:
        return "it was cancelled"
    if kind == RAISED:
        return f"raises {type(value).__name__}" + (f": {value}" if str(value) else "")
    return f"returns {value!r}"


def expect_raised(outcome, error_class, what):
    """Fail with a plain ``model.Mismatch`` unless the task's ``outcome`` raised ``error_class``."""
    kind, value = outcome
    if not (kind == RAISED and isinstance(value, error_class)):
        names = error_class if isinstance(error_class, tuple) else (error_class,)
        model.differs(what, "raises " + " or ".join(cls.__name__ for cls in names), describe(outcome))
