"""Clause accuracy: does a known bug's report quote a sentence that bug breaks?

    python -m quality.accuracy                      # every known bug (2 at a time); a few minutes
    python -m quality.accuracy --only except-exception unbounded-close
    python -m quality.accuracy --json accuracy.json

For each known bug the suite runs as the meta-test runs it (quality/meta.py:
the bug's own step first, then the rest, dev, the meta seed), and its first
failure is read as ``resume check`` reads it (``verdict.from_outcome``). The
sentence the report quotes must be the sentence of a clause that
``quality/clauses.py`` says the bug breaks (several clauses share a
sentence: step 1's list of malformations, step 4's ranges). Prints one line per miss, then the accuracy. The meta-test
(quality/test_known_bugs.py) checks the same on its own run.
"""

import argparse
import json
import sys

from quality import bugs as known
from quality import clauses, meta
from resume.testing import check, spec, verdict


def part_of(nodeid):
    """The part of ``resume check`` a test belongs to: ``"3"``, ``"protocol"``, ``"deeper"``."""
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    for label, files in check.step_paths():
        if any(path.name == name for path in files):
            return check._key(label)
    return "deeper"


def report_of(result):
    """The learner's ``Verdict`` of one caught bug's run."""
    outcome = result.outcome
    part = part_of(outcome.failure.nodeid if outcome.failure else outcome.test or "")
    return verdict.from_outcome(part, part, outcome, "client.py", meta.SEED)


def misses(results):
    """``[(bug id, quoted clause, clauses the bug breaks, verdict)]`` for every caught bug quoted wrong."""
    found = []
    for result in results:
        if result.bug is None or not result.outcome.caught:
            continue
        report = report_of(result)
        breaks = clauses.BREAKS.get(result.bug.id, ())
        if not quotes_one_of(report.clause, breaks):
            found.append((result.bug.id, report.clause, breaks, report))
    return found


def quotes_one_of(clause, breaks):
    """Whether the sentence quoted for ``clause`` is the sentence of one of ``breaks``: the learner
    reads the sentence, and several clauses share one (step 1's list of malformations)."""
    return clause is not None and spec.sentence(clause) in {spec.sentence(c) for c in breaks}


def summary(results, wrong):
    caught = sum(1 for r in results if r.bug is not None and r.outcome.caught)
    lines = [f"  {bug}: quoted {clause}, breaks {', '.join(breaks)}  ({report.test.split('::')[-1]})"
             for bug, clause, breaks, report in wrong]
    lines.append(f"clause accuracy: {caught - len(wrong)}/{caught} caught bugs quote a clause they break")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m quality.accuracy", description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", metavar="BUG")
    parser.add_argument("--json", metavar="FILE", help="write every caught bug's quoted clause and report")
    args = parser.parse_args(argv)
    by_id = {bug.id: bug for bug in known.BUGS}
    selected = [by_id[name] for name in args.only] if args.only else None
    results = meta.run_all(selected, reference=False,
                           on_result=lambda r: print(f"  ran {r.bug.id}", file=sys.stderr, flush=True))
    wrong = misses(results)
    print(summary(results, wrong))
    if args.json:
        rows = []
        for result in results:
            if result.outcome.caught:
                report = report_of(result)
                rows.append({"bug": result.bug.id, "clause": report.clause,
                             "breaks": list(clauses.BREAKS.get(result.bug.id, ())), "test": report.test,
                             "call": report.call, "expected": report.expected, "got": report.got})
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
