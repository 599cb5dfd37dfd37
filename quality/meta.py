"""Run the verification suite against every known bug, and against the reference.

Each run is the suite (properties/ and stateful/) against one file, as
``python -m pytest --impl=PATH -x -q -p no:cacheprovider`` would run it, under
the ``dev`` profile, as a learner would run it, with one fixed seed (``SEED``).
The runs are forks of ONE pytest process that collected the suite once
(quality/forks.py), ``jobs()`` at a time: a process of its own per bug spent
most of a second of CPU starting and collecting, as much as the median bug's
search.

Honest timing: every run starts from an EMPTY Hypothesis example database
(each fork its own folder, and no shared Redis database: the runner's
default). With the shared ``.hypothesis/`` a bug found once would be found
again at once by replaying the saved example, and the time to catch it would
measure the database, not the suite. (Under the fixed seed Hypothesis uses
no database at all; under ``QUALITY_SEED=random`` it does.)

The test files of the bug's own step run first, then, if they pass, the other
steps, the protocol machine and the deeper levels (``stages``): whether the
suite catches a bug does not depend on the order, but the time to the first
failure does, and this is the order in which a learner working on one step
would run them. Both times are kept: ``wall`` (from the fork to the first
failure, the step's earlier tests included; no start-up or collection) and
``test_seconds`` (the catching test alone: search and shrink).

The correct variants (quality/variants/, which the suite must pass) are
written by the same ``write_copies`` and run by ``run_whole``, a process of
their own each: the same run without ``-x``, so that every false alarm shows,
not only the first.
"""

import dataclasses
import os
import pathlib
import tempfile

from quality import bugs as known
from quality import forks
from resume.testing import suite
from resume.testing.grading import check, runner
from resume.testing.drivers import loader

# The reference implementation, read as text to be patched: never imported here.
REFERENCE = loader.DEFAULT_PATH

# The file each known bug patches (``Bug.base``): the reference, or the
# independent variant, whose code has other shapes; a learner's bug may look
# like either.
BASES = {"client": REFERENCE, "independent": pathlib.Path(__file__).resolve().parent / "variants" / "independent.py"}

# One Hypothesis seed for every run (``--hypothesis-seed``), so that the
# meta-test gives the same verdict each time CI runs it: under the dev
# profile's random seeds a bug that the suite catches 99 runs in 100 would
# make CI red now and then. QUALITY_SEED=random gives every run its own seed
# (what a learner sees; the benchmark's time-to-catch figures use it).
SEED = os.environ.get("QUALITY_SEED", "0")

# The lab's verdict: the power-cut level (tests marked power_loss, SPEC.md
# decision 18) is a verdict of its own, with its own known bugs and variants
# (quality/power_bugs.py, quality/test_power_loss_level.py); no lab run selects it.
LAB = ("-m", "not power_loss")

REFERENCE_KEY = "reference"  # the reference's job among the bugs' (no bug id is this)

# A run that takes longer than this has hung (an unbounded wait, say): it is
# ended and counted as not caught.
TIMEOUT = float(os.environ.get("QUALITY_TIMEOUT", 300))


@dataclasses.dataclass
class Result:
    bug: known.Bug | None  # None for the reference implementation
    outcome: check.Outcome


def jobs():
    """How many suites to run at once: one per core and one more (a run waits now and then, on
    purpose: a timeout, a closing wait; another keeps the core busy, as ``resume check``'s lanes
    do), or $QUALITY_JOBS. The known bugs on 2 cores: 219 s with 3 at a time, 272 s with 2, the
    same verdicts."""
    return int(os.environ.get("QUALITY_JOBS") or (os.cpu_count() or 1) + 1)


