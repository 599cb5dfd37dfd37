"""``tasks.Stopwatch``: the time a call took; the time the test waited for a CPU, and ran, kept apart.

Real contention: two busy processes pinned to the CPU this thread is pinned to, so that the
thread, busy too, gets a third of it and waits on the run queue for the rest.
"""

import os
import subprocess
import sys
import time

import pytest

from resume.testing import model
from resume.testing.drivers import tasks

SPIN = 0.3  # seconds of the thread's own busy loop


@pytest.fixture
def crowded_cpu():
    """This thread and two busy processes on one CPU, for the test's length."""
    if not os.path.exists("/proc/thread-self/schedstat"):
        pytest.skip("this kernel keeps no scheduler statistics")
    mine = os.sched_getaffinity(0)
    cpu = min(mine)
    burners = [subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
               for _ in range(2)]
    try:
        time.sleep(0.05)  # both pinned and spinning
        os.sched_setaffinity(0, {cpu})
        yield
    finally:
        os.sched_setaffinity(0, mine)
        for burner in burners:
            burner.kill()
            burner.wait()


def spin(seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def run(seconds):
    """Run (not wait) for ``seconds`` of this thread's CPU time, however long another process
    keeps the CPU meanwhile."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_time_spent_waiting_for_a_cpu_is_counted_apart_and_voids_a_bound_that_ran_out(crowded_cpu):
    watch = tasks.Stopwatch()
    spin(SPIN)
    took = watch.took()
    assert took.wall >= SPIN and took.waiting >= tasks.STARVED * took.wall, took
    assert not took.shorter_than(SPIN)  # judged on its wall time: the wait for a CPU takes nothing off
    # judged too long on the time it slept: none here, all of it waiting for a CPU or running
    assert took.running > 0 and not took.longer_than(SPIN / 10)
    assert "waiting for a CPU" in str(took)
    returned = model.Returned(None)
    assert watch.judged(returned) is returned  # only a bound that ran out is void
    with pytest.raises(pytest.skip.Exception, match="kept this test from a CPU"):
        watch.judged(model.Raised("TimeoutError"))
    with pytest.raises(pytest.skip.Exception, match="kept this test from a CPU"):
        watch.judged(model.hung(SPIN, []))


def test_a_read_bound_that_ran_out_while_the_thread_ran_other_code_is_void(monkeypatch):
    """The peer is on the same loop: while other code holds it (a garbage collection), no EOF
    comes. A call still running at the test's bound, though, is judged: code that holds the loop
    that long may be the code under test's own. So is a bound that ran out sooner than HELD.

    FAKE: the call's times, on demand (a real spin's share of the wall time is the machine's: the
    README's run, three workers and their checks on two cores, gave it less than half)."""
    def judged(outcome, wall, running):
        watch = tasks.Stopwatch()
        monkeypatch.setattr(watch, "took", lambda: tasks.Took(wall=wall, waiting=0.0, running=running))
        try:
            return watch.judged(outcome)
        except pytest.skip.Exception:  # outside an example, a void call skips the test
            return "void"

    ran_out, hung = model.Raised("TimeoutError"), model.hung(0.4, [])
    assert judged(ran_out, 0.4, 0.3) == "void"
    assert judged(hung, 0.4, 0.3) is hung
    assert judged(ran_out, tasks.HELD / 2, tasks.HELD / 2) is ran_out


def test_a_bound_that_ran_out_with_a_cpu_at_hand_is_judged(monkeypatch):
    monkeypatch.setattr(tasks, "starved", lambda: 0.0)  # FAKE: no wait for a CPU, on demand
    watch = tasks.Stopwatch()
    time.sleep(0.01)
    ran_out = model.Raised("TimeoutError")
    assert watch.judged(ran_out) is ran_out and watch.took().waiting == 0.0


def test_a_call_is_judged_too_long_on_the_time_it_slept_not_the_time_it_ran():
    """A slower machine runs the same code longer, and so does another task of the same loop:
    neither is a wait the code under test let run too long. A wait is."""
    watch = tasks.Stopwatch()
    run(SPIN)
    ran = watch.took()
    assert ran.running >= SPIN and not ran.longer_than(SPIN / 4), ran
    assert "running" in str(ran)
    watch = tasks.Stopwatch()
    time.sleep(SPIN)
    slept = watch.took()
    assert slept.longer_than(SPIN * 0.9) and not slept.shorter_than(SPIN), slept
