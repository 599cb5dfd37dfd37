"""Per-example hygiene for async property tests run by pytest-asyncio: ``@each_example_clean``.

pytest-asyncio runs every example of one ``@given`` test on ONE event loop,
so whatever an example leaves behind would live on into the next one, and a
leak would be blamed on a later example, or on none. This decorator makes the
cleanliness of each example part of its verdict:

    @pytest.mark.asyncio
    @given(...)
    @each_example_clean("consume_session")
    async def test_something(impl, ...):
        ...

After the example's body it checks, once closes under way have had their
turns of the loop (``_left_behind``):

* no task started by the example is still pending (they are cancelled);
* no file descriptor opened by the example is still open: an unclosed
  transport (its socket), store connection (its file) or anything else.

The example that leaked FAILS, naming what it left (TasksLeftRunning /
DescriptorsLeftOpen) and the clause of SPEC.md that the call it makes
(``consume_session`` or ``run_client``) breaks so (``model.leak_clause``). If its body failed already, that failure is kept and
the leak is added to it as a note. Either way the garbage is collected at once, so that
what a broken implementation left is finalized inside the example that made
it, not at some later moment in another test (where, on CPython 3.11, a
finalizer running inside pytest's report can even crash it).
"""

import asyncio
import functools
import gc

from resume.testing.drivers import leaks
from resume.testing import model

SETTLE_WITHIN = 1.0  # seconds for closes already under way to finish


class TasksLeftRunning(AssertionError):
    """An example (or a state machine run) ended with tasks of its own still pending."""

    clause = None  # the clause of SPEC.md this breaks, where the call is known


class DescriptorsLeftOpen(AssertionError):
    """An example ended with file descriptors of its own still open."""

    clause = None


def each_example_clean(call):
    """Wrap an ``async def`` test of ``call`` (``"consume_session"``, ``"run_client"``) so that each
    example fails if it leaks a task or a descriptor."""

    def decorate(test):
        @functools.wraps(test)
        async def checked(*args, **kwargs):
            tasks_before = asyncio.all_tasks()
            fds_before = leaks.open_descriptors()
            try:
                await test(*args, **kwargs)
            except BaseException as error:
                problem = await _left_behind(tasks_before, fds_before)
                if problem is not None:
                    error.add_note(f"The failing example also left behind: {problem}")
                raise
            problem = await _left_behind(tasks_before, fds_before)
            if problem is not None:
                problem.clause = model.leak_clause(call, getattr(problem, "targets", None))
                problem.call = example_call(call, kwargs)
                raise problem

        return checked

    return decorate


def _what_is_open(target):
    """A descriptor's target in a learner's words: ``a socket``, ``the file store.db-wal``."""
    if target.startswith("socket:["):
        return "a socket"
    if target.startswith("/"):
        return f"the file {target.rsplit('/', 1)[-1].removesuffix(' (deleted)')}"
    return target


def example_call(call, drawn):
    """The call whose example left something behind, with its step and what the example drew:
    ``run_client (step 7), in the example where log=[(0, 5)], ending='eof'`` (a report of a leak
    named neither before)."""
    step = next(number for number, names in model.PUBLIC_NAMES.items() if call in names)
    values = [f"{name}={value!r}" for name, value in drawn.items() if name != "impl"]
    return f"{call} (step {step}), in the example" + (f" where {', '.join(values)}" if values else "")


async def cancel_left_running(tasks, whose):
    """Cancel ``tasks`` (pending ones), wait for them a little; return TasksLeftRunning naming them, or None."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return None
    await asyncio.wait(tasks, timeout=SETTLE_WITHIN)
    names = ", ".join(sorted(repr(task.get_coro()) for task in tasks))
    return TasksLeftRunning(f"{len(tasks)} task(s) of {whose} still running at its end: {names}")


async def _left_behind(tasks_before, fds_before):
    """Let closes under way finish, clean up what is left, and return the error for it (or None).

    A socket or a file that the example's calls closed, or scheduled to close
    (an ``abort()``), is closed within ``leaks.CLOSE_TURNS`` turns of the loop,
    and no wait changes that: one still open then is decided at once (a bound
    waited out would cost every shrinking step of a leaking bug). A task, a
    pipe or anything else may still be finishing (a process exiting): for
    those, up to SETTLE_WITHIN seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_WITHIN
    me = asyncio.current_task()
    turns = 0
    while True:
        tasks = [t for t in asyncio.all_tasks() if t not in tasks_before and t is not me and not t.done()]
        fds = leaks.open_descriptors() - fds_before
        if not tasks and not fds:
            break
        decided = not tasks and all(target.startswith(("socket:[", "/")) for _, target in fds)
        if (decided and turns >= leaks.CLOSE_TURNS) or loop.time() > deadline:
            break
        turns += 1
        await asyncio.sleep(0 if turns <= leaks.CLOSE_TURNS else 0.005)
    left_running = await cancel_left_running(tasks, "this example")
    if fds:
        gc.collect()  # finalize here what a broken implementation dropped without closing
    if left_running is not None:
        return left_running
    if fds:
        names = ", ".join(_what_is_open(target) for _, target in sorted(fds))
        left = DescriptorsLeftOpen(f"still open when the example ended: {names}")
        left.targets = [target for _, target in fds]
        return left
    return None