def write_copies(folder, patches, header, patch, source=None):
    """Write one patched copy of the reference per item of ``patches`` into ``folder``; ``{id: path}``.

    Each item has an ``id``; its copy is ``folder/<id>/client.py``: the line
    ``header(item)``, then ``patch(item, source)``. The known bugs and the
    correct variants (quality/variants/) are both written here.
    """
    source = REFERENCE.read_text() if source is None else source
    folder = pathlib.Path(folder)
    paths = {}
    for item in patches:
        path = folder / item.id.replace("-", "_") / "client.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header(item) + patch(item, source))
        paths[item.id] = path
    return paths


def patched(bug):
    """The text of ``bug``'s file: its base (``BASES``) with its edits; PatchError if one does not match."""
    return known.apply(bug, BASES[bug.base].read_text())


def write_bugs(folder, selected=None):
    """Write one patched copy of its base per bug into ``folder``; ``{id: path}``."""
    return write_copies(folder, selected or known.BUGS,
                        lambda bug: f"# KNOWN BUG ({bug.id}, step {bug.step}): {bug.what}\n",
                        lambda bug, source: patched(bug))


def stages(first_step=None, paths=None):
    """The test files a run takes, in stages, each run only if the earlier ones passed.

    ``paths`` (files or folders) or the whole suite, in one stage; with ``first_step`` and no
    ``paths``, that step's files first, then the rest. Most bugs are caught by their own step,
    and its files run first, as a learner working on that step would run them: whether the suite
    catches a bug does not depend on the order, but the time to the first failure does.
    """
    if paths is not None or first_step is None:
        return [list(paths if paths is not None else suite.suite_paths())]
    own = [path for label, files in suite.step_paths() if label.startswith(f"step {first_step} ")
           for path in files]
    return [own, [path for path in suite.suite_paths(first_step=first_step) if path not in own]]


def run_whole(impl, *, timeout=TIMEOUT, paths=None, seed=SEED, args=()):
    """The whole suite (or ``paths``) against ``impl``, NOT stopping at the first failure.

    For an implementation that must pass (quality/variants/): every failing
    test is wanted, not the first. The same run as ``run_one`` otherwise (the
    project's runner, a fresh example database, the dev profile, ``seed``).
    Returns the ``runner.Run``: ``failures`` lists every failing test. ``args``: more pytest options.
    """
    if paths is None:
        paths = suite.suite_paths()
    args = [f"--impl={pathlib.Path(impl).resolve()}", "-q", "-p", "no:cacheprovider", *LAB, *args]
    if seed != "random":
        args.append(f"--hypothesis-seed={seed}")
    return runner.run([*args, *map(str, paths)], profile="dev", timeout=timeout)


def run_all(selected=None, *, reference=True, workers=None, on_result=None, paths=None, seed=SEED, alone=False):
    """Run the suite against each bug (and the reference), ``workers`` at a time, ``-x``.

    Returns the results in the collection's order, the reference's first.
    ``on_result(result)`` is called as each one finishes (for progress).
    ``paths`` runs only those test files or folders (say, stateful/ alone).
    Every run is a fork of one process that collected the suite once (quality/forks.py); with
    ``alone``, a pytest process of its own per stage, as a learner's ``pytest -x`` would be (the
    benchmark's time to catch counts its start-up).
    """
    selected = list(selected or known.BUGS)
    args = [*LAB] + ([f"--hypothesis-seed={seed}"] if seed != "random" else [])
    invariants = check.invariant_names()
    by_key = {REFERENCE_KEY: None, **{bug.id: bug for bug in selected}}

    def result(key, run):
        return Result(by_key[key], check.outcome(run, invariants))

    with tempfile.TemporaryDirectory(prefix="resume-quality-bugs-") as folder:
        files = write_bugs(folder, selected)
        work = [(REFERENCE_KEY, REFERENCE, stages(paths=paths))] if reference else []
        work += [(bug.id, files[bug.id], stages(bug.step, paths)) for bug in selected]
        runs = (forks.run_alone if alone else forks.run)(
            work, workers=workers or jobs(), timeout=TIMEOUT, args=args,
            on_run=None if on_result is None else lambda key, run: on_result(result(key, run)))
    return [result(key, runs[key]) for key, _, _ in work]
