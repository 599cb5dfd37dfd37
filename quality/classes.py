"""Every class of every parameter's domain, and the known bug that class exposes.

The classes are the strategies' own (``resume/testing/strategies/arguments.py`` and
``strategies/values.py``: the keys of ``LINE_KINDS``, ``REPLAY_KINDS``,
``TIMEOUT_CLASSES``, ``HOST_FORMS``, ``PORT_FORMS``, the lists
``PATH_FORMS``, ``INT_CLASSES``, ``HOOK_KINDS``), plus the classes of the
three parameters the suite makes rather than draws (``con``, ``reader``,
``writer``: real stores and sockets, put in each state by a test).
``EXPOSES`` maps each class to a known bug of ``quality/bugs.py`` that a
value of that class shows, most of them written for it; ``NO_BUG`` names the
classes that have none, with the reason (a base class that every other test
draws too, or a search class whose job is the bug nobody listed).

``quality/test_classes.py`` checks that the two together name every class
the strategies draw, and that every bug named exists (the meta-test checks
that each is caught). ``python -m quality.classes`` runs, for each class
whose test runs one class at a time, that class's run alone against its bug,
under the meta-test's seed and three random seeds, and prints the table of
docs/DOMAINS.md ("Each class and its bug"; ``--write`` puts it there).
"""

import argparse
import concurrent.futures
import datetime
import pathlib
import sys

HEADING = "## Each class and its bug"
ROOT = pathlib.Path(__file__).resolve().parent.parent

# Where a test runs one class at a time: the parameter's node id for a class.
NODES = {
    "line": "properties/test_step1_parse_line.py::test_parse_line_does_what_the_model_predicts[{}]",
    "path": "properties/test_step2_store.py::"
            "test_any_path_opens_the_store_the_model_predicts_and_keeps_it_where_it_says[{}]",
    "seq, delta, last, limit": "properties/test_step3_apply_event.py::"
                               "test_apply_event_does_what_the_model_predicts[delta: {}]",
    "events, last, limit": "properties/test_step4_replay.py::test_replay_does_what_the_model_predicts[{}]",
    "fault": "properties/test_step3_apply_event.py::test_apply_event_does_what_the_model_predicts[fault: {}]",
    "a statement of apply_event": "properties/test_step3_apply_event.py::"
                                  "test_apply_event_does_what_the_model_predicts[statement: {}]",
    "a statement of consume_session": "properties/test_step6_consume_session.py::"
                                      "test_any_timeout_and_any_before_ack_do_what_the_model_predicts[statement: {}]",
    "timeout": "properties/test_step6_consume_session.py::"
               "test_any_timeout_and_any_before_ack_do_what_the_model_predicts[timeout: {}]",
    "before_ack": "properties/test_step6_consume_session.py::"
                  "test_any_timeout_and_any_before_ack_do_what_the_model_predicts[before_ack: {}]",
    "host": "properties/test_step7_run_client.py::test_any_form_of_host_and_port_reaches_the_peer[{}-int]",
    "port": "properties/test_step7_run_client.py::test_any_form_of_host_and_port_reaches_the_peer[name-{}]",
}
ALONE_ELSEWHERE = {("port", "a refused port"), ("port", "a peer that never completes the connection")}  # drawn by a test of its own, beside other checks

BASE = "the base class: every other test draws it too, so every bug of the step shows in it"
SEARCH = "a search class: it exists to find the bug nobody listed (it reaches the listed ones too)"

