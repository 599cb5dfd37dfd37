"""Running the code under test as an asyncio task, with a bound and a cancellation point.

A broken implementation may hang (a read with no timeout, a closing wait with
no bound); ``outcome_of`` turns that into an outcome a test compares with the
model's prediction instead of a suite that never ends.
"""

import asyncio
import time
import typing
import weakref

import pytest
from hypothesis import currently_in_test_context, reject

from resume.testing import model

# Where each task the suite cancelled was waiting when the cancellation was sent (``cancel``):
# a task that then returns dropped it there, and the report points at that line.
_CANCELLED_AT = weakref.WeakKeyDictionary()

# The most a call may overrun the time the model predicts for it
# (``Session.duration``): well under the 1 s fallback wait, so that a wait
# bounded by 1 s, or floored at a few tenths, where a valid timeout said less
# shows; still 60 times the worst overrun measured (5 ms over 381 step-6
# sessions under the ci profile with two busy loops on the 2 cores).
LATE = 0.3
# The share of a call's time spent waiting for a CPU past which a bound that ran out says nothing
# about the code under test: the test's own peer (on the same loop) was as late as the call.
STARVED = 0.5
# The least time a call that ran out of its bound must have been held to be void: as long as the
# suite's shortest bounds (0.03 s), which a peer that answers at once never needs.
HELD = 0.02


def starved():
    """Seconds this thread has spent runnable but not running (waiting on the CPU run queue), from
    the kernel's scheduler statistics (``/proc/thread-self/schedstat``); 0.0 where there are none."""
    try:
        with open("/proc/thread-self/schedstat") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class Took(typing.NamedTuple):
    """How long a call took: ``wall`` seconds; ``waiting`` of them runnable but waiting for a CPU,
    ``running`` of them running on one (this thread's CPU time: the call's code, the test's peer
    and any other task of the loop)."""

    wall: float
    waiting: float
    running: float

    def shorter_than(self, seconds):
        return self.wall < seconds  # waiting for a CPU only ever makes a call longer

    def longer_than(self, seconds):
        # Only the time the thread slept counts (in a wait: a bound ignored or too long), not the
        # time it ran: a slower machine, or another session of the same loop run meanwhile
        # (asyncio.gather), takes longer at the same code; at 3 times the CPU time a step 6
        # session of a correct file took 0.34 s where 0.33 s was its most.
        return self.wall - self.waiting - self.running > seconds

    def __str__(self):
        parts = [f"{self.running:.2f} s of it running"] if self.running >= 0.01 else []
        parts += [f"{self.waiting:.2f} s of it waiting for a CPU"] if self.waiting >= 0.01 else []
        return f"{self.wall:.2f} s" + (f" ({', '.join(parts)})" if parts else "")


class Stopwatch:
    """The time since it started; how much of it this thread spent waiting for a CPU, and running.

    A loaded machine (a check's lanes beside a test run, say) leaves a process runnable and
    not running for a tenth of a second or more (measured: 0.16 s, all of it on the run queue).
    A bounded wait ends at its deadline all the same; the call then ends as late as that wait
    for a CPU. ``took()`` keeps the three apart: a call is judged too short on its wall time, too
    long on the time it slept (its wall time less the other two).
    """

    def __init__(self):
        self._wall, self._starved, self._running = time.monotonic(), starved(), time.thread_time()

    def took(self):
        return Took(time.monotonic() - self._wall, starved() - self._starved, time.thread_time() - self._running)

    def judged(self, outcome):
        """``outcome``, unless a bound ran out in a call during which the test's peer, on this
        thread's loop, could not answer. That is: a TimeoutError after at least STARVED of the
        call's time, and HELD in all, was spent waiting for a CPU or running other code (the loop
        held by a garbage collection, another task; seen in the fuzz round: a 0.05 s read bound
        ran out before the peer's EOF, on the reference; a bound of 0 runs out at once, in less
        than HELD: that is the code under test's doing); or a call still running at the test's
        bound after at least STARVED of its time waiting for a CPU. The outcome then says nothing
        of the code under test: the example is void (``hypothesis.reject``); a test with no
        examples is skipped."""
        wall, waiting, running = self.took()
        held = waiting + running if isinstance(outcome, model.Raised) and outcome.kind == "TimeoutError" else waiting
        if isinstance(outcome, model.Raised) and outcome.kind in ("TimeoutError", "hung") \
                and held >= max(STARVED * wall, HELD):
            if currently_in_test_context():
                reject()
            pytest.skip(f"the machine kept this test from a CPU, or the test's own code held it, for "
                        f"{held:.2f} s of the call's {wall:.2f} s")
        return outcome


async def outcome_of(impl, task, seconds):
    """What ``task`` (running the code under test) did within ``seconds``, as a ``model`` outcome.

    A task that was cancelled is ``Raised("CancelledError")``; one still
    running at the bound is ``model.hung`` (no prediction is ever that),
    and is then cancelled and given one more second.
    """
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        where = suspended_at(task)
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "never retrieved" log at some random later moment
        return model.hung(seconds, where)
    if task.cancelled():
        return model.Raised("CancelledError")
    if task.exception() is not None:
        return model.Raised(model.kind_of_class(type(task.exception()), impl), task.exception())
    dropped = None
    if task in _CANCELLED_AT:  # cancelled, and it returned: the cancellation was dropped
        dropped = asyncio.CancelledError("dropped")
        dropped.suspended_at = _CANCELLED_AT[task]
    return model.Returned(task.result(), error=dropped)


def cancel(task):
    """``task.cancel()``, noting where the task was waiting (``suspended_at``): should it return
    all the same, its outcome carries that place (``outcome_of``) for the report."""
    where = suspended_at(task)
    accepted = task.cancel()
    if accepted:
        _CANCELLED_AT[task] = where
    return accepted


def suspended_at(task):
    """The frames a suspended task is waiting in, outermost first: ``[(module name, file, line)]``,
    down the chain of coroutines (and generators) each one awaits."""
    frames, awaited = [], task.get_coro()
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            break
        frames.append((frame.f_globals.get("__name__", ""), frame.f_code.co_filename, frame.f_lineno))
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return frames


async def model_outcome(impl, awaitable, seconds):
    """``outcome_of`` a new task awaiting ``awaitable``."""
    return await outcome_of(impl, asyncio.ensure_future(awaitable), seconds)


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
    return cancel(task)
