"""The foreign corpus: files written blind from SPEC.md by people who never saw this suite.

    python -m quality.corpus                 # every file, as a learner checks it; prints the four figures
    python -m quality.corpus --json out.json

``quality/foreign/correct/`` holds correct implementations in styles unlike
``resume/client.py`` and unlike each other; ``quality/foreign/variants/<base>/``
holds single-mistake variants of one of them, each with a line of its
``manifest.jsonl`` written by the variant's author: the step that should fail
first, the SPEC.md sentence broken (a fragment copied from it) and the lines of
the mistake. ``quality/foreign/README.md`` has the prompts the authors were given.

Each file is checked as a learner checks it: ``python -m resume check --json``
(the lab's parts; the power level is a verdict of its own and not counted
here). The four figures:

* false alarms: correct files that do not pass;
* caught: variants with a failing part;
* step: variants whose first failing part is the manifest's step;
* sentence: variants whose quoted sentence holds the manifest's fragment, or is
  one judged as precise (``ACCEPTED``, with why); and as the manifest wrote it alone;
* line: of the variants whose report shows a line ``in your file``, those where
  one it shows (where the error arose, or where the file raised it again) lies
  within the manifest's lines, widened to the ``if`` or ``try`` statement they are
  the test or a handler of (``mistake``); or listed in ``ELSEWHERE``, with why.
"""

import argparse
import ast
import concurrent.futures
import dataclasses
import json
import pathlib
import re
import subprocess
import sys

from resume.testing import spec

FOLDER = pathlib.Path(__file__).resolve().parent / "foreign"
SEED = 7  # the meta-test's seed (quality.meta.SEED)
PARTS = ["1", "2", "3", "4", "5", "6", "7", "protocol"]

# Variants whose report quotes another sentence than the manifest's, judged as precise, and why
# (the manifest's author chose one of two sentences that say the same of this mistake).
_ORDER = ("decision 7's \"All ValueError checks, over the whole list, come before the ResyncRequired "
          "decision\" is step 4's \"Validate the whole input first\" said of this very order")
ACCEPTED = {
    "class_based/10_resync_before_limit_check.py": _ORDER,
    "sql_centred/09_resync_before_limit_check.py": _ORDER,
    "timeout_cm/09_limit_checked_after_resync.py": _ORDER,
    "procedural/01_parse_rstrip_all_newlines.py": "step 1's \"more than one line\" is what the line it accepts "
                                                  "(EVENT 1 2 and two LFs) is; the manifest quotes step 1's hint",
    "procedural/03_store_create_without_if_not_exists.py": "the CREATE TABLE without IF NOT EXISTS breaks \"It creates "
                                                           "the two tables only when they do not exist\"; the manifest "
                                                           "quotes decision 19, which says which stores step 2 meets",
    "sql_centred/03_busy_timeout_ms.py": "decision 3's \"PRAGMA busy_timeout then reads 1000\" is step 2's "
                                         "\"a busy timeout of 1 second\" as a caller sees it",
    "timeout_cm/13_reclaim_connection_error.py": "decision 11's \"and carry on: on the normal path consume_session "
                                                 "still returns state(con)\" is what re-raising the ConnectionError breaks",
    "timeout_cm/15_resume_failure_leaks_socket.py": "decision 12 is step 7's \"reclaim the socket directly\" said "
                                                    "of the RESUME write and its drain",
    "procedural/14_run_client_default_stream_limit.py": "a line past the reader's limit not refused (decision 9) "
                                                        "is how a reader made without limit=64 shows",
    "class_based/06_deferred_begin.py": "decision 4's first sentence names BEGIN IMMEDIATE, which a deferred "
                                        "BEGIN leaves out; its third says the same of a duplicate's call",
    "timeout_cm/14_timeout_validated_late.py": "decision 10's \"run_client raises ValueError before opening "
                                               "anything\" is step 7's \"Validate timeout first.\" as a caller sees it",
    "class_based/12_readline_wait_for.py": "the cancellation swallowed by wait_for (\"Errors and cancellation "
                                           "propagate.\") is the mistake; writing after it is what follows",
}


# Variants whose report shows a line of theirs that is not the mistake's, and why: the mistake
# left no line in the traceback of what went wrong (something left out, or done too early),
# so the line shown is where its effect surfaced.
ELSEWHERE = {
    "class_based/05_checkpoint_row_only_with_new_table.py": "the row never inserted: state() raises where it "
                                                            "finds none",
    "sql_centred/04_seed_with_table.py": "the row never inserted: state() fails where it finds none",
    "procedural/05_apply_reads_last_before_begin.py": "the cursor read too early: the INSERT it leads to "
                                                      "raises IntegrityError",
    "procedural/14_run_client_default_stream_limit.py": "the limit left out of open_connection: the read it "
                                                        "leads to fails in the file's wait helper",
    "timeout_cm/09_limit_checked_after_resync.py": "the limit checked too late: the line shown raises "
                                                   "ResyncRequired before that check, the next line",
    "procedural/12_reclaim_closing_error_replaces_original.py": "a bare `raise` leaves no line of its own in a "
                                                                "traceback: the closing wait it came from is shown",
}