EXPOSES = {
    "line": {
        "valid frame": "tuple-swapped",
        "bytes subclass": "exact-bytes-only",
        "malformed: leading zero": "leading-zero",
        "malformed: plus sign": "plus-accepted",
        "malformed: minus zero": "minus-zero",
        "malformed: doubled sign": "sign-stripped",
        "malformed: CR or CRLF": "crlf-accepted",
        "malformed: missing final LF": "dollar-anchor",
        "malformed: more than one line": "first-line-only",
        "malformed: the rest of a split frame": "fragment-joined",
        "malformed: non-ASCII": "non-ascii-dropped",
        "malformed: non-ASCII digit": "unicode-digits",
        "malformed: out of range": "delta-unbounded",
        "malformed: keyword or case": "keyword-any-case",
        "malformed: whitespace": "any-whitespace-separator",
        "malformed: underscore": "underscore-accepted",
        "malformed: hex": "hex-accepted",
        "malformed: field count": "extra-fields-ignored",
        "malformed: over 64 bytes": "long-frame-overflow-error",
        "malformed: NUL": "nul-stripped",
        "malformed: a byte-order mark first": "bom-stripped",
        "malformed: blank line": "blank-line-is-none",
        "malformed: another message": "eof-word-is-none",
        "not bytes: str": "str-encoded",
        "not bytes: bytearray": "bytearray-accepted",
        "not bytes: memoryview": "memoryview-accepted",
        "not bytes: int": "non-bytes-typeerror",
        "not bytes: None": "non-bytes-typeerror",
        "not bytes: list": "non-bytes-typeerror",
        "not bytes: bool": "non-bytes-typeerror",
        "not bytes: float": "non-bytes-typeerror",
        "not bytes: bytes-like object": "non-bytes-typeerror",
        "at the ends: shortest": "zero-refused",
        "at the ends: longest": "seq-off-by-one",
        "at the ends: seq above": "seq-max-off-by-one",
        "at the ends: delta below": "delta-unbounded",
        "at the ends: delta above": "delta-unbounded",
        "at the ends: frame length above": "long-frame-overflow-error",
    },
    "path": {
        "relative name": "store-beside-module",
        "pathlib.Path": "path-must-be-str",
        "bytes": "path-str-converted",
        "special characters": "path-as-uri",
        ":memory:": "path-made-absolute",
        "empty": "path-made-absolute",
        "a folder": "folder-gets-default-name",
        "missing parent": "parent-folders-created",
        "an empty file": "empty-file-not-initialised",
        "a file that is not a store": "leak-on-init-failure",
        "a store with the ledger table only": "half-made-store-kept",
        "a store with the checkpoint table only": "half-made-store-by-checkpoint",
        "a store with no checkpoint row": "row-only-with-new-table",
        "a store with no checkpoint row, the ledger made first": "half-made-store-kept",
        "a store with the checkpoint table and its row only": "initialised-if-checkpoint-row",
    },
    # seq, delta (steps 3 and 5), last, limit (step 4): one strategy, arguments.any_ints
    "seq, delta, last, limit": {
        "an end": "apply-delta-exclusive",
        "one past an end": "delta-bound-off-by-one",
        "far outside": "apply-delta-unchecked",
        "int subclass": "int-subclass-refused",
        "IntEnum": "int-subclass-refused",
        "bool": "bool-is-int",
        "float": "integral-float-accepted",
        "Decimal": "decimal-accepted",
        "Fraction": "rational-accepted",
        "has __index__": "index-accepted",
        "numeric str": "non-int-typeerror",
        "None": "non-int-typeerror",
    },
    "events, last, limit": {
        "valid log: cursor far before": "truncated-log-as-recovery",
        "valid log: cursor first-2": "resync-gap-of-one-tolerated",
        "valid log: cursor first-1": "resync-off-by-one",
        "valid log: cursor inside": "limit-off-by-one",
        "valid log: cursor at the end": "end-cursor-refused",
        "valid log: cursor past the end": "past-end-accepted",
        "malformed: not a list": "tuple-log-accepted",
        "malformed: empty": "empty-log-returns-empty",
        "malformed: over 128 items": "log-unbounded",
        "malformed: list item": "list-items-accepted",
        "malformed: wrong-length tuple": "extra-item-fields-ignored",
        "malformed: other item": "frame-items-parsed",
        "malformed: bool value": "bool-is-int",
        "malformed: wrong value type": "integral-float-accepted",
        "malformed: delta out of range": "log-delta-unchecked",
        "malformed: seq out of range": "log-seq-unbounded",
        "malformed: hole": "holes-accepted",
        "malformed: descending": "descending-accepted",
        "malformed: repeated seq": "repeats-accepted",
        "malformed: reversed": "descending-accepted",
        "malformed: defects that cancel out": "consecutive-by-span",
        "at the ends: log at the top, cursor at its end": "end-cursor-refused",
        "at the ends: log at the bottom, cursor before it": "resync-off-by-one",
        "at the ends: log at the top, cursor just before it": "log-top-seq-refused",
        "one past: seq above": "log-seq-unbounded",
        "one past: delta below": "log-delta-unchecked",
        "one past: delta above": "log-delta-unchecked",
        "one past: last below": "cursor-floor-off-by-one",
        "one past: limit below": "limit-zero-accepted",
        "one past: limit above": "limit-max-off-by-one",
        "one past: log length below": "empty-log-returns-empty",
        "one past: log length above": "log-unbounded",
    },
    "fault": {
        "None": "fault-called-unchecked",
        "plain": "total-separately",
        "falsy callable": "falsy-fault-skipped",
        "not callable": "uncallable-fault-ignored",
        "raises an Exception": "fault-error-returns-false",
        "raises a ValueError": "valueerror-not-rolled-back",
        "raises a BaseException": "except-exception",
        "raises an sqlite3 error": "hook-integrity-error-as-conflict",
        "returns a value": "fault-result-as-failure",
    },
    # A FAKE failure of the n-th statement (resume.testing.drivers.statements), one run per class of error.
    "a statement of apply_event": {
        "raises an Exception": "rollback-around-fault-only",
        "raises a ValueError": "valueerror-not-rolled-back",
        "raises a BaseException": "except-exception",
    },
    # The same FAKE in a session: the first statement after a read (in consume_line, or state at EOF).
    "a statement of consume_session": {
        "raises an Exception": "eof-state-before-reclaim",
        "raises a ValueError": "session-valueerror-rewrapped",
        "raises a BaseException": "reclaim-on-exception-only",
    },
    "before_ack": {
        "None": "hook-called-unchecked",
        "plain": "hook-before-commit",
        "returns a value": "hook-result-awaited",
        "falsy callable": "falsy-hook-skipped",
        "not callable": "uncallable-hook-ignored",
        "raises an Exception": "hook-error-after-ack",
        "raises a ValueError": "session-valueerror-rewrapped",
        "raises a BaseException": "reclaim-on-exception-only",
        "raises an sqlite3 error": "locked-line-skipped",
        "awaitable": "awaitable-hook-ignored",
        "awaitable raises": "awaitable-error-swallowed",
        "awaitable raises a BaseException": "hook-awaited-in-a-task",
        "awaitable sometimes": "hook-kind-learnt-once",
    },
    "timeout": {
        "float": "timeout-truncated-to-int",
        "int": "timeout-int-refused",
        "float subclass": "timeout-subclass-refused",
        "int subclass": "timeout-subclass-refused",
        "zero": "timeout-zero-accepted",
        "negative": "timeout-magnitude",
        "NaN": "nan-timeout-accepted",
        "infinity": "inf-by-identity",
        "int past float range": "huge-int-timeout-overflows",
        "bool": "timeout-bool-accepted",
        "Fraction": "timeout-any-real",
        "Decimal": "timeout-any-real",
        "not a number": "timeout-str-parsed",
    },
    "host": {
        "IPv6 address": "ipv4-only",
        "name": "host-must-be-ip",
        "IPv6 address in brackets": "host-brackets-stripped",
        "an address with blanks around it": "host-stripped",
    },
    "port": {
        "int": "port-parsed-from-str",
        "str of digits": "port-must-be-int",
        "int subclass": "port-made-int",
        "zero": "port-checked-first",
        "int past 65535": "port-checked-first",
        "str past 65535": "port-checked-first",
        "negative": "port-checked-first",
        "a refused port": "db-leaked",
        "a peer that never completes the connection": "connect-unbounded",
    },
    "con": {
        "two connections on one store": "last-read-before-begin",
        "a store another connection holds locked": "locked-is-duplicate",
        "a connection that wrote before another did": "cursor-cached-per-connection",
    },
    "reader": {
        "EOF": "stale-eof-state",
        "a line without LF": "partial-line-is-eof",
        "a line without LF that is a frame but for it": "cut-off-line-mended",
        "a line past the reader's limit": "over-long-line-skipped",
        "silence": "unbounded-read",
        "a reset": "reset-is-eof",
        "a cancellation at an await": "swallowed-cancellation",
    },
    "writer": {
        "a peer that never reads (the drain blocks)": "unbounded-drain",
        "a closing wait that hangs": "no-abort-on-close-timeout",
        "a closing wait that hangs, after a timeout of each invalid class": "fallback-bound-by-sign",
        "a drain that raises ConnectionError (a reset), after any ACK": "drain-reset-ends-session",
        "a closing wait that raises ConnectionError": "closing-reset-raised",
        "a closing wait that raises another OSError": "no-abort-on-other-closing-error",
        "a slow closing wait within the bound": "abort-at-once-on-bad-timeout",
    },
}

