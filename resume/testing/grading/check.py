"""Run the verification suite against one implementation file and read the result.

``python -m resume check PATH`` is built on this module, and so is the
known-bug meta-test of ``quality/``. pytest runs in a subprocess (the suite
loads the implementation once per process), with ``--impl=PATH``, through
``runner.run``: its report hooks give the first failing test, its duration,
its error, and the notes Hypothesis attached to it, which hold the shrunk
counterexample (``Outcome``). ``check()`` prints, for each failing step, the
learner's verdict built from it (``resume.testing.grading.verdict``: the clause of
SPEC.md, what the test did, expected and got, the line that runs it again),
or one JSON document for all the files checked (docs/CHECK_JSON.md).

Test files map to the contract's steps by name: ``properties/test_step<N>_*.py``
is step N; ``stateful/test_protocol.py`` is the protocol as a whole (steps
2-7); the other files are the deeper levels. ``properties/test_power_loss.py``
(marked ``power_loss``) is the level beyond the lab, reported apart.
"""

import ast
import dataclasses
import json
import os
import pathlib
import random
import re
import sys
import threading
import time

from resume.testing.grading import lanes, probe, room, runner, verdict
from resume.testing import model, spec, suite
from resume.testing.suite import PROFILES, step_paths

ROOT = suite.ROOT

# Hypothesis has printed the shrunk example under both names over its versions.
_EXAMPLE_START = re.compile(r"(Failing test case|Falsifying (explicit )?example):")


@dataclasses.dataclass
class Outcome:
    """What one pytest run said about one implementation."""

    status: str  # "passed", "failed", "no tests", "broken" (pytest could not run), "timeout", "ended" (by the file)
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
    cpu: float | None = None  # CPU seconds of the run (``runner.Run.cpu``)
    stack: str = ""  # "timeout" in ``lanes``: the process's stack when the test was stopped (faulthandler's text)
    call: str = ""  # "ended" in ``lanes`` (the file ended the process): the call of the file's that did
    where: str | None = None  # ... and the line ("client.py:12  os._exit(0)")

    @property
    def caught(self):
        return self.status == "failed"


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


# ast.parse in two threads at once fails now and then under CPython 3.11.7
# ("SystemError: AST constructor recursion depth mismatch"); check() runs in
# threads in the tests of its report, so the parse is serialised.
_PARSE = threading.Lock()


def invariant_names(root=ROOT):
    """The names of the suite's ``@invariant()`` methods, read from stateful/'s source.

    Hypothesis prints an invariant check as ``state.name()`` after every step,
    so these lines are left out of a state machine's step count.
    """
    with _PARSE:
        return _invariant_names(root)


def _invariant_names(root):
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


def run_suite(impl, paths, *, root=ROOT, profile=None, storage=None, timeout=None, args=(), extra_env=None):
    """Run pytest on ``paths`` against the file ``impl``, stopping at the first failure.

    Through ``runner.run``: a fresh example database unless ``storage`` says
    otherwise (``runner.KEEP``), the child's process group ended on timeout.
    """
    impl = pathlib.Path(impl).resolve()
    result = runner.run([f"--impl={impl}", "-x", "-q", "-p", "no:cacheprovider", *args,
                         *[str(p) for p in paths]],
                        root=root, profile=profile, storage=storage, timeout=timeout, extra_env=extra_env)
    return outcome(result, invariant_names(root))


def outcome(result, invariants=None):
    """The ``Outcome`` of one ``runner.Run``: the first failing test and its example."""
    out = Outcome("passed", result.wall, output=result.output, cpu=result.cpu)
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

POWER_FILE = "properties/test_power_loss.py"  # the level beyond the lab (SPEC.md decision 18)
POWER_LABEL = "beyond the lab: an ACK that survives a power cut"


def new_seed():
    """A seed for a run that was given none: printed in every rerun line, so the run can be repeated."""
    return random.SystemRandom().randrange(1, 1_000_000)


