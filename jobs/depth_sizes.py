"""The sizes the depth tests reach, per Hypothesis profile, and what they cost: printed as Markdown.

    python -m jobs.depth_sizes                    # dev and ci; a minute or two
    python -m jobs.depth_sizes --profiles dev --runs 3

For each profile it runs the depth tests (``DEPTH_TESTS``: long runs, stores
other writers made, two receivers) in a subprocess with
``--hypothesis-show-statistics`` and a fresh example database, ``--runs``
times with random seeds, and reports per test: its seconds (pytest's
``--durations``), and the share of examples that reached each size class
(the ``event()`` lines the tests record: events on one store >= 200, lines
in one session >= 200, resends >= 128 behind the cursor, two sessions interleaved,
a lock held past the busy timeout). "every run" means the size class was
reached in each of the ``--runs`` runs. It asserts nothing.
"""

import argparse
import collections
import re
import sys

from resume.testing.grading import runner

DEPTH_TESTS = [
    "properties/test_depth_long_runs.py",
    "properties/test_depth_foreign_stores.py",
    "stateful/test_two_receivers.py",
]
_TEST = re.compile(r"^(\S+::\S+):$")
_EVENT = re.compile(r"^\s+\* ([\d.]+)%, (.*)$")
_DURATION = re.compile(r"^([\d.]+)s call\s+(\S+)$")


def run_once(profile):
    """``({test: seconds}, {test: {event: percent}})`` of one run under ``profile``."""
    # A fresh example database each run (the runner's default).
    done = runner.run(["-q", "-p", "no:cacheprovider", "--durations=0", "--hypothesis-show-statistics",
                       *DEPTH_TESTS], profile=profile)
    seconds, events, test = {}, collections.defaultdict(dict), None
    for line in done.output.splitlines():
        if found := _TEST.match(line):
            test = found[1]
        elif (found := _EVENT.match(line)) and test and not found[2].startswith(("Retried", "gave up")):
            events[test][found[2]] = float(found[1])
        elif found := _DURATION.match(line.strip()):
            seconds[found[2]] = float(found[1])
    if done.returncode != 0:
        print(done.output[-3000:], file=sys.stderr)
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
