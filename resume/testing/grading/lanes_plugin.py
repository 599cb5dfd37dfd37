"""pytest plugin of the lanes of ``resume check``: each takes the next unit no lane has taken, and runs it to
its first failure.

``grading.lanes`` starts a pytest process with every part's files, this plugin and a folder the
lanes share (``$RESUME_LANES_DIR``), which holds ``parts.json``: the parts in the suite's order,
with their files. The process collects the tests, cuts each part into units (a test function's
items in a row; a first look is a unit of its own; in the deeper levels, each item; a part
``parts.json`` names ``whole``, all its items, taken first: the power level), and forks
``$RESUME_LANE_FORKS`` lanes, numbered from ``$RESUME_LANE``: each runs pytest's own loop over
the same items, the learner's file already imported. The process itself runs no test: it waits for its lanes and writes
``ended-<n>.json`` (the exit code) as each ends. A lane runs a unit only if it took it first
(``claim-<part>.<n>``, created exclusively), and passes by the units other lanes took at no cost
(no set-up, no report); so each unit runs once, taken in order by whichever lane is free, and no
lane idles while one is left (a part of one long file still spreads over every core).

Each part still behaves as if run alone with ``-x``: a unit ends at its first failure, and a unit
whose part has an EARLIER unit that failed does not run (a failure in a later unit stops nothing
before it). So the failure a part reports is its first in the suite's order, as in one process.
The deeper levels (``gated``) are taken last and wait until every unit of the steps (``gate``)
has ended; they run only if all of them passed.

A unit still running when an earlier unit of its part fails is cut where its test is
(``Lane.stop``): what it finds, the report would not show, and it may be shrinking a hang for
seconds. A unit that runs past its bound (``lanes``: a call that never returns) has its lane's
stack taken and the lane ended; another lane takes the units left. Each lane writes its results
(``report_plugin``) to ``lane-<n>.jsonl``; the forking process, its collection's, to ``forks-<k>.jsonl``.

When a lane starts a unit it writes ``started-<part>.<n>.json`` (its pid, the time); when it ends
it, ``done-<part>.<n>.json``: its status (``passed``, ``failed``,
``stopped``: an earlier unit failed, ``not run``: the steps did not pass), seconds, CPU seconds
and the node ids it ran, whose results are in the lane's own ``report_plugin`` file, written
before. ``units.json`` says how many units each part has.

A test's part is the part whose files hold it, except that a test marked ``power_loss`` is in the
level beyond the lab (``suite.POWER``) wherever it is; a test of a part not asked for is deselected.
"""

import faulthandler
import gc
import json
import linecache
import os
import pathlib
import resource
import signal
import sys
import time

import pytest
from _pytest.runner import runtestprotocol  # as pytest's own protocol runs it, with our nextitem

from resume.testing import suite
from resume.testing.drivers import loader
from resume.testing.grading import lanes, tamper
from resume.testing.grading.lanes import DIR_VAR, FORKS_VAR, LANE_VAR
from resume.testing.grading.runner import RESULTS_VAR

WAIT_TURN = 0.02  # seconds between two looks at the folder, while the deeper levels wait for the steps


