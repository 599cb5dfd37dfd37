"""The sizes the depth tests reach, per Hypothesis profile, and what they cost: printed as Markdown.

    python -m jobs.depth_sizes                    # dev and ci; a minute or two
    python -m jobs.depth_sizes --profiles dev --runs 3

For each profile it runs the depth tests (``DEPTH_TESTS``: long runs, stores
other writers made, two receivers), each file in a subprocess with
Hypothesis's observability on and a fresh example database, ``--runs``
times with random seeds, and reports per test: its seconds (pytest's
``--durations``), and the share of test cases that reached each size class
(the ``event()``s the tests record: events on one store >= 200, lines
in one session >= 200, resends >= 128 behind the cursor, two sessions interleaved,
a lock held past the busy timeout). "every run" means the size class was
reached in each of the ``--runs`` runs. It asserts nothing.
"""

import argparse
import collections
import json
import pathlib
import re
import sys
import tempfile

from resume.testing.grading import runner

DEPTH_TESTS = [
    "properties/test_depth_long_runs.py",
    "properties/test_depth_foreign_stores.py",
    "stateful/test_two_receivers.py",
]
_DURATION = re.compile(r"^([\d.]+)s call\s+(\S+)$")
# Each test case, its events among its "features" (no coverage: it would slow every test down).
OBSERVE = {"HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY": "1", "HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY_NOCOVER": "1"}
MACHINE = "run_state_machine"  # the property of a state machine run inside a test function (else: the node id)


def run_once(profile):
    """``({test: seconds}, {test: {event: percent}})`` of one run under ``profile``.

    The events come from Hypothesis's observability (one record per test case), not from
    ``--hypothesis-show-statistics``, which prints nothing for a state machine run inside a test
    function (``run_state_machine_as_test``, as the two-receivers machine is, to get ``impl``).
    Each file runs on its own, so that a machine's test cases belong to the one test of its file.
    """
    seconds, events = {}, {}
    for path in DEPTH_TESTS:
        # A fresh example database each run, in a folder read afterwards.
        with tempfile.TemporaryDirectory(prefix="resume-depth-") as storage:
            done = runner.run(["-q", "-p", "no:cacheprovider", "--durations=0", path], profile=profile,
                              storage=storage, extra_env=OBSERVE)
            if done.returncode != 0:
                print(done.output[-3000:], file=sys.stderr)
            ran = {found[2]: float(found[1]) for line in done.output.splitlines()
                   if (found := _DURATION.match(line.strip()))}
            seconds.update(ran)
            cases = collections.defaultdict(list)
            for log in pathlib.Path(storage, "observed").glob("*_testcases.jsonl"):
                for line in log.read_text().splitlines():
                    case = json.loads(line)
                    if case["status"] != "gave_up":
                        cases[case["property"]].append(case["features"])
        for test in ran:
            found = cases.get(test) or (cases.get(MACHINE) if len(ran) == 1 else None) or []
            counts = collections.Counter(key for features in found for key in features
                                         if not key.startswith(("Retried", "invalid", "gave up")))
            events[test] = {key: 100 * n / len(found) for key, n in counts.items()}
    return seconds, events


def report(profile, runs):
    results = [run_once(profile) for _ in range(runs)]
    lines = [f"### `{profile}` ({runs} run{'s' if runs > 1 else ''}, random seeds)", "",
             "| test | seconds (each run) | size class: share of examples (each run) |", "| --- | --- | --- |"]
    tests = sorted({t for seconds, _ in results for t in seconds})
    for test in tests:
        secs = " / ".join(f"{seconds.get(test, 0):.1f}" for seconds, _ in results)
        names = sorted({e for _, events in results for e in events.get(test, {})})
        cells = []
        for name in names:
            shares = [events.get(test, {}).get(name, 0.0) for _, events in results]
            every = " (every run)" if all(shares) else ""
            cells.append(f"{name}: {' / '.join(f'{s:.0f}%' for s in shares)}{every}")
        lines.append(f"| `{test.split('/')[-1]}` | {secs} | {'<br>'.join(cells)} |")
    total = [sum(seconds.values()) for seconds, _ in results]
    lines += ["", f"Total: {' / '.join(f'{t:.1f}' for t in total)} s.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="dev,ci")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    for profile in args.profiles.split(","):
        print(report(profile, args.runs), flush=True)


if __name__ == "__main__":
    main()
