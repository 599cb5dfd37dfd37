"""Run the verification suite against one implementation file and read the result.

``python -m resume check PATH`` is built on this module, and so is the
known-bug meta-test of ``quality/``. pytest runs in a subprocess (the suite
loads the implementation once per process), with ``--impl=PATH``, through
``runner.run``: its report hooks give the first failing test, its duration,
its error, and the notes Hypothesis attached to it, which hold the shrunk
counterexample. ``check()`` prints all of that for each failing step
(``failure_report``), with the command that runs the test again.

Test files map to the contract's steps by name: ``properties/test_step<N>_*.py``
is step N; ``stateful/`` is the protocol as a whole (steps 2-7).
"""

import ast
import dataclasses
import os
import pathlib
import re
import shlex
import sys

from resume.testing import loader, runner

# The checkout that holds conftest.py, properties/ and stateful/.
ROOT = runner.ROOT

# The Hypothesis profiles conftest.py registers for the suite.
PROFILES = ("dev", "ci", "fuzz")

STEP_NAMES = {
    1: "parse_line",
    2: "open_store, state",
    3: "apply_event",
    4: "replay",
    5: "consume_line",
    6: "consume_session",
    7: "run_client",
}
PROTOCOL = "protocol (steps 2-7)"
DEEPER = "deeper levels (crashes, long runs, two receivers)"

# Hypothesis has printed the shrunk example under both names over its versions.
_EXAMPLE_START = re.compile(r"(Failing test case|Falsifying (explicit )?example):")


@dataclasses.dataclass
class Outcome:
    """What one pytest run said about one implementation."""

    status: str  # "passed", "failed", "no tests", "broken" (pytest could not run), "timeout"
    wall: float  # seconds from start to the end of the run (-x: to the first failure)
    tests: int = 0  # test cases run
    test: str | None = None  # the first failing test, as "file.py::name"
    test_seconds: float | None = None  # how long that test ran (search and shrink)
    error: str = ""  # the error's type and message ("broken": pytest's collection errors)
    counterexample: str = ""  # the Hypothesis notes from the example on, or the error
    size: int | None = None  # its size: rule steps, or characters of the arguments
    unit: str | None = None  # "steps" or "chars"
    output: str = ""  # pytest's own output, for a diagnosis
    failure: "runner.TestResult | None" = None  # the first failing test, whole

    @property
    def caught(self):
        return self.status == "failed"


def step_paths(root=ROOT):
    """``[(label, [paths])]`` in the suite's order: cheapest and highest-yield first.

    Steps 1-7, then the protocol machine (steps 2-7 together), then the
    deeper levels (crashes, long runs, foreign stores, two receivers), which
    cost the most and catch least that the steps have not caught already.
    The root conftest.py sorts a plain ``pytest`` run in this order too.
    """
    groups = []
    for step, name in STEP_NAMES.items():
        files = sorted((root / "properties").glob(f"test_step{step}_*.py"))
        groups.append((f"step {step}  {name}", files))
    stateful = root / "stateful"
    machines = sorted(stateful.glob("test_*.py")) + sorted(stateful.glob("*_test.py"))
    protocol = [path for path in machines if path.name == "test_protocol.py"]
    groups.append((PROTOCOL, protocol))
    deeper = [path for path in sorted((root / "properties").glob("test_*.py"))
              if not re.match(r"test_step[1-7]_", path.name)]
    deeper += [path for path in machines if path not in protocol]
    if deeper:
        groups.append((DEEPER, deeper))
    return groups


def suite_paths(root=ROOT, first_step=None):
    """Every test file of the suite: ``first_step``'s first, the state machines (slowest) last."""
    groups = step_paths(root)
    if first_step is not None:
        own = groups[first_step - 1]
        groups = [own] + [g for g in groups if g is not own]
    return [path for _, files in groups for path in files]


def counterexample(report, invariants=None):
    """``(text, size, unit)`` of the first shrunk example in a failure report.

    ``report`` is the text of Hypothesis's notes on the failure (or pytest's
    text of it: the example among the ``E`` lines). A state machine's
    size is its number of rule steps: ``state.x(...)`` lines, without the
    invariant checks Hypothesis prints after each step (``invariants``, the
    names; guessed from the example if not given)
    and without teardown. A property's size is the length of its arguments'
    text, comments such as ``# or any other generated value`` left out.
    ``None`` if there is no Hypothesis example in the report.
    """
    lines = report.splitlines()
    for index, line in enumerate(lines):
        found = _EXAMPLE_START.search(line)
        if found:
            break
    else:
        return None
    prefix = line[:found.start()]
    example = [line[found.start():]]
    ended = "(" in line and not line.endswith("(")  # the call all on one line
    for line in lines[index + 1:]:
        if not line.startswith(prefix):
            break
        line = line[len(prefix):]
        if ended and not line.startswith("Draw "):  # st.data() draws follow the call
            break
        if line.lstrip().startswith("impl=<module "):
            continue  # the implementation fixture: the learner's own file, not an input
        example.append(line)
        if line == "state.teardown()":
            break
        ended = ended or line == ")"
    text = "\n".join(example)
    calls = [line for line in example[1:] if line.startswith("state.") and line != "state.teardown()"]
    if any(line.startswith("state = ") for line in example):
        if invariants is None:
            invariants = _invariants(example)
        return text, sum(1 for c in calls if _name(c) not in invariants), "steps"
    head = example[0]
    inputs = []
    if "(" in head and not head.endswith("("):  # all on one line: name(a=1, b=2)
        inputs.append(head[head.index("(") + 1:head.rindex(")")])
    for line in example[1:]:
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line.startswith("Draw "):  # "Draw 1: value" or "Draw 1 (label): value"
            line = line.split(": ", 1)[-1]
        elif line.startswith("#") or line == ")":
            continue
        inputs.append(line)
    return text, len("".join(inputs)), "chars"