def check(impl, *, profile=None, steps=None, seed=None, storage=runner.KEEP,
          out=None, err=None, root=ROOT, seen=None, as_json=False):
    """Run the suite against one file, or several, step by step; print the verdict; return an exit code.

    ``impl``: a path, or a list of paths (each is checked in turn, and the
    exit code is the worst). Each file is loaded once first: a file that
    cannot be loaded gives one line on ``err`` (and, with ``as_json``, an
    entry of status ``"unusable"``), before any of its steps runs. Its parts
    (steps 1-7, the protocol machine, the deeper levels once every step has
    passed) then run each to its first failure, taken in order by a few pytest
    processes (``lanes.run_parts``), and are reported in order as each ends;
    the first failure of a part is reported in the learner's
    words (``resume.testing.grading.verdict``): the clause of SPEC.md, what the test
    did, expected and got, and the line that runs it again. When
    ``properties/test_power_loss.py`` exists, its level (the tests marked
    ``power_loss``, which the lab's parts leave out) is run after the lab and reported as a verdict of its own, which does not change the exit code.

    ``steps``: parts to run (``["3", "protocol", "power"]``), all by default.
    ``seed``: Hypothesis's seed (``--hypothesis-seed``); a new one is drawn
    and printed when none is given, so that every rerun line can name it
    (none under a derandomized profile, ``ci``: its examples need no seed).
    A rerun draws the same examples from the seed it names: Hypothesis keeps
    no examples under a forced seed (its database key is None then), so
    ``storage`` (the project's, by default) holds only the caches it reads
    at start, the Unicode tables and the constants of each source file. ``seen``: called with each part's key and
    ``Outcome`` as it ends (a test looks at the structured outcome behind the report).
    ``as_json``: print one JSON document (docs/CHECK_JSON.md) instead of text.
    Exit 0: every part of the lab passed; 1: one failed; 2: a part, or a
    file, could not be checked.
    """
    out = out or sys.stdout  # looked up now: a caller may have redirected them
    err = err or sys.stderr
    paths = [impl] if isinstance(impl, (str, os.PathLike)) else list(impl)
    if not (root / "conftest.py").is_file():
        print(f"resume check: the suite is not beside this package ({root}): "
              "install resume from its checkout (pip install -e .)", file=err)
        return 2
    profile = profile or os.environ.get("HYPOTHESIS_PROFILE") or "dev"
    if profile not in PROFILES:
        print(f"resume check: HYPOTHESIS_PROFILE={profile} is not a profile of the suite: "
              f"use one of {', '.join(PROFILES)} (or unset it)", file=err)
        return 2
    if profile in suite.DERANDOMIZED:
        seed = None  # the examples come from each test's name: no seed changes them
    else:
        seed = new_seed() if seed is None else seed
    document = {"schema": JSON_SCHEMA, "suite": str(root), "profile": profile, "seed": seed, "files": []}
    codes = []
    for index, path in enumerate(paths):
        if index and not as_json:
            print(file=out)  # a blank line between files
        entry, code = _check_one(path, profile=profile, steps=steps, seed=seed, storage=storage,
                                 out=None if as_json else out, err=err, root=root, seen=seen)
        if entry["status"] == "unusable" and len(paths) > 1 and not as_json and not entry["steps"] \
                and not entry["error"].startswith("not graded"):  # (said in its report)
            print(f"{entry['file']}: not checked: {entry['error']}", file=out)
        document["files"].append(entry)
        codes.append(code)
    code = 2 if 2 in codes else max(codes)
    if as_json:
        document["exit"] = code
        json.dump(document, out, indent=2, ensure_ascii=False)
        print(file=out)
    elif len(paths) > 1:
        bad = [str(entry["file"]) for entry in document["files"] if entry["status"] != "pass"]
        print(file=out)
        print(f"{len(paths) - len(bad)} of {len(paths)} files pass" + (f"; not: {', '.join(bad)}" if bad else "")
              + ".", file=out)
    out.flush()
    return code


JSON_SCHEMA = "resume-check/2"  # docs/CHECK_JSON.md


def _check_one(impl, *, profile, steps, seed, storage, out, err, root, seen):
    """Check one file: ``(its JSON entry, its exit code)``; prints its text report to ``out`` if given."""
    impl = pathlib.Path(impl).expanduser().resolve()
    entry = {"file": str(impl), "status": "unusable", "error": None, "steps": [], "summary": None,
             "beyond_the_lab": None}
    with room.room() as guest:  # the file runs in folders of its own, removed after (grading.room)
        return _check_in(impl, guest, entry, time.monotonic(), profile=profile, steps=steps, seed=seed, storage=storage,
                         out=out, err=err, root=root, seen=seen)


