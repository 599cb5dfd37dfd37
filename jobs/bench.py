"""The benchmark: measured figures for the suite, printed as Markdown and written to BENCHMARKS.md.

    python -m jobs.bench                      # everything; several minutes on 2 cores
    python -m jobs.bench --only commits,strategies --no-write

Sections (``--only`` takes a comma-separated list of these names):

* ``suite``      - the whole suite's wall time (properties/ + stateful/) under
  ``dev`` and ``ci``, serial and with ``-n 2``; from the serial ``dev`` run,
  examples per second of each property test and steps per second of each
  state machine (``bench_plugin.py``).
* ``catch``      - time to the first failure on each known bug of quality/
  under ``dev``, as a learner's run meets it: ``pytest -x properties
  stateful`` in the suite's own order (cheapest first, conftest.py), random
  seeds, a fresh example database, two runs at a time (``quality.meta``);
  the median and the 90th percentile. ``--first-failure`` runs this alone.
* ``yield``      - what each test is worth: per test function, its seconds
  under ``dev`` on the reference, how many known bugs it catches and which
  ones no other test catches, read from the catch matrix
  (``docs/catch-matrix.jsonl``: ``python -m jobs.matrix --json`` runs the
  whole suite on every known bug first, under an hour). ``--yield`` prints
  this alone.
* ``strategies`` - the targeted frame strategies of resume/testing/strategies/values.py
  against a plain ``st.binary(max_size=70)`` on the parse-step (step 1)
  known bugs: examples and seconds until the bug is caught, medians over
  several seeds, and their ratio.
* ``commits``    - ``apply_event`` commits per second against the floor: the
  same SQL in one raw sqlite3 transaction per event on the same kind of
  temporary file.
* ``tests``      - the README's test command, ``python3 -m pytest -n auto``
  (properties/, stateful/ and tests/, a worker per core and one more), as a
  developer runs it, on the project's example database: wall and CPU of
  each of a few runs.
* ``check``      - the learner's wait: ``resume check`` whole (``dev``, every
  part) on a stratified sample of the known bugs, every correct variant and
  resume/client.py; per part and for the whole check, the median, the 90th
  percentile and the worst seconds, the worst files, and CPU beside wall
  (``jobs/check_bench.py``; the records in ``docs/check-bench.jsonl``).
  ``--check`` runs this alone.

It is a script, not a test: it asserts nothing and only reports. Every suite
run but the README's gets a fresh, empty Hypothesis example database, so that
nothing saved earlier is replayed. The machine it ran on is recorded with the figures; a
loaded machine makes every time longer, and ratios are the sturdier figures.
"""

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import platform
import re
import resource
import sqlite3
import statistics
import sys
import tempfile
import time

JOBS = pathlib.Path(__file__).resolve().parent
PROJECT_ROOT = JOBS.parent
sys.path.insert(0, str(PROJECT_ROOT))  # quality/, properties/, resume/

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from resume.testing.drivers import loader
from resume.testing import model
from resume.testing.grading import runner
from resume.testing.strategies import foreign_stores

SECTIONS = ("suite", "tests", "catch", "yield", "strategies", "commits", "check")
KEPT_MARKER = "<!-- measured by other jobs: kept by python -m jobs.bench -->"
COMMAND = "python -m jobs.bench"
SUITE = ["properties", "stateful"]
SUITE_TIMEOUT = 900  # seconds; a suite run longer than this is reported as such

# ---------------------------------------------------------------- the machine


