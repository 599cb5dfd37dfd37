"""The one way this project runs pytest in a subprocess: ``run(args)``.

Used by ``resume check`` (``check.py``), the known-bug meta-test
(``quality/meta.py``), the mutation, bench and fuzz jobs, and the tests of
the shared example database. What every caller gets alike:

* an environment scrubbed the same way (``environment()``): the shared example database
  (``HYPOTHESIS_DATABASE``, ``..._READONLY``) removed unless
  ``keep_database=True``, a FRESH empty ``HYPOTHESIS_STORAGE_DIRECTORY`` (a
  temporary folder, removed afterwards) unless the caller keeps the usual one
  (``storage="keep"``) or names one, ``PYTHONPATH`` starting with the project
  root, ``PYTHONDONTWRITEBYTECODE`` removed (the suite's own modules and
  pytest's rewritten tests are compiled once, not in every child: 0.6-0.8 s
  a run; the loader never writes bytecode for the file under test, so its
  folder still gets no ``__pycache__``), and ``HYPOTHESIS_PROFILE`` when
  ``profile`` is given;
* the child in a session (process group) of its own, so that a timeout, an
  exception or Ctrl-C in the caller ends pytest AND every process it started
  (receivers, xdist workers), and nothing is left running;
* structured results (``Run.tests``): for each test its outcome, duration and,
  on failure, the falsifying example, notes, error and failing line, written
  by the child's ``report_plugin`` from pytest's report hooks - no pattern is
  matched against the console text, which is kept only for display
  (``Run.output``).
"""

import contextlib
import dataclasses
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

from resume.testing import spec

# The checkout that holds conftest.py, properties/ and stateful/.
ROOT = spec.ROOT
RESULTS_VAR = "RESUME_RUNNER_RESULTS"  # where the child's report_plugin writes its JSON lines
KEEP = "keep"  # storage=KEEP: Hypothesis's usual .hypothesis/ (replays what failed before)


@dataclasses.dataclass
class TestResult:
    """One test as the child's report hooks saw it."""

    nodeid: str
    outcome: str = "passed"  # "passed", "failed", "error" (setup/teardown/collection), "skipped"
    duration: float = 0.0  # seconds of its call phase (search and shrink, for a property)
    longrepr: str = ""  # pytest's own text of the failure
    sections: list = dataclasses.field(default_factory=list)  # [(title, text)]: captured output...
    failures: list = dataclasses.field(default_factory=list)  # report_plugin's entries, one per error

    @property
    def failed(self):
        return self.outcome in ("failed", "error")


@dataclasses.dataclass
class Run:
    """One pytest process: its exit code, how long it took, what each test did."""

    returncode: int | None  # None if it was ended by the timeout
    wall: float
    output: str = ""  # the console text (stdout and stderr), for display only
    tests: list = dataclasses.field(default_factory=list)  # [TestResult] in report order
    timed_out: bool = False
    cpu: float | None = None  # CPU seconds of the child and what it reaped (None: it never said)

    @property
    def failures(self):
        return [test for test in self.tests if test.failed]


def environment(*, root=ROOT, profile=None, keep_database=False, storage=None, extra=None):
    """The child's environment (see the module's docstring); ``storage`` a folder or KEEP."""
    env = dict(os.environ)  # RESUME_IMPL stays: callers that name a file pass --impl, which wins
    env.pop(RESULTS_VAR, None)
    # The child's options are the caller's arguments alone: a PYTEST_ADDOPTS of
    # the parent run (CI's "-n 2") would make the child spread itself over
    # workers, where -x and the results file mean something else.
    env.pop("PYTEST_ADDOPTS", None)
    if not keep_database:
        env.pop("HYPOTHESIS_DATABASE", None)
        env.pop("HYPOTHESIS_DATABASE_READONLY", None)
    if storage != KEEP:
        env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
        if storage is not None:
            env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(storage)
    if profile:
        env["HYPOTHESIS_PROFILE"] = profile
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    # Bytecode for the suite's own modules (the file under test never gets any: loader.load).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra or {})
    return env


