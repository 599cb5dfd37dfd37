"""Run the suite against many files from ONE pytest process: ``run(jobs)``, a ``runner.Run`` per job.

The meta-test runs the suite once per known bug. A pytest process of its own for each costs most
of a second of CPU to start and collect, about what the median bug's whole search costs; so one
process collects every file once and forks a run per job (``forks_plugin``), a few at a time, each
as a process of its own would have run: the file loaded, the same order, the same seed, ``-x``.
A fork's ``Run`` is what ``runner.run`` would have given for that process, but for its seconds,
which count from the fork: the start-up and collection it no longer pays are not in them.
"""

import concurrent.futures
import json
import pathlib
import tempfile
import time

from quality import forks_plugin
from resume.testing.grading import runner

PLUGIN = "quality.forks_plugin"
LOOK_EVERY = 0.05  # seconds between two looks at the folder for the runs that ended


def run(jobs, *, workers, timeout, args=(), profile="dev", root=runner.ROOT, on_run=None):
    """``{key: runner.Run}`` for ``jobs`` (``[(key, file under test, [stage, ...])]``, a stage a
    list of test files or folders, run only if the earlier ones passed), ``workers`` at a time.

    Each job stops at its first failure (``-x``). ``timeout``: the seconds a job may run before
    it is ended (its Run ``timed_out``). ``args``: more pytest options, the same for every job.
    ``root``: the suite's folder (``runner.run``'s). ``on_run(key, run)`` is called as each job
    ends. A job the process never forked (its collection failed) gets the process's own Run.
    """
    jobs = [(key, pathlib.Path(impl).resolve(), stages) for key, impl, stages in jobs]
    files = list(dict.fromkeys(str(path) for _, _, stages in jobs for stage in stages for path in stage))
    runs = {}
    with tempfile.TemporaryDirectory(prefix="resume-forks-") as folder, \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        folder = pathlib.Path(folder)
        (folder / "jobs.json").write_text(json.dumps({
            "workers": workers, "timeout": timeout,
            "jobs": [{"key": key, "impl": str(impl), "stages": [[str(p) for p in stage] for stage in stages]}
                     for key, impl, stages in jobs]}))
        # The process's own --impl: any file that loads; each fork loads its own.
        server = pool.submit(runner.run, ["-p", PLUGIN, f"--impl={jobs[0][1]}", "-q", "-p", "no:cacheprovider",
                                          *args, *files],
                             profile=profile, root=root, extra_env={forks_plugin.DIR_VAR: str(folder)})
        while len(runs) < len(jobs):
            ended = server.done()
            for key, _, _ in jobs:
                if key not in runs and (folder / f"done-{key}.json").exists():
                    runs[key] = _read(folder, key)
                    if on_run is not None:
                        on_run(key, runs[key])
            if ended:
                break
            time.sleep(LOOK_EVERY)
        whole = server.result()
    for key, _, _ in jobs:
        if key not in runs:
            runs[key] = whole
            if on_run is not None:
                on_run(key, whole)
    return runs


def _read(folder, key):
    end = json.loads((folder / f"done-{key}.json").read_text())
    tests, cpu = runner.read_results(folder / f"{key}.jsonl")
    output = (folder / f"{key}.out").read_text(errors="replace") if (folder / f"{key}.out").exists() else ""
    return runner.Run(end["code"], end["seconds"], output, tests, end["timed_out"], cpu)


def run_alone(jobs, *, workers, timeout, args=(), profile="dev", root=runner.ROOT, on_run=None):
    """``run``'s jobs, each stage a pytest process of its own, start-up and collection
    paid each time: what a learner's ``pytest -x`` costs (the benchmark's time-to-catch figures)."""
    def alone(key, impl, stages):
        done = None
        for stage in stages:
            run = runner.run([f"--impl={pathlib.Path(impl).resolve()}", "-x", "-q", "-p", "no:cacheprovider",
                              *args, *map(str, stage)], profile=profile, root=root, timeout=timeout)
            if done is not None:
                run.wall, run.tests = run.wall + done.wall, done.tests + run.tests
            done = run
            if run.returncode != 0:
                break
        if on_run is not None:
            on_run(key, done)
        return key, done

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(lambda job: alone(*job), jobs))