def _name(call):
    return call[len("state."):].split("(", 1)[0]


def invariant_names(root=ROOT):
    """The names of the suite's ``@invariant()`` methods, read from stateful/'s source.

    Hypothesis prints an invariant check as ``state.name()`` after every step,
    so these lines are left out of a state machine's step count.
    """
    names = set()
    for path in sorted((root / "stateful").glob("*.py")):
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    name = getattr(target, "id", None) or getattr(target, "attr", None)
                    if name == "invariant":
                        names.add(node.name)
    return names


def _invariants(example):
    # Without the source at hand: Hypothesis checks (and prints) every
    # invariant right after creating the machine, then after each step, so
    # the run of argument-less calls right after "state = X()" names them
    # (a machine with @initialize rules checks none there).
    names = set()
    after = [line for line in example if line.startswith("state")]
    for line in after[1:]:
        if not line.endswith("()") or line == "state.teardown()":
            break
        names.add(_name(line))
    if len(names) == len([line for line in after[1:] if line.startswith("state.")]) - 1:
        return set()  # nothing but those calls: they were the steps
    return names


def run_suite(impl, paths, *, root=ROOT, profile=None, storage=None, timeout=None, args=()):
    """Run pytest on ``paths`` against the file ``impl``, stopping at the first failure.

    Through ``runner.run``: a fresh example database unless ``storage`` says
    otherwise (``runner.KEEP``), the child's process group ended on timeout.
    """
    impl = pathlib.Path(impl).resolve()
    result = runner.run([f"--impl={impl}", "-x", "-q", "-p", "no:cacheprovider", *args,
                         *[str(p) for p in paths]],
                        root=root, profile=profile, storage=storage, timeout=timeout)
    return outcome(result, invariant_names(root))


def outcome(result, invariants=None):
    """The ``Outcome`` of one ``runner.Run``: the first failing test and its example."""
    out = Outcome("passed", result.wall, output=result.output)
    if result.timed_out:
        out.status = "timeout"
        return out
    if result.returncode == 5:
        out.status = "no tests"
        return out
    out.tests = sum(1 for test in result.tests if "::" in test.nodeid)
    failures = [test for test in result.failures if "::" in test.nodeid]
    if result.returncode not in (0, 1) or (result.returncode == 1 and not failures):
        out.status = "broken"  # pytest could not run (usage, collection or internal error)
        collect = [test.longrepr for test in result.failures if "::" not in test.nodeid]
        out.error = "\n".join(collect)
        return out
    if result.returncode == 0:
        return out
    out.status = "failed"
    first = failures[0]
    out.failure = first
    out.test = _short_node(first.nodeid)
    out.test_seconds = first.duration
    entry = first.failures[0] if first.failures else None
    out.error = entry["error"] if entry else first.longrepr
    notes = "\n".join(entry["notes"]) if entry else ""
    example = counterexample(notes, invariants) if notes else None
    if example:
        out.counterexample, out.size, out.unit = example
    else:  # a plain test, or an error outside Hypothesis
        out.counterexample = out.error
    return out


def _short_node(nodeid):
    # "properties/test_step1_x.py::test_y" -> "test_step1_x.py::test_y", as the reports show it.
    path, _, rest = nodeid.partition("::")
    return f"{pathlib.PurePath(path).name}::{rest}" if rest else nodeid


# ------------------------------------------------ python -m resume check PATH

_WIDTH = 34
_PAD = "      "


def _indent(text, prefix=_PAD):
    return "\n".join((prefix + line).rstrip() for line in text.splitlines())


def reproduce_command(impl, nodeid, root=ROOT):
    """The shell command that runs that one test again (the example database replays it)."""
    return (f"cd {shlex.quote(str(root))} && python -m pytest "
            f"--impl={shlex.quote(str(impl))} {shlex.quote(nodeid)}")


