"""The places SPEC.md composes two or more things, the test that draws each product whole, and
the proof that a bug can need the pairing (issue 39).

Each factor of a composition is drawn over its whole domain by the tests of
its class (docs/DOMAINS.md, "Each class and its bug"); a bug that shows only
where two factors meet passes all of them. ``ROWS`` lists each composition,
its factors, the size of the product, the test that draws every cell, and a
known bug (quality/bugs.py) that only that pairing exposes.

    python -m quality.compositions                  # each row's bug through the whole suite, 4 seeds
    python -m quality.compositions --only BUG ...   # some rows
    python -m quality.compositions --table          # the table of docs/DOMAINS.md

The run is the catch matrix's (``meta.run_whole``: the whole suite under
``dev``, no ``-x``, a fresh example database) under the meta-test's seed and
three random ones; for each seed it prints the tests that fail. A row holds
when its product test fails under every seed and no other test fails under
any, but the row's ``mixes``: tests that draw its factors mixed at random,
which meet the pairing now and then (the product meets it in every run).
"""

import argparse
import concurrent.futures
import dataclasses
import tempfile

from quality import bugs as known
from quality import meta
from resume.testing import suite


@dataclasses.dataclass(frozen=True)
class Row:
    composition: str  # where SPEC.md composes them
    factors: str  # each factor, with its classes
    cells: str  # the product's size, as a sum
    test: str  # file::function that draws every cell
    bug: str  # the known bug only the pairing exposes
    mixes: tuple = ()  # tests that draw the factors mixed at random: they may meet the pairing too


ROWS = [
    Row("the frame's grammar (step 1, decision 2)",
        "each field (`EVENT`, the space after it, seq, the space after seq, delta, the final LF) x each "
        "malformation (13 texts put in at any place of the field, and the field left out, doubled, or "
        "followed by a copy): `model.FRAME_FIELDS` x `model.FIELD_MALFORMATIONS`",
        "6 x 16 = 96, every cell in every example",
        "properties/test_step1_parse_line.py::test_every_field_with_each_malformation",
        "fraction-dropped"),
    Row("consume_session's reclaim (step 6, decisions 10 and 11)",
        "how the session ends (normally, a line's error, before_ack's error, cancelled as it reads, an invalid "
        "timeout) x how the closing wait ends (returns, hangs, takes a while, a reset, another OSError, a "
        "cancellation in it)",
        "5 x 6 = 30, less 2: a second cancellation of one task, and an invalid timeout's hang (its own test: "
        "one second); each cell a session of its own",
        "properties/test_step6_consume_session.py::test_every_reclaim_site_with_every_end_of_its_closing_wait",
        "cancel-closing-error-wins",
        mixes=("properties/test_step6_consume_session.py::"
               "test_a_session_acks_only_commits_and_reclaims_the_connection_on_every_path",)),
    Row("run_client's reclaim before hand-over (decision 12, as rule 11)",
        "how the RESUME drain fails (a reset, a hang, a cancellation) x how the closing wait ends (returns, "
        "hangs, a reset, another OSError)",
        "3 x 4 = 12, each cell a run of its own",
        "properties/test_step7_run_client.py::test_a_failing_resume_drain_reclaims_the_socket_and_closes_the_store",
        "resume-closing-error-wins"),
]

ROWS.append(
    Row("before_ack's failure at each moment (step 6, decisions 8 and 15)",
        "each way before_ack fails (raises an Exception, a ValueError, a BaseException, an sqlite3 error; its "
        "awaitable raises an Exception or a BaseException) x the call it fails at (a new event's, a resent "
        "event's)",
        "6 x 2 = 12, one run per cell",
        "properties/test_step6_consume_session.py::test_any_timeout_and_any_before_ack_do_what_the_model_predicts",
        "resend-acked-before-hook",
        mixes=("properties/test_step6_consume_session.py::"
               "test_a_session_acks_only_commits_and_reclaims_the_connection_on_every_path",
               "properties/test_depth_long_runs.py::test_a_long_session_ends_at_the_instant_of_its_first_error")))

ROWS.append(
    Row("a path's form x the step that opens the store (steps 2 and 7, decision 3)",
        "each form of `path` (`arguments.PATH_FORMS`: relative, absolute, `pathlib.Path`, bytes, special "
        "characters, `:memory:`, empty, a folder, a missing parent, foreign files and stores) x each call that "
        "opens it (`open_store`, whose column step 2's path test draws; `run_client`, which opens it itself)",
        "17 x 2 = 34, one run per form and call",
        "properties/test_step7_run_client.py::test_any_path_is_opened_first_and_as_given",
        "run-client-path-resolved"))

SEEDS = ("0", "random", "random", "random")


def holds(row, found):
    """The row's product test fails under every seed, and no test but it and the row's mixes."""
    return all(row.test in tests and set(tests) <= {row.test, *row.mixes} for tests in found)


def table():
    """The composition table of docs/DOMAINS.md, in Markdown."""
    lines = ["| composition | factors | cells | the test that draws it | its known bug |",
             "| --- | --- | --- | --- | --- |"]
    for row in ROWS:
        mixes = "".join(f"; met now and then by the random mix of `{test.split('::')[1]}` too" for test in row.mixes)
        lines.append(f"| {row.composition} | {row.factors} | {row.cells} | `{row.test}` | `{row.bug}`{mixes} |")
    return "\n".join(lines)


def failing(path, seed):
    """The tests (``file::function``) that fail on the implementation at ``path`` under ``seed``."""
    run = meta.run_whole(path, seed=seed, timeout=240)
    return sorted({suite.test_function(test.nodeid) for test in run.failures})


def prove(rows=ROWS, seeds=SEEDS):
    """``{bug: [failing tests under each seed]}`` for each row's bug, and print each row's verdict."""
    by_id = {bug.id: bug for bug in known.BUGS}
    with tempfile.TemporaryDirectory(prefix="resume-compositions-") as folder:
        paths = meta.write_bugs(folder, [by_id[row.bug] for row in rows])
        with concurrent.futures.ThreadPoolExecutor(meta.jobs()) as pool:
            runs = {row: [pool.submit(failing, paths[row.bug], seed) for seed in seeds] for row in rows}
            found = {row.bug: [future.result() for future in futures] for row, futures in runs.items()}
    for row in rows:
        print(f"{row.bug}: {'holds' if holds(row, found[row.bug]) else 'DOES NOT HOLD'} "
              f"({'; '.join(f'seed {seed}: ' + (', '.join(tests) or 'none') for seed, tests in zip(seeds, found[row.bug]))})")
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m quality.compositions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="BUG", help="the rows of these bugs")
    parser.add_argument("--table", action="store_true", help="print the table of docs/DOMAINS.md and stop")
    args = parser.parse_args(argv)
    if args.table:
        print(table())
        return 0
    rows = [row for row in ROWS if not args.only or row.bug in args.only]
    found = prove(rows)
    return 0 if all(holds(row, found[row.bug]) for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
