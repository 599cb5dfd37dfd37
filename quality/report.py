"""The known-bug report: one row per bug, then the totals.

    python -m quality.report                 # every bug (a core each and one more); a few minutes
    python -m quality.report --only reinit-cursor resume-minus-one
    python -m quality.report --json results.json
    python -m quality.report --paths stateful --only reinit-cursor   # the state machines alone

Columns: the step the bug breaks, the bug, the test that caught it, the
seconds to the first failure (from the run's fork, see quality/meta.py),
the seconds of the catching test alone, and the size of the shrunk
counterexample: rule steps for a state machine, characters of the arguments
for a property ("-" for a plain test with a fixed scenario).
Exit status 1 if the reference fails or any bug is not caught.
"""

import argparse
import json
import statistics
import sys

from quality import bugs as known
from quality import meta
from resume.testing.grading import check


def _size(outcome):
    return "-" if outcome.size is None else f"{outcome.size} {outcome.unit}"


def _row(result):
    outcome = result.outcome
    bug = result.bug
    step = str(bug.step) if bug else "-"
    name = bug.id if bug else "(reference client.py)"
    if bug is None:
        caught = "passes" if outcome.status == "passed" else f"FAILS: {outcome.test or outcome.status}"
        return [step, name, caught, f"{outcome.wall:.1f}", "", ""]
    if not outcome.caught:
        return [step, name, f"NOT CAUGHT ({outcome.status})", f"{outcome.wall:.1f}", "", ""]
    return [step, name, outcome.test, f"{outcome.wall:.1f}", f"{outcome.test_seconds:.1f}", _size(outcome)]


def table(results):
    """The rows as aligned text."""
    header = ["step", "bug", "caught by", "first fail s", "test s", "counterexample"]
    rows = [header] + [_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _median_worst(values, label, unit):
    if not values:
        return f"{label}: none"
    worst_value, worst_id = max(values)
    median = statistics.median(v for v, _ in values)
    return f"{label}: median {median:.1f} {unit}, worst {worst_value:g} {unit} ({worst_id})"


def totals(results):
    """The summary lines: caught/total, times, counterexample sizes."""
    bugs = [r for r in results if r.bug is not None]
    caught = [r for r in bugs if r.outcome.caught]
    lines = [f"caught {len(caught)}/{len(bugs)} known bugs"]
    missed = [r.bug.id for r in bugs if not r.outcome.caught]
    if missed:
        lines.append(f"NOT caught: {', '.join(missed)}")
    lines.append(_median_worst([(round(r.outcome.wall, 1), r.bug.id) for r in caught],
                               "time to first failure", "s"))
    lines.append(_median_worst([(round(r.outcome.test_seconds, 1), r.bug.id) for r in caught],
                               "catching test alone", "s"))
    for unit, label in (("steps", "state machine counterexamples"),
                        ("chars", "property counterexamples")):
        sized = [(r.outcome.size, r.bug.id) for r in caught if r.outcome.unit == unit]
        lines.append(_median_worst(sized, f"{label} ({len(sized)})", unit))
    plain = [r.bug.id for r in caught if r.outcome.unit is None]
    lines.append(f"caught by a plain test with a fixed scenario: {len(plain)}")
    reference = [r for r in results if r.bug is None]
    for r in reference:
        lines.append(f"reference client.py: {r.outcome.status} "
                     f"({r.outcome.tests} tests, {r.outcome.wall:.1f} s)")
    return "\n".join(lines)


def counterexamples(results):
    """Each caught bug's counterexample, as printed by Hypothesis."""
    parts = []
    for r in results:
        if r.bug is not None and r.outcome.caught:
            parts.append(f"--- {r.bug.id} (step {r.bug.step}): {r.outcome.test}\n"
                         f"{r.outcome.error[:300]}\n{r.outcome.counterexample}")
    return "\n".join(parts)


def as_json(results):
    return [{"bug": r.bug.id if r.bug else None, "step": r.bug.step if r.bug else None,
             "what": r.bug.what if r.bug else "reference",
             "status": r.outcome.status, "test": r.outcome.test,
             "wall": round(r.outcome.wall, 2),
             "test_seconds": r.outcome.test_seconds, "size": r.outcome.size,
             "unit": r.outcome.unit, "counterexample": r.outcome.counterexample,
             "error": r.outcome.error[:500],
             "output": "" if r.outcome.caught else r.outcome.output[-3000:]} for r in results]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m quality.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", metavar="ID", help="just these bugs")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference run")
    parser.add_argument("--jobs", type=int, help="suites at once (default: cores, at most 2)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--examples", action="store_true", help="print every counterexample")
    parser.add_argument("--paths", nargs="+", metavar="PATH",
                        help="run only these test files or folders (e.g. stateful: the "
                             "state machines alone), relative to the checkout")
    args = parser.parse_args(argv)
    by_id = {bug.id: bug for bug in known.BUGS}
    unknown = [i for i in args.only or () if i not in by_id]
    if unknown:
        parser.error(f"unknown bug ids: {', '.join(unknown)}")
    selected = [by_id[i] for i in args.only] if args.only else known.BUGS

    def progress(result):
        name = result.bug.id if result.bug else "reference"
        print(f"  {name}: {result.outcome.status} in {result.outcome.wall:.1f} s",
              file=sys.stderr, flush=True)

    paths = [check.ROOT / p for p in args.paths] if args.paths else None
    results = meta.run_all(selected, reference=not args.no_reference, workers=args.jobs,
                           on_result=progress, paths=paths)
    print(table(results))
    print()
    print(totals(results))
    if args.examples:
        print()
        print(counterexamples(results))
    if args.json:
        with open(args.json, "w") as file:
            json.dump(as_json(results), file, indent=1)
    ok = all(r.outcome.caught if r.bug else r.outcome.status == "passed" for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
