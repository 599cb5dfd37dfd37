"""The catch matrix: for each known bug, EVERY test of the contract suite that fails on it.

    python -m jobs.matrix --json docs/catch-matrix.jsonl   # every bug and the reference: under an hour
    python -m jobs.matrix --from docs/catch-matrix.jsonl   # the tables again, from a saved run

The one tool that asks which tests catch which bug. The meta-test stops at a
bug's first failure (``-x``); this runs the lab's whole suite on each known
bug (``meta.run_whole``: dev, the meta-test's seed, a fresh example database,
no shrinking: which tests fail does not depend on how small an example
shrinks, and shrinking is most of a failing test's time) and keeps every
failing test as ``suite.test_function``; and once on the reference, whose
run gives each test function's seconds. One JSON line per bug, and one for
the reference (``"bug": null``). The benchmark's table of what each test is
worth (``python -m jobs.bench --only yield``) is read from this file.

What it is for: a test whose every bug another test catches too is a
candidate to delete, and the file or test that is the only one to catch a
bug is not. It prints, per test function: the bugs it alone catches, the
bugs it catches; then a smallest set of tests that catches every bug
(greedy), and the tests left out of it.
"""

import argparse
import collections
import concurrent.futures
import json
import pathlib
import tempfile

from quality import bugs as known
from quality import meta
from resume.testing import suite

NO_SHRINK = ("-p", "jobs.yield_plugin")


def measure(out, selected=None):
    """Run the reference and every known bug through the whole suite; one JSON line each into ``out``."""
    selected = list(selected or known.BUGS)
    with tempfile.TemporaryDirectory(prefix="resume-matrix-") as folder:
        paths = meta.write_bugs(folder, selected)

        def one(bug):
            run = meta.run_whole(meta.REFERENCE if bug is None else paths[bug.id], timeout=240, args=NO_SHRINK)
            seconds = collections.Counter()
            for test in run.tests:
                seconds[suite.test_function(test.nodeid)] += test.duration or 0.0
            return {"bug": bug and bug.id, "returncode": run.returncode, "timed_out": run.timed_out,
                    "failures": sorted({suite.test_function(test.nodeid) for test in run.failures}),
                    "seconds": {test: round(s, 3) for test, s in sorted(seconds.items())}}

        with open(out, "w") as file, concurrent.futures.ThreadPoolExecutor(meta.jobs()) as pool:
            for row in pool.map(one, [None, *selected]):
                file.write(json.dumps(row) + "\n")
                file.flush()
                print(row["bug"] or "the reference", len(row["failures"]), flush=True)


def read(path):
    """``(reference, {bug: set of tests that fail})`` from a saved matrix."""
    rows = [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]
    reference = next((row for row in rows if row["bug"] is None), None)
    return reference, {row["bug"]: set(row["failures"]) for row in rows if row["bug"] is not None}


def worth(reference, caught):
    """Per test function: ``(test, seconds on the reference, bugs it catches, bugs it alone catches)``,
    the most catching first."""
    seconds = reference["seconds"] if reference else {}
    by_test, alone = collections.defaultdict(set), collections.defaultdict(set)
    for bug, tests in caught.items():
        for test in tests:
            by_test[test].add(bug)
        if len(tests) == 1:
            alone[next(iter(tests))].add(bug)
    return [(test, seconds.get(test, 0.0), by_test[test], alone[test])
            for test in sorted(set(seconds) | set(by_test), key=lambda t: (-len(by_test[t]), t))]


def tables(reference, caught):
    rows = worth(reference, caught)
    print(f"{len(caught)} bugs; caught by no test: {sorted(b for b, t in caught.items() if not t) or 'none'}")
    print("alone  caught  test")
    for test, _, bugs, only in sorted(rows, key=lambda row: (len(row[3]), len(row[2]))):
        print(f"{len(only):5d}  {len(bugs):6d}  {test}")
    by_test = {test: bugs for test, _, bugs, _ in rows if bugs}
    uncovered, cover = {b for b, t in caught.items() if t}, []
    while uncovered:
        best = max(by_test, key=lambda t: len(by_test[t] & uncovered))
        cover.append(best)
        uncovered -= by_test[best]
    print(f"\n{len(cover)} of {len(by_test)} tests catch every bug; left out of that set:")
    for test in sorted(set(by_test) - set(cover)):
        print(f"  {test}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="run every bug and write the matrix here (JSON lines)")
    parser.add_argument("--from", dest="source", help="read a saved matrix instead of running")
    parser.add_argument("--only", nargs="+", metavar="BUG", help="with --json: these bugs only")
    args = parser.parse_args()
    source = args.source or args.json
    if not source:
        parser.error("give --json FILE (run) or --from FILE (read)")
    if args.json:
        by_id = {bug.id: bug for bug in known.BUGS}
        measure(args.json, [by_id[bug] for bug in args.only] if args.only else None)
    tables(*read(source))


if __name__ == "__main__":
    main()