def mistake(entry):
    """The manifest's lines, widened to the whole ``if`` or ``try`` statement whose test or
    handler they are: a condition written wrong shows at the ``raise`` it guards, a handler
    that catches too little at the call in its ``try``."""
    low, high = entry.lines[0], entry.lines[-1]
    for node in ast.walk(ast.parse(entry.path.read_text(encoding="utf-8"))):
        heads = ([node.test] if isinstance(node, ast.If) else
                 [handler for handler in node.handlers] if isinstance(node, ast.Try) else [])
        if any(low <= head.lineno and head.lineno <= high for head in heads):
            low, high = min(low, node.lineno), max(high, node.end_lineno)
    return low, high


@dataclasses.dataclass(frozen=True)
class Entry:
    path: pathlib.Path
    step: str | None = None  # the manifest's step; None: a correct file
    sentence: str = ""
    lines: tuple = ()
    what: str = ""


def correct_files():
    return [Entry(path) for path in sorted((FOLDER / "correct").glob("*.py"))]


def variants():
    found = []
    for manifest in sorted((FOLDER / "variants").glob("*/manifest.jsonl")):
        for line in manifest.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            found.append(Entry(manifest.parent / item["file"], str(item["step"]), item["sentence"],
                               tuple(item["lines"]), item["what"]))
    return found


def _words(text):
    return re.sub(r"\s+", " ", text or "").strip()


def check(path, parts, seed=SEED):
    """The file's entry of ``resume check --json --step ...`` for ``parts``."""
    done = subprocess.run([sys.executable, "-m", "resume", "check", "--json", "--seed", str(seed),
                           *[arg for part in parts for arg in ("--step", part)], str(path)],
                          capture_output=True, text=True, cwd=spec.ROOT, stdin=subprocess.DEVNULL)
    return json.loads(done.stdout)["files"][0]


def check_files(entries, seed=SEED, jobs=2):
    """``{path: the file's entry of resume check --json}``, ``jobs`` checks at a time (each a process
    of its own, as a learner's). A variant's parts up to its manifest's step run first, and the
    others only if none of those failed: the first failing part is the same, for less time."""
    def one(entry):
        if entry.step is None:
            return check(entry.path, PARTS, seed)
        first = PARTS[:PARTS.index(entry.step) + 1]
        report = check(entry.path, first, seed)
        if first_failure(report) is None:
            rest = check(entry.path, PARTS[len(first):], seed)
            report = {**rest, "steps": report["steps"] + rest["steps"]}
        return report

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return dict(zip([entry.path for entry in entries], pool.map(one, entries)))


def first_failure(report):
    return next((part for part in report["steps"] if part["status"] not in ("ok", "not run")), None)


def judge(entry, report):
    """``{caught, step, sentence, line}`` for a variant (``line`` None where no line was shown)."""
    part = first_failure(report)
    if part is None:
        return {"caught": False, "step": False, "sentence": False, "line": None, "part": None}
    quote = (part["clause"] or {}).get("quote", "")
    sentence = _words(entry.sentence) in _words(quote) or _words(quote) in _words(entry.sentence) and bool(quote)
    line = None
    if part["in_your_file"]:  # the line it arose at, and where it was raised again, if it was
        low, high = mistake(entry)
        line = any(low <= int(number) <= high for number in re.findall(r"\.py:(\d+)", part["in_your_file"]))
        listed = not line and f"{entry.path.parent.name}/{entry.path.name}" in ELSEWHERE
        line = line or listed
    return {"caught": True, "step": part["step"] == entry.step, "as written": sentence,
            "sentence": sentence or f"{entry.path.parent.name}/{entry.path.name}" in ACCEPTED, "line": line,
            "line listed": line is not None and listed, "part": part}


def figures(correct, judged):
    shown = [j for j in judged.values() if j["line"] is not None]
    return {"false alarms": f"{sum(r['status'] != 'pass' for r in correct.values())} of {len(correct)}",
            "caught": f"{sum(j['caught'] for j in judged.values())} of {len(judged)}",
            "step": f"{sum(j['step'] for j in judged.values())} of {len(judged)}",
            "sentence": f"{sum(j['sentence'] for j in judged.values())} of {len(judged)}",
            "sentence as the manifest wrote it": f"{sum(j.get('as written', False) for j in judged.values())} of {len(judged)}",
            "line": f"{sum(j['line'] for j in shown)} of {len(shown)} "
                    f"({sum(j['line listed'] for j in shown)} of them listed in ELSEWHERE)"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write every verdict and judgement here")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    good, bad = correct_files(), variants()
    reports = check_files(good + bad, args.seed)
    correct = {entry.path: reports[entry.path] for entry in good}
    judged = {entry.path: judge(entry, reports[entry.path]) for entry in bad}
    for entry in good:
        if correct[entry.path]["status"] != "pass":
            print(f"FALSE ALARM {entry.path.name}: {correct[entry.path]['summary']}")
    for entry in bad:
        j = judged[entry.path]
        if not (j["caught"] and j["step"] and j["sentence"] and j["line"] is not False):
            part = j["part"] or {}
            print(f"{entry.path.parent.name}/{entry.path.name}: manifest step {entry.step}, "
                  f"\"{entry.sentence}\", lines {list(entry.lines)}\n"
                  f"    report: part {part.get('step')}, {(part.get('clause') or {}).get('id')}, "
                  f"in your file {part.get('in_your_file')}")
    result = figures(correct, judged)
    print("; ".join(f"{name}: {value}" for name, value in result.items()))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"figures": result, "judged": {str(path): {**j, "part": j["part"]} for path, j in judged.items()}},
            indent=1, default=str))
    return result


if __name__ == "__main__":
    main()