class Lane:
    def __init__(self, folder, lane, forks):
        self.folder, self.lane, self.forks = folder, lane, forks  # lane: the first one forked
        spec = json.loads((folder / "parts.json").read_text())
        self.order = spec["order"]  # part keys, in the suite's order
        self.files = {key: [pathlib.Path(f) for f in files] for key, files in spec["files"].items()}
        self.gate, self.gated = spec["gate"], spec["gated"]
        self.whole = spec.get("whole", [])  # parts that are one unit each, taken first
        self.unit = {}  # node id -> "<part>.<n>"
        self.units = []  # every unit, in the order the lanes take them
        self.first = {}  # unit -> its first test (an Item)
        self.last = {}  # unit -> the node id of its last test
        self.count = {}  # part -> its number of units
        self.sizes = {}  # unit -> its number of tests
        self.before = None  # tamper.Snapshot of the grader, taken before the file was loaded
        self.taken = {}  # unit -> whether this lane took it (asked when this lane is free for it)
        self.status = {}  # unit taken -> "passed", "failed", "stopped", "not run"
        self.ran = {}  # unit taken -> [node ids this lane ran]
        self.started = {}  # unit taken -> (monotonic, CPU seconds) when it started
        self.calling = None  # the unit whose test this lane is calling (not setting up, not tearing down)

    def become(self, lane):
        """In a process just forked: be lane ``lane``, with results and a stack file of its own."""
        self.lane = lane
        os.environ[RESULTS_VAR] = str(lanes.lane_results(self.folder, lane))
        # A unit past its bound (a call that never returns: a loop in the file under test holds the
        # interpreter) gets SIGUSR1 from ``lanes`` before it is ended: this lane's stack, to say where.
        self.stack = open(self.folder / f"stack-{lane}.txt", "w")
        faulthandler.register(signal.SIGUSR1, file=self.stack, all_threads=True)
        signal.signal(lanes.STOP_SIGNAL, self.stop)

    def stop(self, signum, frame):
        """``lanes``, at each look while this lane runs a unit after one of its part that failed:
        cut the test where it is, as a skip (pytest's own exception, which Hypothesis lets through
        at once, shrinking or not); the unit ends ``stopped`` and the lane takes the next. Its
        tear-down runs as after any skip. The signal comes again at the next look, for code that
        caught this one (the suite takes what a call under test raises as its outcome), and for
        one that came inside pytest's, pluggy's or Hypothesis's own code (``MACHINERY``), which
        is let go; so is one outside the test's call (set-up, tear-down, another unit)."""
        unit = self.calling
        if unit is not None and not in_machinery(frame) and self.earlier_failed(unit):
            self.status[unit] = "stopped"
            raise pytest.skip.Exception("stopped: an earlier test of its part failed")

    def part_of(self, item):
        if item.get_closest_marker(suite.POWER_MARK):
            return suite.POWER
        path = pathlib.Path(str(item.path)).resolve()
        return next((key for key in self.order if path in self.files.get(key, ())), None)

    def write(self, name, record):
        lanes.write(self.folder / name, record)

    def take(self, unit):
        """Whether this lane takes ``unit``: the first to ask does, the others never.

        The claim appears with this lane's number in it, at once (a link, which fails if it is
        there): a lane killed between creating it and writing to it left an empty claim, which
        ``lanes`` could neither give back nor blame, and the check waited for the unit forever."""
        scratch = self.folder / f".claim-{unit}.{self.lane}"
        scratch.write_text(str(self.lane))
        try:
            os.link(scratch, self.folder / f"claim-{unit}")
        except FileExistsError:
            self.taken[unit] = False
            return False
        finally:
            scratch.unlink()
        self.taken[unit] = True
        return True

    def enter(self, unit):
        """The start of a unit this lane took (the deeper levels: once the steps have ended)."""
        part = unit.rpartition(".")[0]
        self.status[unit] = "passed" if part != self.gated or self.steps_passed() else "not run"
        # Its bound counts from here, not from the wait for the steps.
        self.write(f"started-{unit}.json", {"lane": self.lane, "pid": os.getpid(), "at": time.time()})
        self.ran[unit] = []
        self.started[unit] = (time.monotonic(), cpu())

    def steps_passed(self):
        """Whether every unit of the ``gate`` parts ended and passed (a lane that dies has its unit
        written ``broken`` by ``lanes``, so this wait ends)."""
        done = [self.folder / f"done-{part}.{n}.json" for part in self.gate for n in range(self.count[part])]
        while not all(path.exists() for path in done):
            time.sleep(WAIT_TURN)
        return all(json.loads(path.read_text())["status"] in ("passed", "stopped") for path in done)

    def take_next(self, unit):
        """The first test of the next unit after ``unit`` that this lane takes, or None."""
        for following in self.units[self.units.index(unit) + 1:]:
            if self.taken[following] if following in self.taken else self.take(following):
                return self.first[following]
        return None

    def earlier_failed(self, unit):
        return lanes.earlier_failed(unit, os.listdir(self.folder))

    def end(self, unit):
        if self.status[unit] == "stopped":
            collect_quietly()
        changed = self.before.changed() if self.before is not None else []
        if changed:  # before the unit's end, which the check reads after it
            self.write(f"tampered-{self.lane}.json", {"what": changed, "when": f"in the tests of {unit}"})
        begun, spent = self.started[unit]
        self.write(f"done-{unit}.json", {"lane": self.lane, "status": self.status[unit],
                                         "seconds": time.monotonic() - begun, "cpu": cpu() - spent,
                                         "tests": self.ran[unit]})


# Where a cut never lands: the code that runs a test, whose clean-up (a ``finally``, an ``__exit__``)
# a cut could leave half done for the lane's later tests (output capture left on, warning filters
# left changed; seen once: a lane ended in the middle of a unit). Cut in the test's own code or
# in the code under test, the skip unwinds through these as any exception the test raised would.
MACHINERY = ("_pytest", "pytest", "pluggy", "hypothesis", "_hypothesis_pytestplugin", "pytest_asyncio",
             "warnings", "contextlib", "logging", "faulthandler", "resume.testing.grading", "resume.testing.plugin")


def in_machinery(frame):
    """Whether ``frame`` (where a signal found the lane) is in a module of MACHINERY."""
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return any(name == top or name.startswith(top + ".") for top in MACHINERY)


