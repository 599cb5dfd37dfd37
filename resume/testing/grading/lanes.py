"""Run the parts of ``resume check`` in a few lanes, pytest processes that share them out: ``run_parts``.

A pytest process costs most of a second of CPU to start and collect, about as much as a part's
tests; one per part made the CPU, not the tests, the learner's wait, and a part of one long file
kept one core busy while the other had nothing left. So one pytest process collects every part's
files once, with ``lanes_plugin``, and forks a few lanes (``lanes()``) from there: each takes
units of tests (a test function's items) in the suite's order through a folder they share; each
part behaves as if run alone with ``-x``. This module starts that process, reads each part's end
from the folder as it comes (``units.json``, then ``done-<part>.<n>.json`` for each unit) with its
tests from the lanes' results files (``lane-<n>.jsonl``), and yields one ``check.Outcome`` per
part, in order. A lane that dies (the file under test ended the process) has the unit it held
written ``broken``, and a new process takes the units left.
"""

import concurrent.futures
import contextlib
import json
import os
import pathlib
import signal
import tempfile
import threading
import time

from resume.testing.drivers import loader
from resume.testing.grading import runner

PLUGIN = "resume.testing.grading.lanes_plugin"
DIR_VAR = "RESUME_LANES_DIR"  # the folder the lanes share
LANE_VAR = "RESUME_LANE"  # the number of the first lane the process forks
FORKS_VAR = "RESUME_LANE_FORKS"  # how many lanes it forks
LOOK_EVERY = 0.05  # seconds between two looks at the folder
# To a lane, at each look while it runs a unit after one of its part that failed: cut the test
# you are in (``lanes_plugin.Lane.stop``). What it would find, the report would not show.
STOP_SIGNAL = signal.SIGUSR2


class Tampered(Exception):
    """The file under check changed the grader (``tamper``): its verdict cannot be trusted. The
    message names what changed and when."""


def lanes():
    """How many lanes: one per core and one more (a lane waits now and then, on purpose: a
    timeout, a closing wait; another keeps the core busy), or ``$RESUME_CHECK_JOBS``."""
    return int(os.environ.get("RESUME_CHECK_JOBS") or (os.cpu_count() or 1) + 1)


def run_parts(impl, parts, *, gate=(), gated=None, whole=(), root=runner.ROOT, profile=None, storage=None,
              args=(), extra_env=None, outcome=None, bound=None, cwd=None):
    """Yield ``(part, Outcome)`` for each of ``parts`` (``[(key, files)]``), in that order, as each ends.

    ``gated``: the part (the deeper levels) that runs only once every part of ``gate`` has
    passed; else its Outcome's status is ``"not run"``. ``whole``: parts that run as one unit
    each, taken first (their tests share a costly module fixture). ``outcome``: ``check.outcome``, which
    reads a ``runner.Run``. ``cwd``: the lanes' working folder (the check's room). ``bound``: seconds a unit may run; past them its lane's stack is
    taken and the lane ended, and the part's status is ``"timeout"`` (a call that never returns,
    which no test of its own can cut: a loop holds the interpreter). Leaves nothing running.
    """
    files = list(dict.fromkeys(str(pathlib.Path(f).resolve()) for _, fs in parts for f in fs))
    with tempfile.TemporaryDirectory(prefix="resume-lanes-") as folder, \
            concurrent.futures.ThreadPoolExecutor() as pool:
        folder = pathlib.Path(folder)
        (folder / "parts.json").write_text(json.dumps({
            "order": [key for key, _ in parts], "gate": list(gate), "gated": gated, "whole": list(whole),
            "files": {key: [str(pathlib.Path(f).resolve()) for f in fs] for key, fs in parts}}))
        started = []  # [future of runner.run]: each process that forks lanes
        process_of = []  # lane n -> the index in ``started`` of the process that forked it
        stop = threading.Event()  # set once every part has ended: what still runs is killed

        def start(count):
            first = len(process_of)
            process_of.extend([len(started)] * count)
            started.append(pool.submit(
                runner.run, [f"--impl={impl}", "-q", "-p", "no:cacheprovider", "-p", PLUGIN,
                             "--continue-on-collection-errors", *args, *files],
                root=root, cwd=cwd, profile=profile, storage=storage, results=folder / f"forks-{len(started)}.jsonl",
                extra_env={**(extra_env or {}), DIR_VAR: str(folder), LANE_VAR: str(first),
                           FORKS_VAR: str(count), loader.LATE_VAR: "1"}, stop=stop))

        try:
            start(min(lanes(), len(parts)))  # one part (a rerun of one step): one lane
            while (units := _read(folder / "units.json")) is None:
                if all(future.done() for future in started):  # no lane got past collection
                    units = {key: None for key, _ in parts}
                    break
                time.sleep(LOOK_EVERY)
            sizes = _read(folder / "sizes.json") or {}
            for key, own in parts:
                names = [f"{key}.{n}" for n in range(units[key] or 0)]
                while units[key] is not None and not all((folder / f"done-{unit}.json").exists()
                                                          for unit in names):
                    _tampered(folder)
                    _watch(folder, units, started, process_of, start, bound)
                    time.sleep(LOOK_EVERY)
                _tampered(folder)
                yield key, _outcome(folder, key, names if units[key] is not None else None, own,
                                    started, process_of, outcome, root, sizes)
            stop.set()  # every part has ended: a lane held open (a thread of the file's) is killed
        except BaseException:  # Ctrl-C, a changed grader, or the caller stopped early: end every lane now
            stop.set()
            futures = list(started)
            concurrent.futures.wait(futures, timeout=1)
            while not all(future.done() for future in futures):
                runner.stop_all()  # again, for a lane that started its child meanwhile
                concurrent.futures.wait(futures, timeout=0.05)
            raise