NO_BUG = {
    ("line", "at the ends: free"): SEARCH,
    ("line", "near miss"): SEARCH,
    ("line", "frame-shaped bytes"): SEARCH,
    ("line", "arbitrary bytes"): SEARCH,
    ("path", "absolute"): BASE,
    ("seq, delta, last, limit", "inside"): BASE,
    ("events, last, limit", "valid log: any last"): SEARCH,
    ("events, last, limit", "valid log: any limit"): SEARCH,
    ("events, last, limit", "at the ends: free"): SEARCH,
    ("events, last, limit", "one past: seq below"):
        "a seq of -1 first in the log is refused by any check of the seqs' type or range that the "
        "other classes need; no realistic check lets it alone through",
    ("events, last, limit", "one past: last above"):
        "unobservable alone: a cursor past 2147483647 is past every log's final seq, so the "
        "past-the-end rule gives the same ValueError",
    ("host", "IPv4 address"): BASE,
    ("con", "the connection open_store returned"): BASE,
    ("reader", "lines"): BASE,
    ("writer", "a real socket"): BASE,
}


def drawn():
    """``{parameter: [class, ...]}``: the classes the strategies draw (the suite-made ones as listed here)."""
    from resume.testing.strategies import arguments
    from resume.testing.drivers import statements
    from resume.testing.strategies import values as sts
    made = {parameter: [c for c in EXPOSES[parameter]] + [c for p, c in NO_BUG if p == parameter]
            for parameter in ("con", "reader", "writer")}
    return {
        "line": list(sts.LINE_KINDS),
        "path": list(arguments.PATH_FORMS),
        "seq, delta, last, limit": list(arguments.INT_CLASSES),
        "events, last, limit": list(sts.REPLAY_KINDS),
        "fault": [kind for kind in arguments.HOOK_KINDS if not kind.startswith("awaitable")],
        "a statement of apply_event": list(statements.ERRORS),
        "a statement of consume_session": list(statements.ERRORS),
        "before_ack": list(arguments.HOOK_KINDS),
        "timeout": list(arguments.TIMEOUT_CLASSES),
        "host": list(arguments.HOST_FORMS),
        "port": [*arguments.PORT_FORMS, "a refused port", "a peer that never completes the connection"],
        **made,
    }


