"""Run the verification suite against one implementation file and read the result.

``python -m resume check PATH`` is built on this module, and so is the
known-bug meta-test of ``quality/``. pytest runs in a subprocess (the suite
loads the implementation once per process), with ``--impl=PATH``; its JUnit
XML report gives the first failing test, its duration and its message, whose
Hypothesis notes hold the shrunk counterexample.

Test files map to the contract's steps by name: ``properties/test_step<N>_*.py``
is step N; ``stateful/`` is the protocol as a whole (steps 2-7).
"""

import ast
import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

# The checkout that holds conftest.py, properties/ and stateful/.
ROOT = pathlib.Path(__file__).resolve().parents[2]

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
    error: str = ""  # the failure's message, up to the example
    counterexample: str = ""  # the shrunk example Hypothesis printed, or the failure's message
    size: int | None = None  # its size: rule steps, or characters of the arguments
    unit: str | None = None  # "steps" or "chars"
    output: str = ""  # pytest's own output, for a diagnosis

    @property
    def caught(self):
        return self.status == "failed"


def step_paths(root=ROOT):
    """``[(label, [paths])]`` in order: steps 1-7, then the protocol machines."""
    groups = []
    for step, name in STEP_NAMES.items():
        files = sorted((root / "properties").glob(f"test_step{step}_*.py"))
        groups.append((f"step {step}  {name}", files))
    # Any other property file still belongs to the suite (none today).
    others = [path for path in sorted((root / "properties").glob("test_*.py"))
              if not re.match(r"test_step[1-7]_", path.name)]
    if others:
        groups.append(("other properties", others))
    stateful = root / "stateful"
    files = sorted(stateful.glob("test_*.py")) + sorted(stateful.glob("*_test.py"))
    groups.append((PROTOCOL, files))
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

    ``report`` is pytest's text of the failure (the example sits among the
    ``E`` lines, or in an exception group's ``|`` lines). A state machine's
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


def run_suite(impl, paths, *, root=ROOT, env=None, timeout=None, args=()):
    """Run pytest on ``paths`` against the file ``impl``, stopping at the first failure."""
    impl = pathlib.Path(impl).resolve()
    with tempfile.TemporaryDirectory(prefix="resume-check-") as tmp:
        report = pathlib.Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", f"--impl={impl}", "-x", "-q",
                   "-p", "no:cacheprovider", f"--junitxml={report}", *args,
                   *[str(p) for p in paths]]
        started = time.monotonic()
        # A session of its own, so that a timeout can end every process the
        # suite started (receivers, publishers), not only pytest.
        process = subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace", start_new_session=True)
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            return Outcome("timeout", time.monotonic() - started, output=output)
        wall = time.monotonic() - started
        return _read(process.returncode, report, wall, output, invariant_names(root))


def _read(returncode, report, wall, output, invariants=None):
    if returncode == 5:
        return Outcome("no tests", wall, output=output)
    if returncode not in (0, 1) or not report.exists():
        return Outcome("broken", wall, output=output)
    cases = ET.parse(report).getroot().iter("testcase")
    outcome = Outcome("passed" if returncode == 0 else "failed", wall, output=output)
    for case in cases:
        outcome.tests += 1
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None or outcome.test is not None:
            continue
        outcome.test = _node(case)
        outcome.test_seconds = float(case.get("time", 0))
        message = problem.get("message") or ""
        found = _EXAMPLE_START.search(message)
        outcome.error = message[:found.start() if found else len(message)].strip()
        example = (counterexample(problem.text or "", invariants)
                   or counterexample(message, invariants))
        if example:
            outcome.counterexample, outcome.size, outcome.unit = example
        else:  # a plain test, or an error outside Hypothesis
            outcome.counterexample = outcome.error
    if returncode == 1 and outcome.test is None:
        outcome.status = "broken"
    return outcome


def _node(case):
    # classname is "properties.test_step1_x" or "stateful.test_m.TestMachine".
    parts = case.get("classname", "").split(".")
    module = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    name = "::".join([parts[module] + ".py", *parts[module + 1:], case.get("name", "")])
    return name


# ------------------------------------------------ python -m resume check PATH

_WIDTH = 34


def _indent(text, prefix="      "):
    return "\n".join(prefix + line for line in text.splitlines())


def _shorten(text, lines=4):
    kept = text.splitlines()
    if len(kept) > lines:
        kept = kept[:lines] + ["..."]
    return "\n".join(kept)


def check(impl, *, profile=None, out=sys.stdout, root=ROOT):
    """Run the suite against ``impl`` step by step and print what failed; return an exit code.

    Each step runs in its own pytest process with ``-x``: the first failure of
    a step is the one shown, with its shrunk counterexample.
    """
    impl = pathlib.Path(impl).resolve()
    if not impl.is_file():
        print(f"error: no such file: {impl}", file=out)
        return 2
    if not (root / "conftest.py").is_file():
        print(f"error: the suite is not beside this package ({root}): "
              "check needs the project's checkout", file=out)
        return 2
    env = dict(os.environ)
    env.pop("RESUME_IMPL", None)
    env["HYPOTHESIS_PROFILE"] = profile or os.environ.get("HYPOTHESIS_PROFILE") or "dev"
    print(f"checking {impl}\nagainst the suite in {root} (Hypothesis profile {env['HYPOTHESIS_PROFILE']})\n",
          file=out, flush=True)
    failed = []
    for label, files in step_paths(root):
        print(f"{label} ".ljust(_WIDTH, "."), end=" ", file=out, flush=True)
        if not files:
            print("no tests yet", file=out, flush=True)
            continue
        outcome = run_suite(impl, files, root=root, env=env)
        if outcome.status == "passed":
            tests = f"{outcome.tests} test{'' if outcome.tests == 1 else 's'}"
            print(f"ok    ({tests}, {outcome.wall:.1f} s)", file=out, flush=True)
            continue
        failed.append((label, files))
        if outcome.status == "failed":
            print(f"FAIL  ({outcome.wall:.1f} s)", file=out)
            print(f"      {outcome.test}", file=out)
            if outcome.error:
                print(_indent(_shorten(outcome.error)), file=out)
            if outcome.counterexample and outcome.counterexample != outcome.error:
                print(_indent(outcome.counterexample), file=out)
        else:
            print(f"{outcome.status.upper()}  (pytest could not run this step)", file=out)
            print(_indent(_shorten(outcome.output.strip(), 15)), file=out)
        out.flush()
    print(file=out)
    if not failed:
        print("every step passed.", file=out)
        return 0
    print(f"{len(failed)} of {len(step_paths(root))} parts failed. To see one in full:", file=out)
    label, files = failed[0]
    names = " ".join(str(f.relative_to(root)) for f in files)
    print(f"  cd {root} && python -m pytest --impl={impl} {names}", file=out)
    return 1
