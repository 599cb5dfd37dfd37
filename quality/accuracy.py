"""Clause accuracy: does a known bug's report quote a sentence that bug breaks?

    python -m quality.accuracy                      # every known bug (a core each and one more); a few minutes
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
import re
import sys

from quality import bugs as known
from quality import clauses, meta
from resume.testing import model, suite
from resume.testing.grading import check, verdict
from resume.testing import spec


# Known bugs whose report may quote a sentence they are not listed with, and SPEC.md's reason:
# what the failing call shows cannot tell the sentence the bug breaks from another.
EXCEPTIONS = {
    "fragment-joined": "the fragment is kept from an earlier example: the failing call is the first of its "
                       "example, so nothing before it shows a line cut off before its LF (step 1)",
    "gap-frame-kept-for-later": "the frame is kept from an earlier example, so no call of the failing example "
                                "was refused as a gap (step 5's errors)",
    "row-only-with-new-table": "a store with the checkpoint table only needs both of step 2's sentences (the "
                               "ledger table created, the row inserted); the model names the tables'",
    "init-once-autocommit": "the same store as row-only-with-new-table: step 2's two sentences, the tables' named",
    "schema-memo-per-path": "the path form drawn first is a relative name, and a store that cannot be opened at "
                            "an unusual path is decision 3's (the path handed to sqlite3.connect as given)",
    "extra-fields-ignored": "an ACK for the line after a malformed one, or for the malformed line read as a "
                            "frame: with no event before it both are ACK 0; the model names step 5's errors",
    "zero-refused": "EVENT 0 -1000 holds a zero (step 1: \"other than `0` itself\") and an end of delta's range; "
                    "the model names the range",
    "resume-never-backwards": "RESUME 1 for ':memory:' on the second run is also what a path not handed on as "
                              "given gives (step 7's open_store(path)); the model names that",
    "port-parsed-from-str": "an int port refused by code meant for a str fails before any connection; nothing "
                            "in that run shows the port's form (decision 16)",
    "unbounded-drain": "a session whose drain and closing wait both block hangs in one of them; the model names "
                       "the closing wait's bound where both are drawn",
    "cursor-cached-per-connection": "the two-receiver machine races two connections: under this bug the race can "
                                    "end otherwise when Hypothesis runs the example again, and it then reports a "
                                    "flaky strategy, not the counterexample (decision 4)",
}

# Words of a rule, not of an observation: a "got" line says what the implementation did. The
# implementation's own error message (after "raises X: ") is its words, not the report's.
RULE_WORDS = re.compile(r"\b(must|should|has to|have to|needs? to|is required)\b", re.IGNORECASE)


def restates_a_rule(got):
    return bool(RULE_WORDS.search(re.sub(r"raises \w+: .*", "", got or "")))


def part_of(nodeid):
    """The part of ``resume check`` a test belongs to: ``"3"``, ``"protocol"``, ``"deeper"``."""
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    for label, files in suite.step_paths():
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
        if not quotes_one_of(report.clause, breaks) or restates_a_rule(report.got):
            found.append((result.bug.id, report.clause, breaks, report))
    return found


def unplaced(results):
    """``[(bug id, verdict)]``: caught bugs whose report shows no line of the learner's file
    (``in your file:``) though the call went through it (``needs_a_line``)."""
    found = []
    for result in results:
        if result.bug is None or not result.outcome.caught:
            continue
        report = report_of(result)
        if needs_a_line(report) and not report.in_your_file:
            found.append((result.bug.id, report))
    return found


# What a report must not print (issue 56): a value written longer than this, or the event loop's jargon.
LONGEST_VALUE = 60
JARGON = re.compile(r"turns? of the (event )?loop")


def unreadable(results):
    """``[(bug id, what)]``: caught bugs whose report, as ``resume check`` prints it, shows an int,
    str or bytes value longer than ``LONGEST_VALUE`` characters, or the event loop's jargon."""
    found = []
    for result in results:
        if result.bug is None or not result.outcome.caught:
            continue
        report = report_of(result)  # what it shows of the call (SPEC.md's quote and the learner's line are theirs)
        text = "\n".join([*report.calls, report.call or "", report.expected or "", report.got or ""])
        values = [match[0] for pattern in (verdict._LITERAL, re.compile(r"\d{%d,}" % (LONGEST_VALUE + 1)))
                  for match in pattern.finditer(text) if len(match[0]) > LONGEST_VALUE]
        jargon = JARGON.search(text)
        if values or jargon:
            found.append((result.bug.id, values[0][:80] if values else jargon[0]))
    return found


