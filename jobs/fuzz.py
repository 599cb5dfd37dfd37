"""The bounded fuzz job: the suite under the ``fuzz`` profile until a time budget is spent.

    python -m jobs.fuzz --budget 600 --workers 2            # nightly CI
    python -m jobs.fuzz --budget 60 -- --impl=path/to/client.py stateful

How it stops by itself: Hypothesis has no time limit, only ``max_examples``,
and one ``fuzz``-profile pass over the suite (2000 examples a test, 60 steps a
machine run, real processes) takes far longer than a nightly slot. So the job
runs the suite in ROUNDS. Each round is one ``pytest`` process under
``HYPOTHESIS_PROFILE=fuzz`` with every test capped at the same number of
examples (``fuzz_round_plugin.py``); the first round is small and measures
the machine, each next round's cap is scaled from the last round's time to
fit what is left of the budget (at most x4 a round; the round plugin never
lets a test pass the profile's own ``max_examples``), and the job stops when
not even a small round fits.
Rounds are randomized afresh and share the example database (the local one,
and the Redis one if ``HYPOTHESIS_DATABASE`` is set), so what one round finds
replays first in the next. A test that failed is deselected from later
rounds, so the budget goes to the others. As a last guard, a round still
running when the budget is spent gets SIGINT (pytest then stops and prints
its summary) and, if it has not stopped a few seconds later, SIGKILL.

It prints each round's pytest output with ``--hypothesis-show-statistics``
(what was explored: test cases per phase, the ``event()`` mix), then a
summary over all rounds. Exit status: 0 if nothing failed, 1 if a test
failed, pytest's own code (2-5) if a round could not run.

Arguments after ``--`` go to pytest (test paths, ``--impl=PATH``, ``-k``...);
without a test path the job fuzzes ``properties/`` and ``stateful/`` (give
options their value with ``=``, or it is taken for a path).

A failure prints Hypothesis's shrunk counterexample in its round's output
(the ``fuzz`` profile has ``print_blob``), and the summary repeats each
``@reproduce_failure(...)`` blob found. ``--observe`` turns on Hypothesis's
observability output for the rounds and adds what they explored to the
summary (``jobs/explored.py``: per test, each rule, malformation class and
fault kind drawn, and those never reached); ``--summary FILE`` also writes
the summary to FILE.
"""

import argparse
import os
import pathlib
import re
import signal
import sys
import time

from jobs import explored, hypothesis_stats
from resume.testing.grading import runner

JOBS = pathlib.Path(__file__).resolve().parent
PROJECT_ROOT = JOBS.parent
FIRST_CAP = 10  # examples a test in the first, measuring round
MIN_CAP = 5  # a round smaller than this is not worth starting
GROWTH = 4  # a round's cap grows at most this much over the last one
STOP_GRACE = 10.0  # seconds between SIGINT and SIGKILL when a round overruns
SAFETY = 0.6  # plan a round to take this share of what is left (runs vary a lot)
# The contract's suite; tests/ checks this project's own tools, not the implementation.
SUITE = ["properties", "stateful"]
BLOB = re.compile(r"@reproduce_failure\([^)]*\)")  # print_blob's line, per failure


def run_round(cap, workers, pytest_args, deselected, hard_limit):
    """One pytest process; returns (exit code, its output, seconds it took, failed node ids).

    Through the project's runner, with the example database KEPT (the local
    one and the shared one: what one round finds replays first in the next),
    the output echoed as it comes, and, past ``hard_limit``, SIGINT to the
    round's whole process group (xdist workers and receivers included), then
    SIGKILL ``STOP_GRACE`` seconds later.
    """
    args = ["-p", "jobs.fuzz_round_plugin", "--hypothesis-show-statistics", "-q", "-rfE"]
    if workers > 1:
        args += ["-n", str(workers)]
    args += [f"--deselect={nodeid}" for nodeid in deselected]
    args += pytest_args
    done = runner.run(args, root=PROJECT_ROOT, profile="fuzz", keep_database=True,
                      storage=runner.KEEP, extra_env={"FUZZ_ROUND_MAX_EXAMPLES": str(cap)},
                      timeout=max(hard_limit, 1.0), stop_signal=signal.SIGINT,
                      grace=STOP_GRACE, echo=True)
    if done.timed_out:
        print("\n[fuzz] budget spent: the round was stopped (SIGINT, SIGKILL if it lingered)",
              flush=True)
    code = 2 if done.returncode is None else done.returncode  # 2: pytest's "interrupted"
    return code, done.output, done.wall, {test.nodeid for test in done.failures}