def claims():
    """``[(parameter, class, bug id)]`` for every class whose test runs it alone."""
    return [(parameter, kind, bug) for parameter, bugs in EXPOSES.items() if parameter in NODES
            for kind, bug in bugs.items() if (parameter, kind) not in ALONE_ELSEWHERE]


def nodes(parameter, kind):
    """The node ids that run one class: its test's, after its first look's where the test has one
    (resume/testing/plugin/first_look.py: in a whole run the two share the class's examples)."""
    from resume.testing.plugin.first_look import SUFFIX
    node = NODES[parameter].format(kind)
    path, name = node.split("::")
    function = name.split("[")[0]
    look = function + SUFFIX
    has_look = f"\n{look} = " in (ROOT / path).read_text()
    return [node.replace(function, look, 1), node] if has_look else [node]


def check_claims(seeds, only=None):
    """Run each class's test alone against its bug, once per seed: ``{(parameter, class): [caught?, ...]}``.

    ``only``: the classes to run (all if None).
    """
    import tempfile

    from quality import bugs as known
    from quality import meta
    from resume.testing.grading import runner
    by_id = {bug.id: bug for bug in known.BUGS}
    selected = [claim for claim in claims() if only is None or claim[1] in only]
    with tempfile.TemporaryDirectory(prefix="classes-") as folder:
        files = meta.write_bugs(folder, [by_id[bug] for bug in {bug for _, _, bug in selected}])

        def one(claim, seed):
            parameter, kind, bug = claim
            args = [f"--impl={files[bug]}", "-q", "-p", "no:cacheprovider", *nodes(parameter, kind)]
            if seed != "random":
                args.append(f"--hypothesis-seed={seed}")
            done = runner.run(args, root=ROOT, profile="dev", timeout=meta.TIMEOUT)
            return bool(done.failures)

        with concurrent.futures.ThreadPoolExecutor(meta.jobs()) as pool:
            futures = {(p, k): [pool.submit(one, (p, k, b), seed) for seed in seeds] for p, k, b in selected}
            return {key: [future.result() for future in runs] for key, runs in futures.items()}