def _tampered(folder):
    """Raise ``Tampered`` if a lane saw the grader changed (``tampered*.json``)."""
    for path in sorted(folder.glob("tampered*.json")):
        record = _read(path)
        if record:
            raise Tampered(f"it changed the grader {record['when']} ({', '.join(record['what'])})")


def _read(path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def _ended(folder, lane, started, process_of):
    """Whether lane ``lane`` has ended: its process saw it end (``ended-<n>.json``), or that
    process has ended itself (it waits for every lane it forked; killed, it takes them along)."""
    return (folder / f"ended-{lane}.json").exists() or started[process_of[lane]].done()


def _watch(folder, units, started, process_of, start, bound):
    """A unit after one of its part that failed is told to stop (``STOP_SIGNAL``); a unit past
    ``bound`` ends its lane (``timeout``, with the lane's stack; ``stopped`` if it was told to); a
    lane that ended leaves the unit it ran ``broken`` and gives back those it had only taken; units
    left with no lane to take them get a new one."""
    every = [f"{key}.{n}" for key, count in units.items() for n in range(count)]
    names = set(os.listdir(folder))  # one look at the folder, not a few per unit
    running = {unit: _read(folder / f"started-{unit}.json") for unit in every
               if f"started-{unit}.json" in names and f"done-{unit}.json" not in names}
    for unit, began in running.items():
        stopping = earlier_failed(unit, names)
        if stopping and (bound is None or time.time() - began["at"] <= bound):
            with contextlib.suppress(ProcessLookupError):
                os.kill(began["pid"], STOP_SIGNAL)
        elif stopping:  # told to stop for its whole bound: not its part's verdict, which came before
            _write(folder, unit, {"lane": began["lane"], "status": "stopped", "seconds": bound, "cpu": None,
                                  "tests": []})
            with contextlib.suppress(ProcessLookupError):
                os.kill(began["pid"], signal.SIGKILL)
        elif bound is not None and time.time() - began["at"] > bound:
            stack = folder / f"stack-{began['lane']}.txt"
            with contextlib.suppress(ProcessLookupError):
                os.kill(began["pid"], signal.SIGUSR1)  # lanes_plugin: faulthandler writes the stack
                deadline = time.monotonic() + 1
                while not stack.stat().st_size and time.monotonic() < deadline:
                    time.sleep(LOOK_EVERY)
                time.sleep(LOOK_EVERY)  # the rest of it
            _write(folder, unit, {"lane": began["lane"], "status": "timeout", "seconds": bound, "cpu": None,
                                  "tests": [], "stack": stack.read_text()})
            (folder / f"failed-{unit}").touch()  # the part's later units stop, as after a failure
            with contextlib.suppress(ProcessLookupError):
                # The lane alone (the processes it started go with the rest, at the end).
                os.kill(began["pid"], signal.SIGKILL)
    given_back = False
    for lane in range(len(process_of)):
        if _ended(folder, lane, started, process_of):
            for unit in every:
                claim = folder / f"claim-{unit}"
                if (folder / f"done-{unit}.json").exists() or not claim.exists() or claim.read_text() != str(lane):
                    continue  # (looked at anew: a timeout above may have just written it)
                if unit in running:
                    _write(folder, unit, {"lane": lane, "status": "broken", "seconds": 0.0, "cpu": None, "tests": []})
                else:  # taken for later, never started: another lane may take it
                    claim.unlink()
                    given_back = True
    left = [unit for unit in every if f"claim-{unit}" not in names and not (folder / f"claim-{unit}").exists()]
    if left and (given_back or all(_ended(folder, lane, started, process_of) for lane in range(len(process_of)))):
        if len(process_of) < 2 * len(every):  # else every lane dies at once: the units left are broken
            start(1)
        else:
            for unit in left:
                _write(folder, unit, {"lane": None, "status": "broken", "seconds": 0.0, "cpu": None, "tests": []})


def earlier_failed(unit, names):
    """Whether a unit of ``unit``'s part before it failed, by the names in the lanes' folder
    (``failed-<part>.<n>``, written as a unit fails or runs past its bound)."""
    part, _, n = unit.rpartition(".")
    return any(name.startswith(f"failed-{part}.") and int(name.rpartition(".")[2]) < int(n) for name in names)


def write(path, record):
    """``record`` as JSON at ``path``, whole or not at all (a reader never sees half of it): written
    beside it under a name of this process's own, then moved in place. The lanes write so too."""
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    scratch.write_text(json.dumps(record))
    os.replace(scratch, path)


def lane_results(folder, lane):
    """The file lane ``lane`` writes its tests' results to (``report_plugin``)."""
    return folder / f"lane-{lane}.jsonl"


def _write(folder, unit, record):
    write(folder / f"done-{unit}.json", record)


def _outcome(folder, part, units, own, started, process_of, outcome, root, sizes):
    """The ``Outcome`` of one part from its units' ``done`` records and the lanes' results
    (``units`` None: no lane collected the tests)."""
    results = {}  # lane -> its tests by node id, read once
    for lane in range(len(process_of)):
        results[lane] = {test.nodeid: test for test in runner.read_results(lane_results(folder, lane))[0]}
    own = {pathlib.Path(f).resolve() for f in own}
    collected = [runner.read_results(folder / f"forks-{n}.jsonl")[0] for n in range(len(started))]
    collect = list({test.nodeid: test for tests in collected for test in tests  # a file of the part
                    if "::" not in test.nodeid and test.failed  # not collected (by every process alike)
                    and pathlib.Path(root, test.nodeid).resolve() in own}.values())
    done = [_read(folder / f"done-{unit}.json") for unit in units or ()]
    cut = [record for record in done if record["status"] == "timeout"]
    if cut:  # a unit ran past its bound: which test, and where in the file under test
        during = list(results[cut[0]["lane"]])[-1:]
        found = outcome(runner.Run(0, cut[0]["seconds"], "", [], cpu=None))
        found.status, found.test = "timeout", during[0] if during else None
        found.error, found.stack = f"still running after {cut[0]['seconds']:g} s", cut[0]["stack"]
        return found
    broken = [record for record in done if record["status"] == "broken"]
    died = [record for record in broken if record["lane"] is not None]
    if units is not None and not collect and died:  # the lane running a test ended: the file ended it
        lane = died[0]["lane"]
        during = list(results[lane])[-1:]
        how = _read(folder / f"exit-{lane}.json")  # lanes_plugin.guard_exits: how, where, the call
        ended = _read(folder / f"ended-{lane}.json")
        future = started[process_of[lane]]
        code = ended["code"] if ended else future.result().returncode if future.done() else None
        found = outcome(runner.Run(0, sum(r["seconds"] for r in done), "", [], cpu=None))
        found.status, found.test = "ended", during[0] if during else None
        found.error = f"your code ended the process ({how['how'] if how else runner.exit_status(code)})"
        found.call, found.where = (how["call"], how["where"]) if how else ("", None)
        return found
    if units is None or collect or broken:  # the collection failed, or a lane died in this part
        lane = broken[0]["lane"] if broken and broken[0]["lane"] is not None else len(process_of) - 1
        future = started[process_of[lane]]
        run = future.result() if future.done() else None  # a lane still running past a file it could not collect
        ended = _read(folder / f"ended-{lane}.json")
        found = outcome(runner.Run(3, sum(r["seconds"] for r in done), run.output if run else "", collect, cpu=None))
        if (ended or run) and not collect:  # what was seen: where the process was when it ended
            during = list(results[lane])[-1:] if units is not None else []
            found.error = (f"the pytest process running it ended (exit code "
                           f"{ended['code'] if ended else run.returncode})" + (f" during {during[0]}" if during else ""))
        return found
    unreported = [(unit, record) for unit, record in zip(units, done) if record["status"] == "passed" and (
        len(record["tests"]) != sizes.get(unit) or any(nodeid not in results[record["lane"]] for nodeid in record["tests"]))]
    if unreported:  # a unit passed, but not every test of it ran and reported: not a pass
        unit, record = unreported[0]
        found = outcome(runner.Run(3, sum(r["seconds"] for r in done), "", [], cpu=None))
        reported = sum(nodeid in results[record["lane"]] for nodeid in record["tests"])
        found.error = f"{reported} of the {sizes.get(unit)} tests of a unit of this part reported a result"
        return found
    tests = [results[record["lane"]][nodeid] for record in done for nodeid in record["tests"]
             if nodeid in results[record["lane"]] and record["status"] != "stopped"]  # cut: not shown
    statuses = {record["status"] for record in done}
    returncode = 5 if not done else 1 if "failed" in statuses else 0
    found = outcome(runner.Run(returncode, sum(r["seconds"] for r in done), "", tests,
                               cpu=sum(r["cpu"] or 0.0 for r in done)))
    if "not run" in statuses:
        found.status = "not run"
    return found
