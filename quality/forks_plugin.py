"""pytest plugin of the meta-test's forks (quality/forks.py): one process collects the suite once,
then forks a run of it per job (a known bug), each against its own file.

A pytest process costs most of a second of CPU to start and collect the suite's files, as much as
a typical known bug's whole search (the median bug is caught within a few tenths of a second of
its test's start): forking each run from a process that already did both took a fifth off the
known bugs' meta-test (327 s, then 257 s), and a third of its CPU once the forks' garbage
collections were kept to their own objects (``lanes_plugin.before_forking``).

``quality/forks.py`` starts this process with every file the jobs need and a folder
(``$RESUME_FORKS_DIR``) that holds ``jobs.json``: the jobs (a key, the file under test, and its
stages: lists of test files or folders, each run only if the earlier ones passed), how many run
at once, and each one's bound in seconds; each run stops at its first failure (``-x``). This
process runs no test: it forks each job (``workers`` at a time), and writes ``done-<key>.json``
(exit code, seconds, whether it was ended at its bound) as each ends. A fork loads its file
(``loader.choose``), takes the tests of its stages in the order a process given those files alone
would run them (``order.sort``, from the order of collection), writes its results and its console
to ``<key>.jsonl`` and ``<key>.out``, captures its tests' output in files of its own
(``lanes_plugin.in_fork``), and goes on with pytest's own loop.
"""

import json
import os
import pathlib
import signal
import time

import hypothesis.configuration
import pytest

from resume.testing.drivers import loader
from resume.testing.grading.lanes_plugin import before_forking, in_fork
from resume.testing.grading.runner import RESULTS_VAR
from resume.testing.plugin import order

DIR_VAR = "RESUME_FORKS_DIR"
LOOK_EVERY = 0.02  # seconds between two looks for a fork that ended or ran past its bound

_folder = None
_collected = {}  # node id -> its index in the order of collection, before any plugin sorted


def pytest_configure(config):
    global _folder
    if os.environ.get(DIR_VAR) and not hasattr(config, "workerinput"):
        _folder = pathlib.Path(os.environ[DIR_VAR])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    if _folder is not None:
        _collected.update((item.nodeid, index) for index, item in enumerate(items))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """Fork each job, ``workers`` at a time; in a fork, pytest's own loop goes on over its tests.
    Here: wait for each fork, end one past its bound, write its end; then end, no test run."""
    if _folder is None:
        return None
    plan = json.loads((_folder / "jobs.json").read_text())
    pending, running = list(plan["jobs"]), {}  # running: pid -> (job, monotonic start)
    before_forking(session.config)
    while pending or running:
        while pending and len(running) < plan["workers"]:
            job = pending.pop(0)
            pid = os.fork()
            if pid == 0:
                _become(session, job)
                return None
            running[pid] = (job, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid in running:
            job, began = running.pop(pid)
            _write(job, code=os.waitstatus_to_exitcode(status), seconds=time.monotonic() - began, timed_out=False)
            continue
        for pid, (job, began) in list(running.items()):
            if time.monotonic() - began > plan["timeout"]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                del running[pid]
                _write(job, code=None, seconds=time.monotonic() - began, timed_out=True)
        time.sleep(LOOK_EVERY)
    return True


def _write(job, **end):
    scratch = _folder / f".done-{job['key']}.json"
    scratch.write_text(json.dumps(end))
    scratch.rename(_folder / f"done-{job['key']}.json")  # whole, or not there


def _become(session, job):
    """In a fork: be the run of ``job``, as ``pytest --impl=FILE -x STAGE...`` would be."""
    key = job["key"]
    log = os.open(_folder / f"{key}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for console in (1, 2):
        os.dup2(log, console)
    os.close(log)
    in_fork(session.config)
    os.environ[RESULTS_VAR] = str(_folder / f"{key}.jsonl")
    # A random seed reads and writes the example database: each job its own, empty.
    hypothesis.configuration.set_hypothesis_home_dir(_folder / f"{key}-hypothesis")
    try:
        loader.choose(job["impl"])
    except loader.ImplError as error:  # as pytest's own usage error would end that run
        print(f"ERROR: --impl / {loader.ENV_VAR}: {error}", flush=True)
        os._exit(pytest.ExitCode.USAGE_ERROR)
    os.environ[loader.ENV_VAR] = job["impl"]  # for the processes its tests start
    items = []
    for stage in job["stages"]:
        paths = [pathlib.Path(path).resolve() for path in stage]
        rank = {id(item): _rank(item, paths) for item in session.items}
        own = sorted((item for item in session.items if rank[id(item)] is not None),
                     key=lambda item: (rank[id(item)], _collected[item.nodeid]))
        order.sort(own, [str(path) for path in paths])
        items += own
    session.items[:] = items
    session.testscollected = len(items)
    session.config.option.maxfail = 1  # -x


def _rank(item, paths):
    """The index of the first of ``paths`` (files or folders) that holds ``item``, or None."""
    path = pathlib.Path(str(item.path)).resolve()
    return next((index for index, given in enumerate(paths) if path == given or given in path.parents), None)