def _check_in(impl, guest, entry, began, *, profile, steps, seed, storage, out, err, root, seen):
    # Loaded in a process of its own, never here (grading.probe): a file half written is checked
    # step by step, by the names it defines.
    module = probe.probe(impl, guest)
    if module.error:
        print(f"resume check: {module.error}", file=err)
        entry["error"] = module.error
        return entry, 2

    def say(text="", **kwargs):
        if out is not None:
            print(text, file=out, flush=True, **kwargs)

    drawn = "derandomized" if seed is None else f"seed {seed}"
    say(f"checking {impl}\nagainst the suite in {root} (Hypothesis profile {profile}, {drawn})\n")
    invariants = invariant_names(root)
    groups = [(_key(label), label, files) for label, files in step_paths(root)
              if steps is None or _key(label) in steps]
    # The parts whose public names are not all written yet are not run: ``{part: the names}``.
    unwritten = {key: lacking for key, _, _ in groups
                 if (lacking := module.missing(model.names_for(int(key) if key.isdigit() else None)))}
    verdicts = []
    seed_args = () if seed is None else (f"--hypothesis-seed={seed}",)
    power = root / POWER_FILE
    with_power = power.is_file() and (steps is None or "power" in steps) and not module.missing()
    bounded = {suite.SHRINK_VAR: str(suite.SHRINK_SECONDS)}  # the learner waits: shrinking is bounded
    # The deeper levels run only once every step has passed: where a step fails they would
    # mostly find the same bug again, at the highest cost (lanes: they wait for the steps).
    asked = [key for key, _, _ in groups if key.isdigit()]
    runs = [(key, files) for key, _, files in groups if files and key not in unwritten
            and not (key == DEEPER and any(step in unwritten for step in asked))]
    runs += [(suite.POWER, [power])] if with_power else []
    # The deeper levels' state machines first: each is one long unit that runs a session at a time
    # (the crash machine: 15 s under ci); taken after the sweeps, it ran on alone, the other lanes done.
    runs = [(key, sorted(files, key=lambda path: pathlib.Path(path).parent.name != "stateful")
             if key == DEEPER else files) for key, files in runs]
    ended = lanes.run_parts(impl, runs, gate=[key for key, _ in runs if key.isdigit()], gated=DEEPER, whole=[suite.POWER],
                            root=root, profile=profile, storage=storage, args=seed_args,
                            extra_env={**bounded, **guest.env}, cwd=guest.work,
                            outcome=lambda result: outcome(result, invariants),
                            bound=suite.UNIT_SECONDS.get(profile))
    results = {}

    def result_of(part):  # the parts end in order: the next one's outcome, when it has ended
        while part not in results:
            key, found = next(ended)
            results[key] = found
            if seen:
                seen(key, found)
        return results[part]

    try:
        for key, label, files in groups:
            say(verdict.leader(label), end="")
            result = result_of(key) if any(key == run for run, _ in runs) else None
            if key in unwritten:
                found = verdict.Verdict(key, label, "not written yet", detail=", ".join(unwritten[key]))
            elif key == DEEPER and (result is None or result.status == "not run"):
                failing = [v.part for v in verdicts if v.part.isdigit() and v.status not in ("ok", "no tests")]
                found = verdict.Verdict(key, label, "not run", detail=(
                    f"step{'s' if len(failing) > 1 else ''} {verdict.joined(failing)} "
                    f"{'do' if len(failing) > 1 else 'does'} not pass yet"))
            elif result is None or result.status == "no tests":  # no file, or only the power level's tests
                found = verdict.Verdict(key, label, "no tests")
            else:
                found = verdict.from_outcome(key, label, result, impl, seed, profile, invariants)
            verdicts.append(found)
            say(verdict.render(found, label=False))
        power_result = result_of(suite.POWER) if with_power else None
        for _ in ended:  # nothing is left: this waits for the lanes to end
            pass
    except lanes.Tampered as error:  # no verdict of this file can be trusted, the ones shown neither
        say("NOT GRADED\n")
        entry["error"] = f"not graded: {error}"
        say(f"{impl.name}: {entry['error']}")
        print(f"resume check: {impl}: {entry['error']}", file=err)
        return entry, 2
    except BaseException:  # Ctrl-C: end every lane now, and leave nothing running
        ended.close()
        raise
    entry["steps"] = [v.as_json() for v in verdicts]
    summary, code = _summary(verdicts)
    entry["summary"] = summary
    entry["status"] = {0: "pass", 1: "fail", 2: "broken"}[code]
    if verdicts and verdicts[-1].status in ("ok", "no tests"):
        say()  # a failing part's block ends with a blank line already
    if with_power:
        say(verdict.leader(POWER_LABEL), end="")
        found = verdict.from_outcome("power", POWER_LABEL, power_result, impl, seed, profile, invariants)
        if found.status == "FAIL":
            found.clause, found.where, found.quote = "D18", spec.place("D18"), spec.sentence("D18")
            if not found.expected or found.expected.startswith("no exception"):
                found.expected = "every event ACKed before the power cut still in the store after the restart"
        say(verdict.render(found, label=False))
        say("    (not part of the lab: this verdict does not change the exit code)\n")
        entry["beyond_the_lab"] = found.as_json()
    took = f"(checked in {time.monotonic() - began:.1f} s)"
    if verdicts:
        say(f"{summary[:-1]} {took}.")
        if code == 0:
            say("every step passed." if steps is None else "every step checked passed.")
    elif with_power:  # only the level beyond the lab was asked for
        say(f"the level beyond the lab {'passes' if found.status == 'ok' else 'does not pass'} {took}.")
    return entry, code


