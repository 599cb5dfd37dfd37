"""The catch matrix: for each known bug, EVERY test of the contract suite that fails on it.

    python -m quality.matrix --json docs/catch-matrix.jsonl   # every bug, the whole suite: about an hour
    python -m quality.matrix --from docs/catch-matrix.jsonl   # the tables again, from a saved run

The meta-test stops at a bug's first failure (``-x``); this runs the whole
suite on each (``meta.run_whole``: dev, the meta seed, a fresh example
database) and keeps every failing test (as ``file::function``). What it is for: a test whose every
bug another test catches too is a candidate to delete, and the file or test
that is the only one to catch a bug is not. It prints, per test function
(a first look counted with its test, parameters merged): the bugs it alone
catches, the bugs it catches; then a smallest set of tests that catches
every bug (greedy), and the tests left out of it.
"""

import argparse
import collections
import concurrent.futures
import json
import pathlib
import re
import tempfile

from quality import bugs as known
from quality import meta


def test_of(nodeid):
    """``file::function``: parameters dropped, a first look counted with its test."""
    return re.sub(r"\[.*\]$", "", nodeid).replace("_first_look", "")


def measure(out):
    """Run every known bug through the whole suite; one JSON line per bug into ``out``."""
    with tempfile.TemporaryDirectory(prefix="resume-matrix-") as folder:
        paths = meta.write_bugs(folder)

        def one(bug):
            run = meta.run_whole(paths[bug.id], timeout=240)
            return {"bug": bug.id, "returncode": run.returncode, "timed_out": run.timed_out,
                    "failures": sorted({test_of(test.nodeid) for test in run.failures})}

        with open(out, "w") as file, concurrent.futures.ThreadPoolExecutor(meta.jobs()) as pool:
            for row in pool.map(one, known.BUGS):
                file.write(json.dumps(row) + "\n")
                file.flush()
                print(row["bug"], len(row["failures"]), flush=True)


def tables(rows):
    caught = {row["bug"]: {test_of(t) for t in row["failures"]} for row in rows}
    by_test, alone = collections.defaultdict(set), collections.defaultdict(set)
    for bug, tests in caught.items():
        for test in tests:
            by_test[test].add(bug)
        if len(tests) == 1:
            alone[next(iter(tests))].add(bug)
    print(f"{len(caught)} bugs; caught by no test: {sorted(b for b, t in caught.items() if not t) or 'none'}")
    print("alone  caught  test")
    for test in sorted(by_test, key=lambda t: (len(alone[t]), len(by_test[t]))):
        print(f"{len(alone[test]):5d}  {len(by_test[test]):6d}  {test}")
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
    args = parser.parse_args()
    source = args.source or args.json
    if not source:
        parser.error("give --json FILE (run) or --from FILE (read)")
    if args.json:
        measure(args.json)
    tables([json.loads(line) for line in pathlib.Path(source).read_text().splitlines()])


if __name__ == "__main__":
    main()