def markdown(results, seeds):
    lines = ["| parameter | class | its bug | caught by that class's run alone |", "|---|---|---|---|"]
    for parameter, kinds in drawn().items():
        for kind in kinds:
            bug = EXPOSES.get(parameter, {}).get(kind)
            if bug is None:
                lines.append(f"| {parameter} | {kind} | - | {NO_BUG[(parameter, kind)]} |")
                continue
            runs = results.get((parameter, kind))
            verdict = (f"{sum(runs)} of {len(runs)} seeds" if runs is not None
                       else "not run alone (the meta-test catches it)")
            lines.append(f"| {parameter} | {kind} | `{bug}` | {verdict} |")
    return "\n".join(lines) + f"\n\nSeeds: {', '.join(map(str, seeds))} (dev profile).\n"


def write(path, table):
    """Replace the section HEADING of ``path`` (to the next ``## `` heading, or the end) with ``table``."""
    text = path.read_text()
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    end = len(text) if end < 0 else end + 1
    section = (f"{HEADING}\n\nWritten by `python -m quality.classes --write {path.name}` on "
               f"{datetime.date.today()}: for each class, its bug, and whether the test run of that class "
               f"alone catches it.\n\n{table}")
    path.write_text(text[:start] + section + ("\n" + text[end:] if end < len(text) else ""))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,random,random,random")
    parser.add_argument("--only", nargs="*", metavar="CLASS", help="run only these classes")
    parser.add_argument("--write", metavar="FILE", help="replace the section '" + HEADING + "' of FILE with the table")
    options = parser.parse_args(argv)
    seeds = options.seeds.split(",")
    results = check_claims(seeds, options.only)
    table = markdown(results, seeds)
    print(table)
    if options.write:
        write(pathlib.Path(options.write), table)
    missed = [key for key, runs in results.items() if not all(runs)]
    if missed:
        print(f"not caught under every seed by its class alone: {missed}", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