def start_up_seconds(pytest_args):
    """How long pytest takes to start and collect the tests, without running one."""
    return runner.run(["--collect-only", "-q", *pytest_args], root=PROJECT_ROOT, profile="fuzz",
                      keep_database=True, storage=runner.KEEP).wall


def next_cap(cap, seconds, start_up, remaining):
    """The cap for a round planned to take SAFETY of ``remaining`` seconds.

    A round is taken to cost ``start_up`` plus a time proportional to its cap,
    measured on the last round. The start-up measured without xdist workers
    is a little short, which makes the per-example cost a little high: the
    error is on the safe side.
    """
    per_example = max(seconds - start_up, 0.1) / cap
    affordable = int((SAFETY * remaining - start_up) / per_example)
    return min(affordable, cap * GROWTH)


def summary(stats, rounds, spent, budget, failed, blobs=()):
    lines = ["", "=" * 78,
             f"[fuzz] {len(rounds)} rounds in {spent:.0f} s of a {budget:.0f} s budget; "
             f"examples a test per round: {', '.join(str(cap) for cap, _, _ in rounds)}",
             f"{'cases':>7} {'fail':>5}  test"]
    for nodeid in sorted(stats):
        test = stats[nodeid]
        lines.append(f"{test.total_cases:>7} {test.failing:>5}  {nodeid}")
        top = sorted(((event, count) for event, count in test.events.items()
                      if not event.startswith(explored.HYPOTHESIS_OWN_EVENTS)), key=lambda item: -item[1])
        if top:
            lines.append(" " * 15 + "events: " + "; ".join(f"{event[:50]} x{count}" for event, count in top[:5]))
    total = sum(test.total_cases for test in stats.values())
    lines.append(f"[fuzz] {total} test cases over {len(stats)} tests; "
                 + (f"FAILED: {', '.join(sorted(failed))}" if failed else "no failure found"))
    lines += [f"[fuzz] reproduce with: {blob}" for blob in blobs]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=600.0, help="seconds, all rounds together")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers (-n)")
    parser.add_argument("--observe", action="store_true",
                        help="keep Hypothesis's observability output and summarise what was explored")
    parser.add_argument("--summary", metavar="FILE", help="also write the summary to FILE")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    options = parser.parse_args(argv)
    if not any(not arg.startswith("-") for arg in options.pytest_args):
        # No test path given (an option's value goes with `=`: --impl=PATH): the contract's suite.
        options.pytest_args += SUITE
    # `timeout` and CI runners stop a job with SIGTERM: unwind like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    if options.observe:
        # One JSON line per test case under <storage>/observed/; no line
        # coverage (it slows Python 3.11 down several times).
        os.environ.setdefault("HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY", "1")
        os.environ.setdefault("HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY_NOCOVER", "1")
    observed_since = time.time()
    started = time.monotonic()
    deadline = started + options.budget
    cap = FIRST_CAP
    start_up = start_up_seconds(options.pytest_args)
    stats, rounds, failed, blobs = {}, [], set(), []
    while True:
        remaining = deadline - time.monotonic()
        print(f"\n[fuzz] round {len(rounds) + 1}: {cap} examples a test, {remaining:.0f} s left",
              flush=True)
        code, output, seconds, round_failed = run_round(cap, options.workers, options.pytest_args,
                                                        sorted(failed), remaining - STOP_GRACE)
        rounds.append((cap, code, seconds))
        round_stats = hypothesis_stats.parse(output)
        hypothesis_stats.merge(stats, round_stats)
        failed |= round_failed
        blobs += [blob for blob in dict.fromkeys(BLOB.findall(output)) if blob not in blobs]
        stopped_by_budget = time.monotonic() >= deadline - STOP_GRACE
        if code not in (0, 1) and not stopped_by_budget:
            print(f"[fuzz] pytest could not run a round (exit {code}): stopping", flush=True)
            return code
        if stopped_by_budget:
            break
        cap = next_cap(cap, seconds, start_up, deadline - time.monotonic())
        if cap < MIN_CAP:
            break
    text = summary(stats, rounds, time.monotonic() - started, options.budget, failed, blobs)
    if options.observe:
        storage = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or str(PROJECT_ROOT / ".hypothesis")
        files = explored.observation_files(storage)
        text += "\n" + explored.summary(explored.read(files, since=observed_since))
        text += f"\n[fuzz] observations (open with Tyche, or read as JSON lines): {', '.join(files)}"
    print(text, flush=True)
    if options.summary:
        pathlib.Path(options.summary).write_text(text + "\n")
    return 1 if failed or any(code == 1 for _, code, _ in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