# The calls whose outcome depends on the store they run on, and the words that name its state
# ("on a new store", "on a store at last=3, total=7", "an in-memory store").
READS_A_STORE = re.compile(r"^(receiver \w+: )?(open_store|state|apply_event|consume_line|consume_session|run_client)\(")
STORE_NAMED = re.compile(r"\bstores?\b|\blast=|\ba new path\b|\ba folder\b")
LEAK = re.compile(r"still open|never closed|left open")


def stateless(results):
    """``[(bug id, call)]``: caught bugs whose report shows a call on a store (``the call``) and
    names the store's state neither there nor in the case it shows, or a leak with no call of
    SPEC.md's public API named (the step is the part's, the sentence's)."""
    found = []
    for result in results:
        if result.bug is None or not result.outcome.caught:
            continue
        report = report_of(result)
        call, shown = report.call or "", "\n".join([report.call or "", *report.calls])
        if READS_A_STORE.match(call) and not STORE_NAMED.search(shown):
            found.append((result.bug.id, call))
        elif LEAK.search(report.got or "") and not re.search(r"\b(%s)\b" % "|".join(
                name for names in model.PUBLIC_NAMES.values() for name in names), call):
            found.append((result.bug.id, f"a leak with no call: {call}"))
    return found


def needs_a_line(report):
    """Whether the call the model predicted went through the learner's code when it went wrong: it
    raised, it hung, or it returned where it was to pass on a cancellation or the hook's own error.
    (An error no prediction was compared with, Hypothesis's own say, may have passed nowhere there.)"""
    got, expected = report.got or "", report.expected or ""
    if expected == verdict.UNEXPECTED:
        return False
    return ((got.startswith("raises ") and not got.startswith("raises after")) or got.startswith("never returns")
            or (got.startswith("returns") and expected.startswith(("raises CancelledError", "raises that very"))))


def unexplained(wrong):
    """The misses that ``EXCEPTIONS`` does not list, and every report whose got restates a rule."""
    return [miss for miss in wrong if miss[0] not in EXCEPTIONS or restates_a_rule(miss[3].got)]


def quotes_one_of(clause, breaks):
    """Whether the sentence quoted for ``clause`` is the sentence of one of ``breaks``: the learner
    reads the sentence, and several clauses share one (step 1's list of malformations)."""
    return clause is not None and spec.sentence(clause) in {spec.sentence(c) for c in breaks}


def summary(results, wrong):
    caught = sum(1 for r in results if r.bug is not None and r.outcome.caught)
    lines = [f"  {bug}: quoted {clause}, breaks {', '.join(breaks)}  ({report.test.split('::')[-1]})"
             + ("  [listed]" if bug in EXCEPTIONS else "") + ("  [got restates a rule]" if restates_a_rule(report.got) else "")
             for bug, clause, breaks, report in wrong]
    lines.append(f"clause accuracy: {caught - len(wrong)}/{caught} caught bugs quote a clause they break "
                 f"({len(unexplained(wrong))} not listed in quality/accuracy.py's EXCEPTIONS)")
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
    for bug, report in unplaced(results):
        print(f"  {bug}: no 'in your file:' line, though the call {report.got}  ({report.test.split('::')[-1]})")
    for bug, call in stateless(results):
        print(f"  {bug}: the store's state not shown: {call}")
    for bug, what in unreadable(results):
        print(f"  {bug}: unreadable: {what}")
    if args.json:
        rows = []
        for result in results:
            if result.outcome.caught:
                report = report_of(result)
                rows.append({"bug": result.bug.id, "clause": report.clause,
                             "breaks": list(clauses.BREAKS.get(result.bug.id, ())), "test": report.test,
                             "call": report.call, "expected": report.expected, "got": report.got,
                             "in_your_file": report.in_your_file})
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=1)
    return 1 if unexplained(wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