def run(args, *, root=ROOT, cwd=None, profile=None, keep_database=False, storage=None,
        extra_env=None, timeout=None, stop_signal=signal.SIGKILL, grace=10.0, echo=False, results=None,
        stop=None):
    """Run ``python -m pytest ARGS`` in a subprocess and return a ``Run``.

    ``storage``: None for a fresh empty example database (the default), a
    folder to use, or ``KEEP``. ``timeout``: seconds, then ``stop_signal`` goes
    to the child's whole process group (SIGINT lets pytest print its summary),
    and SIGKILL ``grace`` seconds later if it is still there. ``echo``: copy
    the console to this process's stdout as it comes. ``results``: the file the child's
    report_plugin writes to (the caller reads it while the child runs), else a temporary one. ``stop``: a
    ``threading.Event``; once it is set, the child's group is killed (the caller has read what it
    needed: a process the file under check holds open, by a thread it started, ends). Whatever ends the
    caller's wait (Ctrl-C included), the process group is killed before the
    exception goes on.
    """
    with contextlib.ExitStack() as stack:
        scratch = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="resume-run-")))
        results = pathlib.Path(results or scratch / "results.jsonl")
        if storage is None:
            storage = scratch / "hypothesis"
        env = environment(root=root, profile=profile, keep_database=keep_database,
                          storage=storage, extra=extra_env)
        env[RESULTS_VAR] = str(results)
        command = [sys.executable, "-m", "pytest", "-p", "resume.testing.grading.report_plugin", *map(str, args)]
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=cwd or root, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   errors="replace", start_new_session=True)
        lines = []
        reader = threading.Thread(target=_collect, args=(process.stdout, lines, echo), daemon=True)
        reader.start()
        timed_out = False
        with _LIVE_LOCK:
            _LIVE.add(process)
        stack.callback(_forget, process)
        if stop is not None:
            threading.Thread(target=_kill_when, args=(stop, process), daemon=True).start()
        try:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _signal_group(process, stop_signal)
                try:
                    process.wait(timeout=grace if stop_signal != signal.SIGKILL else None)
                except subprocess.TimeoutExpired:
                    _signal_group(process, signal.SIGKILL)
                    process.wait()
        except BaseException:  # Ctrl-C or an error in the caller: leave nothing running
            _end_group(process)
            raise
        finally:
            reader.join(timeout=5)
            process.stdout.close()
        # The group may outlive pytest (a receiver it started): end it too.
        _end_group(process)
        wall = time.monotonic() - started
        tests, cpu = read_results(results)
        return Run(None if timed_out else process.returncode, wall, "".join(lines), tests, timed_out, cpu)


# The children that run() is waiting for, in every thread: a caller that runs
# several at once (check's parts) ends them all with stop_all() on Ctrl-C.
_LIVE = set()
_LIVE_LOCK = threading.Lock()


def _forget(process):
    with _LIVE_LOCK:
        _LIVE.discard(process)


def stop_all():
    """SIGKILL the process group of every child that a ``run()`` in any thread is waiting for.

    Each of those ``run()`` calls then returns (its child ended) after
    waiting for its whole group as usual.
    """
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        _signal_group(process, signal.SIGKILL)


def _kill_when(stop, process):
    while not stop.wait(0.1):
        if process.poll() is not None:
            return
    if process.poll() is None:  # (not once it was reaped: its group id may be another's by then)
        _signal_group(process, signal.SIGKILL)


def _collect(stream, lines, echo):
    for line in stream:
        lines.append(line)
        if echo:
            print(line, end="", flush=True)


def _end_group(process, within=5.0):
    """SIGKILL the child's whole process group and wait until none of it still runs.

    pytest is waited for as the child; the rest of its group (receivers,
    strace) are not our children, so they are watched until each is gone or
    a zombie waiting for its reaper (they run no code): the caller returns
    with nothing of the suite still running, rather than a moment before.
    """
    _signal_group(process, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + within
    while _group_runs(process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _group_runs(group):
    """Whether a process of ``group`` is still running (not a zombie)."""
    proc = pathlib.Path("/proc")
    if not proc.is_dir():  # no procfs: ask the kernel (a zombie still counts here)
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            state, _parent, process_group = stat[stat.rindex(")") + 2:].split()[:3]
            if int(process_group) == group and state not in ("Z", "X"):
                return True
    return False


def _signal_group(process, signum):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def exit_status(code):
    """How a child ended, in words: ``exit status 3``, ``killed by SIGKILL``."""
    if code is None:
        return "it ended"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def read_results(path):
    """The plugin's JSON lines folded into one ``TestResult`` per node id, in order; and the
    child's CPU seconds (None if it never said: killed)."""
    tests, cpu = {}, None
    path = pathlib.Path(path)
    if not path.exists():
        return [], cpu
    # Read while the child may still write (``lanes``): a last line not ended yet is left for later.
    for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
        if not line.strip():
            continue
        record = json.loads(line)
        if record["when"] == "rusage":
            cpu = record["duration"]
            continue
        test = tests.setdefault(record["nodeid"], TestResult(record["nodeid"]))
        if record["when"] == "call":
            test.duration = record["duration"]
        if record["outcome"] == "failed":
            failed_call = record["when"] == "call" or test.outcome == "failed"
            test.outcome = "failed" if failed_call else "error"
            test.longrepr = test.longrepr or record["longrepr"]
            test.sections += [tuple(section) for section in record["sections"]]
            test.failures += record["failures"]
        elif record["outcome"] == "skipped" and test.outcome == "passed":
            test.outcome = "skipped"
    return list(tests.values()), cpu