def collect_quietly():
    """Collect the garbage a cut test left, now, and let go what its finalizers raise: a coroutine
    the file under test never awaited warns when it is collected, and collected at some later
    moment, pytest would report it in whichever test of this lane runs then (seen in the power
    level). The cut test's results are not shown."""
    hook, sys.unraisablehook = sys.unraisablehook, lambda unraisable: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook


def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(usage.ru_utime + usage.ru_stime for usage in (own, children))


_lane = None


def pytest_configure(config):
    global _lane
    folder = os.environ.get(DIR_VAR)
    if folder and not hasattr(config, "workerinput"):
        _lane = Lane(pathlib.Path(folder), int(os.environ.get(LANE_VAR, "0")),
                     int(os.environ.get(FORKS_VAR, "1")))


@pytest.hookimpl(trylast=True)  # after conftest.py's order: first looks first, kept within each part
def pytest_collection_modifyitems(config, items):
    if _lane is None:
        return
    parts = {id(item): _lane.part_of(item) for item in items}
    kept = [item for item in items if parts[id(item)] in _lane.order]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if parts[id(item)] not in _lane.order])
    # In the suite's order, the deeper levels last (they wait for the steps) and a whole part first
    # (it mostly waits: its wait overlaps the others' work); stable: each part's own order.
    kept.sort(key=lambda item: (parts[id(item)] == _lane.gated, parts[id(item)] not in _lane.whole,
                                _lane.order.index(parts[id(item)])))
    items[:] = kept
    _lane.count = dict.fromkeys(_lane.order, 0)
    function = None
    for item in kept:
        part = parts[id(item)]
        # The deeper levels' tests are few and each long (a sweep of crash points): there, each
        # item is a unit of its own, so that the items of one test run side by side.
        # A whole part is one unit: its tests share a costly module fixture (the power level records
        # a session under strace), which each lane that took one of its units would set up again.
        name = (item.nodeid if part == _lane.gated else "" if part in _lane.whole
                else getattr(item, "originalname", item.name))
        if (part, item.path, name) != function:
            function = (part, item.path, name)
            _lane.count[part] += 1
        unit = _lane.unit[item.nodeid] = f"{part}.{_lane.count[part] - 1}"
        _lane.sizes[unit] = _lane.sizes.get(unit, 0) + 1
        if unit not in _lane.first:
            _lane.units.append(unit)
            _lane.first[unit] = item
        _lane.last[unit] = item.nodeid
    # Every process that forks lanes writes the same, before the file under check is loaded
    # (``before_forking``): how many tests each unit has, which the check requires results of.
    _lane.write("sizes.json", _lane.sizes)
    _lane.write("units.json", _lane.count)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """Fork the lanes, the tests collected and cut into units: in each, pytest's own loop goes on;
    here, wait for them (a lane that dies is seen at once: ``ended-<n>.json``), then end, no test run."""
    if _lane is None:
        return None
    lanes_forked = {}
    before_forking(session.config)
    for lane in range(_lane.lane, _lane.lane + _lane.forks):
        pid = os.fork()
        if pid == 0:
            in_fork(session.config)
            _lane.become(lane)
            return None
        lanes_forked[pid] = lane
    while lanes_forked:
        pid, status = os.wait()
        if pid in lanes_forked:
            _lane.write(f"ended-{lanes_forked.pop(pid)}.json", {"code": os.waitstatus_to_exitcode(status)})
    return True


def before_forking(config):
    """In a process about to fork: end pytest's capture of its output (each fork captures its own:
    ``in_fork``), and move every object made so far (the modules, the collected tests) out of the
    garbage collector's sight (``gc.freeze``, as Python's docs advise before a fork): each fork's
    collections, pytest's full one at its end included, look at the fork's own objects only, and
    leave the shared pages unwritten. The meta-test's forks spent a third less CPU (33 known bugs:
    22 s, was 33 s)."""
    config.pluginmanager.getplugin("capturemanager").stop_global_capturing()
    if os.environ.get(loader.LATE_VAR):  # resume check: the file is loaded now, the tests collected
        _lane.before = tamper.Snapshot(config)
        guard_exits(loader.chosen_path())
        loader.chosen()
        changed = _lane.before.changed()
        if changed:
            _lane.write("tampered.json", {"what": changed, "when": "when it was imported"})
    gc.freeze()