def failure_report(test, impl, root=ROOT):
    """Everything a learner needs about one failing test, as text.

    For each error (several when Hypothesis found distinct failures): every
    note Hypothesis attached, whole (the falsifying example under any
    heading, each draw, each ``note()``, a state machine's steps) except the
    line that only repeats the implementation module; the failing line of the
    suite with the comment above it; the error itself; the output captured
    while it ran; then the command that runs this one test again.
    """
    parts = [test.nodeid]
    entries = test.failures
    for number, entry in enumerate(entries, 1):
        if len(entries) > 1:
            parts.append(f"-- failure {number} of {len(entries)}")
        notes = [line for note in entry["notes"] for line in note.splitlines()
                 if not line.lstrip().startswith("impl=<module ")]
        if notes:
            parts.append("\n".join(notes))
        where = entry.get("where")
        if where:
            parts.append(f"failed at {where['file']}:{where['line']}:\n{_indent(where['source'], '    ')}")
        raised = entry.get("raised_in")
        if raised:
            parts.append(f"raised in {raised['file']}:{raised['line']}: {raised['source']}")
        parts.append(entry["error"])
    if not entries:  # no exception at hand (a failure pytest reported some other way)
        parts.append(test.longrepr)
    for title, text in test.sections:
        if text.strip():
            parts.append(f"-- {title}\n{text.rstrip()}")
    parts.append(f"to run this test again (it replays the same example):\n"
                 f"  {reproduce_command(impl, test.nodeid, root)}")
    return "\n".join(parts)


def check(impl, *, profile=None, steps=None, seed=None, storage=runner.KEEP,
          out=None, err=None, root=ROOT, run=None):
    """Run the suite against ``impl`` step by step and print what failed; return an exit code.

    The file is loaded once first: a file that cannot be loaded gives one
    line on ``err`` and exit 2, before any step runs. Each step then runs in
    its own pytest process with ``-x``: the first failure of a step is shown
    whole (``failure_report``). ``steps``: labels' first words to run
    (``["3", "protocol"]``), all by default. ``seed``: Hypothesis's seed
    (``--hypothesis-seed``), random by default. The project's example database
    is kept (``storage``), so the command printed to run a test again replays
    its example. ``run``: what runs one step (``run_suite``; a test wraps it
    to see the structured outcome behind the printed report).
    Exit 0: every step passed; 1: a step failed; 2: a step could not run.
    """
    out = out or sys.stdout  # looked up now: a caller may have redirected them
    err = err or sys.stderr
    impl = pathlib.Path(impl).expanduser().resolve()
    try:
        loader.load(impl)
    except loader.ImplError as error:
        print(f"resume check: {error}", file=err)
        return 2
    if not (root / "conftest.py").is_file():
        print(f"resume check: the suite is not beside this package ({root}): "
              "install resume from its checkout (pip install -e .)", file=err)
        return 2
    profile = profile or os.environ.get("HYPOTHESIS_PROFILE") or "dev"
    if profile not in PROFILES:
        print(f"resume check: HYPOTHESIS_PROFILE={profile} is not a profile of the suite: "
              f"use one of {', '.join(PROFILES)} (or unset it)", file=err)
        return 2
    print(f"checking {impl}\nagainst the suite in {root} (Hypothesis profile {profile})\n",
          file=out, flush=True)
    groups = [(label, files) for label, files in step_paths(root)
              if steps is None or _key(label) in steps]
    failed, broken = [], []
    for label, files in groups:
        print(f"{label} ".ljust(_WIDTH, "."), end=" ", file=out, flush=True)
        if not files:
            print("no tests yet", file=out, flush=True)
            continue
        args = () if seed is None else (f"--hypothesis-seed={seed}",)
        result = (run or run_suite)(impl, files, root=root, profile=profile, storage=storage,
                                    args=args)
        if result.status == "passed":
            tests = f"{result.tests} test{'' if result.tests == 1 else 's'}"
            print(f"ok    ({tests}, {result.wall:.1f} s)", file=out, flush=True)
            continue
        if result.status == "failed":
            failed.append(label)
            print(f"FAIL  ({result.wall:.1f} s)", file=out)
            print(_indent(failure_report(result.failure, impl, root)) + "\n", file=out)
        else:
            broken.append(label)
            print(f"{result.status.upper()}  (pytest could not run this step)", file=out)
            detail = result.error or "\n".join(result.output.strip().splitlines()[-15:])
            print(_indent(detail) + "\n", file=out)
        out.flush()
    print(file=out)
    if failed:
        print(f"{len(failed)} of {len(groups)} parts failed: {', '.join(failed)}.", file=out)
        return 1
    if broken:
        print(f"{len(broken)} of {len(groups)} parts could not run: {', '.join(broken)}.", file=out)
        return 2
    print("every step passed." if steps is None else "every step checked passed.", file=out)
    return 0


def _key(label):
    """A label's short name: "3" for "step 3  apply_event", "protocol", "deeper"."""
    words = label.split()
    return words[1] if words[0] == "step" else words[0]