def _summary(verdicts):
    """The closing line (``4 of 7 steps pass; ...``) and the exit code of the lab's parts."""
    unwritten = [v for v in verdicts if v.part.isdigit() and v.status == "not written yet"]
    numbered = [v for v in verdicts if v.part.isdigit() and v.status not in ("no tests", "not written yet")]
    passed = [v for v in numbered if v.status == "ok"]
    failed = [v for v in verdicts if v.status in ("FAIL", "not written yet", "timeout")]  # timeout: a call never ended
    broken = [v for v in verdicts if v.status == "broken"]
    words = []
    asked = len([v for v in verdicts if v.part.isdigit()])
    if unwritten and asked == 1:
        words.append(f"step {unwritten[0].part} is not written yet")
    elif unwritten:
        words.append(f"{asked - len(unwritten)} of {asked} steps written "
                     f"(not yet: step{'s' if len(unwritten) > 1 else ''} {verdict.joined([v.part for v in unwritten])})")
    if len(numbered) == 1:
        state = {"ok": "passes", "FAIL": "fails", "no tests": "has no tests"}.get(numbered[0].status,
                                                                                 "could not run")
        words.append(f"step {numbered[0].part} {state}")
    elif numbered and unwritten:
        words.append(f"{len(passed)} of the {len(numbered)} written pass" + (
            f" (step{'s' if len(numbered) - len(passed) > 1 else ''} "
            f"{verdict.joined([v.part for v in numbered if v.status == 'FAIL'])} "
            f"fail{'' if len(numbered) - len(passed) > 1 else 's'})" if len(passed) < len(numbered) else ""))
    elif numbered:
        text = f"{len(passed)} of {len(numbered)} steps pass"
        failing = [v.part for v in numbered if v.status == "FAIL"]
        if failing:
            text += f" (step{'s' if len(failing) > 1 else ''} {verdict.joined(failing)} fail{'' if len(failing) > 1 else 's'})"
        words.append(text)
    for v in verdicts:
        if not v.part.isdigit() and v.status != "no tests":
            name = {"protocol": "the protocol machine", "deeper": "the deeper levels"}.get(v.part, v.part)
            words.append(f"{name}: {v.status}")
    if broken:
        words.append(f"could not run: {verdict.joined([v.label.split('  ')[0] for v in broken])}")
    code = 1 if failed else 2 if broken else 0
    return ("; ".join(words) or "no part of the lab was run") + ".", code


_key = suite.part_key
DEEPER = _key(suite.DEEPER)