def guard_exits(impl):
    """Let ``os._exit``, ``os.abort`` and a signal the process sends itself (``os.kill``,
    ``os.killpg``), called from the file under check, first say how and where (``exit-<n>.json``):
    the check reports the test whose call ended the lane as that file's bug, with that call.
    The same functions called from elsewhere are left as they were."""
    impl = str(impl)
    real_exit, real_abort, real_kill, real_killpg = os._exit, os.abort, os.kill, os.killpg

    def record(how):
        frames = []
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == impl:
                frames.append(frame)
            frame = frame.f_back
        if frames and _lane is not None:
            inner, outer = frames[0], frames[-1]
            source = linecache.getline(impl, inner.f_lineno).strip()
            _lane.write(f"exit-{_lane.lane}.json", {
                "how": how, "where": f"{pathlib.Path(impl).name}:{inner.f_lineno}  {source}".rstrip(),
                "call": _call(outer)})

    def _exit(code):
        record(f"os._exit({code!r})")
        real_exit(code)

    def abort():
        record("os.abort()")
        real_abort()

    def kill(pid, signum):
        if pid == os.getpid() and signum:  # (signal 0 only asks whether the process is there)
            record(f"os.kill(os.getpid(), {_signal_name(signum)})")
        real_kill(pid, signum)

    def killpg(group, signum):
        if group in (0, os.getpgrp()) and signum:
            record(f"os.killpg({group}, {_signal_name(signum)})")
        real_killpg(group, signum)

    os._exit, os.abort, os.kill, os.killpg = _exit, abort, kill, killpg


def _signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def _call(frame):
    """``parse_line(b'EVENT 7 1\\n')``: the call a frame runs, its arguments as they are now."""
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    values = [repr(frame.f_locals.get(name)) for name in names if name != "self"]
    return f"{code.co_name}({', '.join(values)})"


def in_fork(config):
    """In a fork: capture its output (the tests' prints, Hypothesis's) as pytest does, in files of
    its own. Forked while capturing, the processes would share pytest's one capture file and its
    offset, and each would read, and empty, the others' output into its own reports (seen: a
    failing test's captured output lost, under load)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    capture.start_global_capturing()
    capture.suspend_global_capture()  # as after collection: each test's set-up resumes it


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Run ``item`` if its unit is this lane's, else pass it by at no cost (no setup, no report).

    pytest tears a test down as far as the next test needs (``nextitem``): handed the next test
    THIS lane will run, which the end of a unit decides by taking the next free unit then
    (``_NextOfThisLane``: when pytest asks, at that teardown)."""
    if _lane is None:
        return None
    unit = _lane.unit[item.nodeid]
    if not (_lane.taken[unit] if unit in _lane.taken else _lane.take(unit)):
        return True
    if unit not in _lane.started:
        _lane.enter(unit)
    if _lane.status[unit] == "passed" and _lane.earlier_failed(unit):
        _lane.status[unit] = "stopped"
    last = _lane.last[unit] == item.nodeid
    if _lane.status[unit] != "passed" and not last:
        return True  # the unit has ended: its last test, skipped, tears it down
    following = _NextOfThisLane(unit) if last else nextitem
    if _lane.status[unit] == "passed":
        _lane.ran[unit].append(item.nodeid)  # its result is due (a skip mark's too)
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runtestprotocol(item, nextitem=following)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    if last:
        _lane.end(unit)
    return True


class _NextOfThisLane:
    """The ``nextitem`` of a unit's last test: the next unit this lane takes, taken when pytest
    asks for its chain of collectors, which it does only to tear the test down (``listchain``).
    Taken when the last test started, a long one (a state machine is one test) held the next unit
    all that time, while another lane had nothing left to do."""

    def __init__(self, unit):
        self.unit = unit

    def listchain(self):
        following = _lane.take_next(self.unit)
        return following.listchain() if following is not None else []  # none: tear everything down


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if _lane is None:
        return (yield)
    try:
        _lane.calling = _lane.unit[item.nodeid]  # from here a stop cuts the test (``Lane.stop``)
        return (yield)
    finally:
        _lane.calling = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _lane is None:
        return
    unit = _lane.unit[item.nodeid]
    if _lane.status[unit] != "passed":
        pytest.skip("this unit has ended")  # its first failure, an earlier one's, or the steps'


def pytest_runtest_logreport(report):
    unit = _lane and _lane.unit.get(report.nodeid)
    if unit and report.failed and _lane.taken.get(unit) and _lane.status[unit] == "passed":
        _lane.status[unit] = "failed"
        (_lane.folder / f"failed-{unit}").touch()


def pytest_sessionfinish(session):
    if _lane is not None:
        # Python sets its signal handlers back to the default as it exits, and STOP_SIGNAL's
        # default ends the process: a stop that comes late (``lanes`` looked just before this
        # lane's last unit ended) ended a lane that had done its work with exit code -12.
        signal.signal(lanes.STOP_SIGNAL, signal.SIG_IGN)