def machine():
    """nproc, CPU model, Python and Hypothesis versions, load, date."""
    import hypothesis

    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = " / ".join(f"{value:.2f}" for value in os.getloadavg())
    return [
        ("nproc", str(os.cpu_count())),
        ("CPU", cpu),
        ("Python", platform.python_version()),
        ("Hypothesis", hypothesis.__version__),
        ("load average (1/5/15 min) at start", load),
        ("CPU seconds of a fixed loop (sum(range(3e7)), best of 3)", f"{yardstick():.2f}"),
        ("date (UTC)", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")),
    ]


def yardstick():
    """CPU seconds of a fixed loop: this machine's speed at the time (a shared machine's varies by
    a fifth from one minute to the next, measured), to read the other figures by."""
    spent = []
    for _ in range(3):
        started = time.process_time()
        sum(range(30_000_000))
        spent.append(time.process_time() - started)
    return min(spent)


# ---------------------------------------------------------------- the suite


def run_suite(profile, workers, extra=(), env_extra=None, paths=SUITE, storage=None):
    """One pytest run of the suite (``paths``: none for the default testpaths); (seconds, last summary
    line, exit code). ``workers``: a number, or ``"auto"``.

    Through the project's runner: by default a fresh, empty example database
    and no shared one (nothing replayed), the failing tests read from its results.
    """
    args = ["-q", "-p", "no:cacheprovider", *paths, *extra]
    if workers == "auto" or workers > 1:
        args += ["-n", str(workers)]
    done = runner.run(args, root=PROJECT_ROOT, profile=profile, extra_env=env_extra, storage=storage,
                      timeout=SUITE_TIMEOUT)
    if done.timed_out:
        return done.wall, f"stopped after {SUITE_TIMEOUT} s", None
    lines = [line for line in done.output.splitlines() if line.strip()]
    summary = lines[-1].strip("= ") if lines else "no output"
    summary = re.sub(r" in [\d.]+s.*$", "", summary)  # pytest's last line, for display only
    failed = [test.nodeid for test in done.failures]
    if failed:
        summary += ": " + ", ".join(failed)
        print(done.output[-6000:], file=sys.stderr)  # what failed, for whoever runs the benchmark
    return done.wall, summary, done.returncode


TESTS_RUNS = 3


def tests_section():
    """The README's test command, ``TESTS_RUNS`` times: ``[(run, wall s, CPU s, result)]``. CPU: user
    and system time of every process of the run (its workers, the checks they start)."""
    rows = []
    for run in range(1, TESTS_RUNS + 1):
        print(f"[bench] the README's test command, run {run}...", file=sys.stderr, flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds, summary, _ = run_suite("dev", "auto", paths=(), storage=runner.KEEP)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        rows.append((str(run), f"{seconds:.1f}", f"{cpu:.1f}", summary))
    return rows


def xdist_available():
    try:
        import xdist  # noqa: F401
    except ImportError:
        return False
    return True


def suite_section():
    """Wall times, and per-test rates from the serial dev run."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-rates-") as folder:
        results = pathlib.Path(folder) / "results.jsonl"
        env_extra = {"BENCH_RESULTS": str(results)}
        for profile in ("dev", "ci"):
            for workers in (1, 2):
                if workers > 1 and not xdist_available():
                    rows.append((profile, f"-n {workers}", "n/a", "pytest-xdist not installed (extra [test])"))
                    continue
                # The serial dev run also measures each test (statistics on, the step counter).
                measured = profile == "dev" and workers == 1
                extra = ["-p", "jobs.bench_plugin", "--hypothesis-show-statistics"] if measured else []
                print(f"[bench] suite under {profile}, {'serial' if workers == 1 else f'-n {workers}'}...",
                      file=sys.stderr, flush=True)
                seconds, summary, code = run_suite(profile, workers, extra, env_extra if measured else None)
                rows.append((profile, "serial" if workers == 1 else f"-n {workers}", f"{seconds:.1f}", summary))
        records = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    return rows, records


def rates_tables(records):
    """Examples per second for properties, steps per second for state machines."""
    machines = [r for r in records if r["steps"] is not None]
    properties = [r for r in records if r["steps"] is None and r["cases"]]
    others = [r for r in records if r["steps"] is None and not r["cases"]]
    props = [(r["nodeid"], str(r["cases"]), f"{r['seconds']:.2f}", f"{r['cases'] / max(r['seconds'], 1e-9):.0f}")
             for r in sorted(properties, key=lambda r: r["nodeid"])]
    steps = [(r["nodeid"], str(r["machines"]), str(r["steps"]), f"{r['seconds']:.2f}",
              f"{r['steps'] / max(r['seconds'], 1e-9):.1f}")
             for r in sorted(machines, key=lambda r: r["nodeid"])]
    plain = [(r["nodeid"], f"{r['seconds']:.2f}") for r in sorted(others, key=lambda r: r["nodeid"])]
    return props, steps, plain


# ---------------------------------------------------------------- known bugs


def catch_section(only_bugs=None):
    """Time to catch each known bug, through quality's runner; None if quality/ has none yet."""
    try:
        from quality import bugs as known
        from quality import meta
    except ImportError as error:
        return None, f"quality/ has no runner yet ({error})"
    selected = [bug for bug in known.BUGS if not only_bugs or bug.id in only_bugs]
    print(f"[bench] the suite against {len(selected)} known bugs ({meta.jobs()} at a time)...",
          file=sys.stderr, flush=True)
    # Random seeds, as a learner's dev runs have (the meta-test fixes one for CI);
    # the folders, not files, so that the suite runs in its own order (conftest.py).
    results = meta.run_all(selected, reference=False, seed="random", paths=SUITE, alone=True)
    rows = []
    for result in results:
        bug, outcome = result.bug, result.outcome
        size = "-" if getattr(outcome, "size", None) is None else f"{outcome.size} {outcome.unit}"
        rows.append((str(bug.step), bug.id,
                     outcome.test if outcome.caught else f"NOT CAUGHT ({outcome.status})",
                     f"{outcome.wall:.1f}", f"{outcome.test_seconds:.1f}" if outcome.caught else "", size))
    return rows, None


MATRIX = PROJECT_ROOT / "docs" / "catch-matrix.jsonl"


def yield_section(only_bugs=None):
    """Per test function: dev seconds on the reference, known bugs caught, bugs only it catches: read
    from the catch matrix (``python -m jobs.matrix --json docs/catch-matrix.jsonl`` runs it)."""
    from jobs import matrix
    reference, caught = matrix.read(MATRIX)
    if only_bugs:
        caught = {bug: tests for bug, tests in caught.items() if bug in only_bugs}
    rows = [(test, f"{seconds:.2f}", str(len(bugs)), ", ".join(sorted(only)) or "-")
            for test, seconds, bugs, only in matrix.worth(reference, caught)]
    return rows, sorted(bug for bug, tests in caught.items() if not tests)


# ---------------------------------------------------------------- strategies vs binary

SEEDS = (1, 2, 3)
SEARCH_MAX_EXAMPLES = 10000  # a search that has not caught the bug by then gives up
SEARCH_MAX_SECONDS = 3.0  # ... and so does one that has run this long

def agrees(impl, line):
    expected = model.parse(line)  # the suite's one grammar oracle
    try:
        got = impl.parse_line(line)
    except ValueError:
        return expected is None
    return got == expected


def targeted_frames():
    """The whole domain of ``line`` the suite draws from (``strategies.lines()``, every class mixed)."""
    from resume.testing.strategies import values as sts

    return sts.lines()


def search(impl, strategy, seed_value):
    """(examples, seconds, caught): until ``impl`` disagrees with the grammar, or the search gave up."""
    found = {}
    count = [0]

    @seed(seed_value)
    @settings(max_examples=SEARCH_MAX_EXAMPLES, database=None, deadline=None, derandomize=False,
              phases=[Phase.generate], report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def property_(line):
        if found:  # Hypothesis replays the failure once more: not a new example
            raise AssertionError("caught") if found["at"][2] else _OutOfTime
        count[0] += 1
        if time.monotonic() - started > SEARCH_MAX_SECONDS:
            found["at"] = (count[0], time.monotonic() - started, False)
            raise _OutOfTime  # ends the search (Hypothesis stops at the first failure)
        if not agrees(impl, line):
            found["at"] = (count[0], time.monotonic() - started, True)
            raise AssertionError("caught")

    started = time.monotonic()
    try:
        property_()
    except (AssertionError, _OutOfTime, ExceptionGroup):
        pass
    return found.get("at", (count[0], time.monotonic() - started, False))


class _OutOfTime(Exception):
    """Raised inside a search that has used up its seconds, to end it."""


def step1_bugs():
    """The parse-step known bugs of quality/, each loaded as a module; [] if none yet."""
    try:
        from quality import bugs as known
        from quality import meta
    except ImportError:
        return [], None
    selected = [bug for bug in known.BUGS if bug.step == 1]
    folder = tempfile.TemporaryDirectory(prefix="bench-step1-bugs-")
    paths = meta.write_bugs(folder.name, selected)
    return [(bug, loader.load(paths[bug.id])) for bug in selected], folder


def censored_median(runs, index):
    """The median of ``runs[i][index]`` over the seeds, and whether it is only a lower bound.

    A search that gave up counts with what it spent, marked as a lower bound
    (the bug would have needed more); so the median is honest about it.
    """
    ordered = sorted(runs, key=lambda run: (run[index], not run[2]))
    middle = ordered[len(ordered) // 2]
    return middle[index], not middle[2]


def _fmt(median, pattern):
    value, lower_bound = median
    return (">" if lower_bound else "") + pattern.format(value)


def _ratio(binary, targeted):
    """How many times more the plain strategy needed than the targeted one."""
    (b, b_bound), (t, t_bound) = binary, targeted
    if t_bound:
        return "? (targeted gave up too)" if b_bound else "< " + f"{b / max(t, 1e-9):.1f}x"
    return (">" if b_bound else "") + f"{b / max(t, 1e-9):.0f}x"


def strategies_section():
    modules, folder = step1_bugs()
    if not modules:
        return None, "no parse-step (step 1) known bugs in quality/ yet"
    rows = []
    with folder:
        for bug, impl in modules:
            print(f"[bench] strategies on {bug.id}...", file=sys.stderr, flush=True)
            medians = {}
            for name, strategy in (("targeted", targeted_frames()), ("binary", st.binary(max_size=70))):
                runs = [search(impl, strategy, s) for s in SEEDS]
                caught = sum(run[2] for run in runs)
                medians[name] = (f"{caught}/{len(SEEDS)}", censored_median(runs, 0), censored_median(runs, 1))
            (t_caught, t_examples, t_seconds), (b_caught, b_examples, b_seconds) = medians["targeted"], medians["binary"]
            rows.append((bug.id,
                         t_caught, _fmt(t_examples, "{:.0f}"), _fmt(t_seconds, "{:.3f}"),
                         b_caught, _fmt(b_examples, "{:.0f}"), _fmt(b_seconds, "{:.3f}"),
                         _ratio(b_examples, t_examples), _ratio(b_seconds, t_seconds)))
    return rows, None


# ---------------------------------------------------------------- commits

COMMIT_EVENTS = 300
COMMIT_REPEATS = 3
# SPEC.md's schema, as the harness lays it down for stores "another writer made".
_FLOOR_SCHEMA = (
    foreign_stores.CHECKPOINT,
    foreign_stores.LEDGER,
    "INSERT INTO checkpoint(id, last, total) VALUES (1, -1, 0)",
)


def impl_commits_per_second(impl, path):
    con = impl.open_store(str(path))
    try:
        started = time.perf_counter()
        for seq in range(COMMIT_EVENTS):
            impl.apply_event(con, seq, (seq % 7) - 3)
        return COMMIT_EVENTS / (time.perf_counter() - started)
    finally:
        con.close()


def floor_commits_per_second(path):
    """The same SQL, one raw sqlite3 transaction per event: what a commit costs at least."""
    con = sqlite3.connect(str(path), timeout=1.0, isolation_level=None)
    try:
        for statement in _FLOOR_SCHEMA:
            con.execute(statement)
        started = time.perf_counter()
        for seq in range(COMMIT_EVENTS):
            con.execute("BEGIN IMMEDIATE")
            con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
            con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, (seq % 7) - 3))
            con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", ((seq % 7) - 3,))
            con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
            con.execute("COMMIT")
        return COMMIT_EVENTS / (time.perf_counter() - started)
    finally:
        con.close()


def commits_section():
    impl = loader.chosen()
    impl_rates, floor_rates = [], []
    with tempfile.TemporaryDirectory(prefix="bench-commits-") as folder:
        for repeat in range(COMMIT_REPEATS):
            # Alternate the order, so that a change in the machine's load hits both alike.
            order = ("impl", "floor") if repeat % 2 == 0 else ("floor", "impl")
            for which in order:
                path = pathlib.Path(folder) / f"{which}-{repeat}.db"
                if which == "impl":
                    impl_rates.append(impl_commits_per_second(impl, path))
                else:
                    floor_rates.append(floor_commits_per_second(path))
    impl_rate, floor_rate = statistics.median(impl_rates), statistics.median(floor_rates)
    return impl_rate, floor_rate, impl_rate / floor_rate


# ---------------------------------------------------------------- output


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def percentile(values, p):
    """The ``p``-th percentile of ``values``, nearest rank (a measured value, never interpolated)."""
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def report(figures, only):
    out = ["# Benchmarks", "",
           f"Produced by one command, `{COMMAND}`"
           + (f" (this run: `--only {','.join(only)}`)" if set(only) != set(SECTIONS) else "")
           + f", from the project root; `{COMMAND} --help` says what each section measures.",
           f"Implementation measured: `{loader.chosen_path().relative_to(PROJECT_ROOT) if loader.chosen_path().is_relative_to(PROJECT_ROOT) else loader.chosen_path()}`.",
           "", "## The machine", "", table(["what", "value"], figures["machine"]), "",
           "The machine is shared: the load average above says how busy it was. Times grow with load;",
           "ratios (both sides measured in the same minutes) are the sturdier figures."]
    if "commits" in figures:
        impl_rate, floor_rate, ratio = figures["commits"]
        out += ["", "## apply_event commits per second against the raw sqlite3 floor", "",
                f"{COMMIT_EVENTS} new events, each committed on its own, on a temporary file "
                f"(sqlite3 defaults: rollback journal, synchronous=FULL), median of {COMMIT_REPEATS} runs.",
                "The floor is the same SQL (`BEGIN IMMEDIATE`, read the checkpoint, insert the ledger row,",
                "update total, update last, `COMMIT`) through a plain sqlite3 connection.", "",
                table(["", "commits/s"], [("apply_event", f"{impl_rate:.0f}"),
                                          ("raw sqlite3 floor", f"{floor_rate:.0f}"),
                                          ("ratio apply_event / floor", f"{ratio:.2f}")])]
    if "strategies" in figures:
        rows, why = figures["strategies"]
        out += ["", "## Targeted frame strategies against st.binary(max_size=70), parse-step bugs", ""]
        if rows is None:
            out += [f"To be filled: {why}."]
        else:
            out += ["Property: `parse_line(line)` raises ValueError exactly when the suite's grammar oracle",
                    "(`resume.testing.model`) rejects `line`, and otherwise returns the grammar's tuple. Each search is Hypothesis's",
                    f"generate phase alone (no database, no shrinking), seeds {', '.join(map(str, SEEDS))}; it gives up at "
                    f"{SEARCH_MAX_EXAMPLES} examples or {SEARCH_MAX_SECONDS:.0f} s. Medians over the seeds; a search that gave up",
                    "counts with what it spent, and `>` marks a median that is only a lower bound.",
                    "Targeted = the whole domain of `line` the suite draws from: `strategies.lines()`, every class",
                    "of `LINE_KINDS` mixed (resume/testing/strategies/values.py).", "",
                    table(["bug", "targeted caught", "targeted examples", "targeted s",
                           "binary caught", "binary examples", "binary s",
                           "examples ratio (binary/targeted)", "seconds ratio"], rows)]
    if "suite" in figures:
        walls, (props, steps, plain) = figures["suite"]
        out += ["", "## The whole suite's wall time (properties/ + stateful/)", "",
                "Each run: `python -m pytest -q properties stateful [-n 2]` with `HYPOTHESIS_PROFILE` set and a fresh,",
                "empty example database; the serial `dev` run also carries the measuring plugin and statistics.", "",
                table(["profile", "workers", "wall s", "result"], walls),
                "", "## Examples per second, each property test (serial dev run)", "",
                "Test cases Hypothesis ran (all phases) over the seconds of the test's call.", "",
                table(["test", "examples", "s", "examples/s"], props),
                "", "## Steps per second, each state machine (serial dev run)", "",
                "Rule steps executed (counted after each step, see jobs/bench_plugin.py) over the test's seconds.", "",
                table(["state machine", "runs", "steps", "s", "steps/s"], steps)]
        if plain:
            out += ["", "Tests without Hypothesis (a fixed scenario):", "", table(["test", "s"], plain)]
    if "tests" in figures:
        out += ["", "## The README's test command (dev)", "",
                "`python3 -m pytest -n auto` in the project root, as a developer runs it (the project's example",
                "database, Hypothesis's caches warm): properties/, stateful/ and tests/, a worker per core and one",
                "more (conftest.py). CPU: user and system seconds of every process of the run. Bytecode is",
                "written, as on a newcomer's machine (`runner.run` removes `PYTHONDONTWRITEBYTECODE`): with it",
                "set, pytest rewrites every test file in every worker at each run, a second of CPU per worker.", "",
                table(["run", "wall s", "CPU s", "result"], figures["tests"])]
    if "yield" in figures:
        rows, missed = figures["yield"]
        out += ["", "## What each test is worth: its seconds and the known bugs it catches (dev)", "",
                "The lab's suite (`-m \"not power_loss\"`), not stopping at the first failure, against each known bug (`--hypothesis-seed=0`,",
                "the meta-test's; no shrinking) and against the reference, whose run gives each test's seconds.",
                "Per test function (its parameters together): the known bugs it catches, and those that no other",
                "test catches: what would be lost without it. Read from the catch matrix, `docs/catch-matrix.jsonl` (`python -m jobs.matrix`).", "",
                table(["test", "s (reference, dev)", "bugs caught", "caught by this test alone"], rows), "",
                f"Known bugs no test caught in this run: {', '.join(missed) or 'none'}."]
    if "catch" in figures:
        rows, why = figures["catch"]
        out += ["", "## Time to catch each known bug under dev (quality/)", ""]
        if rows is None:
            out += [f"To be filled: {why}."]
        else:
            from quality import meta  # catch_section imported it: rows come from it
            caught = [float(r[3]) for r in rows if not r[2].startswith("NOT CAUGHT")]
            out += ["`python -m pytest -x properties stateful` (`dev`, a random seed, a fresh example database, the",
                    f"suite's own order) against each known bug, {meta.jobs()} runs at a time: seconds from the start",
                    "of the pytest process to its end at the first failure, the catching test's own seconds (search",
                    "and shrink), and the shrunk counterexample's size.", "",
                    table(["step", "bug", "caught by", "first failure s", "test s", "counterexample"], rows), "",
                    f"Caught {len(caught)}/{len(rows)}" + (
                        f"; to the first failure: median {statistics.median(caught):.1f} s, "
                        f"90th percentile {percentile(caught, 90):.1f} s, worst {max(caught):.1f} s." if caught else ".")]
    if "check" in figures:
        out += ["", "## The learner's whole `resume check`, part by part (dev)", "",
                "`python3 -m resume check FILE` as a learner runs it (`--seed 0`, every part, in the lanes that share",
                "them out, `grading/lanes.py`; a fresh example database beside Hypothesis's warm caches, as in a",
                "learner's checks after the first, which builds them: 4 s more), one file after another: a stratified",
                "sample of the known bugs (every step; a hang, a leak, a swallowed cancellation among them), every",
                "correct variant and resume/client.py. Seconds per part as the report prints them (its tests' time,",
                "summed over the lanes that ran them); CPU: the same lanes' and what they reaped (for the whole check,",
                "every process it ran). Wall well beyond CPU is waiting.", "",
                *figures["check"]]
    # Every section says when it was measured: a run of a few sections keeps the others (merged).
    machine_rows = dict(figures["machine"])
    stamp = (f"_Measured {machine_rows.get('date (UTC)', '?')} UTC, load average "
             f"{machine_rows.get('load average (1/5/15 min) at start', '?')} at the start._")
    stamped = []
    for line in out:
        stamped.append(line)
        if line.startswith("## ") and line != "## The machine":
            stamped += ["", stamp]
    return "\n".join(stamped) + "\n"


def merged(old, new):
    """``new`` with the sections (``## `` headings) of ``old`` that it does not measure again.

    A section of ``old`` keeps its place after the one it followed; the
    preamble and the machine come from ``new``.
    """
    def sections(text):
        head, *parts = re.split(r"(?m)^(?=## )", text)
        return head, [(part.split("\n", 1)[0], part) for part in parts]

    head, fresh = sections(new)
    _, before = sections(old)
    fresh_titles = {title for title, _ in fresh}
    result = list(fresh)
    for index, (title, part) in enumerate(before):
        if title in fresh_titles:
            continue
        previous = [t for t, _ in before[:index]]
        at = max((i + 1 for i, (t, _) in enumerate(result) if t in previous), default=len(result))
        result.insert(at, (title, part if part.endswith("\n\n") else part.rstrip("\n") + "\n\n"))
    return head + "".join(part for _, part in result).rstrip("\n") + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections, comma-separated")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    parser.add_argument("--bugs", help="catch: only these known bugs (ids, comma-separated)")
    parser.add_argument("--yield", dest="yield_", action="store_true",
                        help="what each test is worth: the known bugs it catches alone (--only yield)")
    parser.add_argument("--first-failure", action="store_true",
                        help="the time to the first failure on every known bug alone (--only catch)")
    parser.add_argument("--check", action="store_true",
                        help="the learner's whole resume check, part by part, on known bugs and correct files (--only check)")
    parser.add_argument("--check-records", metavar="FILE",
                        help="check: the table from records saved by python -m jobs.check_bench --json FILE")
    parser.add_argument("--impl", help="implementation file (default: $RESUME_IMPL, else resume/client.py)")
    options = parser.parse_args(argv)
    only = (["catch"] if options.first_failure else ["yield"] if options.yield_ else ["check"] if options.check
            else [name for name in options.only.split(",") if name])
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    loader.choose(options.impl)
    if options.impl:
        os.environ[loader.ENV_VAR] = str(loader.chosen_path())  # the suite runs check it too

    figures = {"machine": machine()}
    if "commits" in only:
        print("[bench] commits...", file=sys.stderr, flush=True)
        figures["commits"] = commits_section()
    if "strategies" in only:
        figures["strategies"] = strategies_section()
    if "suite" in only:
        walls, records = suite_section()
        figures["suite"] = (walls, rates_tables(records))
    if "tests" in only:
        figures["tests"] = tests_section()
    if "yield" in only:
        figures["yield"] = yield_section(options.bugs.split(",") if options.bugs else None)
    if "catch" in only:
        figures["catch"] = catch_section(options.bugs.split(",") if options.bugs else None)
    if "check" in only:
        from jobs import check_bench
        saved = PROJECT_ROOT / "docs" / "check-bench.jsonl"
        if options.check_records:
            records = [json.loads(line) for line in open(options.check_records) if line.strip()]
            saved.write_text("".join(json.dumps(record) + "\n" for record in records))
        else:
            records = check_bench.run(saved)
        figures["check"] = check_bench.tables(records)

    text = report(figures, only)
    print(text)
    if not options.no_write:
        target = PROJECT_ROOT / "docs" / "BENCHMARKS.md"
        # Sections measured by jobs of their own (crash points, depth) stand
        # below KEPT_MARKER; a new run of this job keeps them as they are.
        old, _, kept = target.read_text().partition(KEPT_MARKER) if target.exists() else ("", "", "")
        target.write_text(merged(old, text) + ("\n" + KEPT_MARKER + kept if kept else ""))
        print(f"[bench] written to {PROJECT_ROOT / 'docs' / 'BENCHMARKS.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
