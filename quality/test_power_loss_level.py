"""The meta-test of the power-cut level (SPEC.md decision 18), both sides.

Selected with ``python -m pytest -m quality quality/test_power_loss_level.py``.

* Every known bug of quality/power_bugs.py makes ``pytest -m power_loss``
  fail, with a story (which ACK, what was not durable, what the store held,
  which event is lost); resume/client.py and every correct variant pass it.
  Each under ``dev`` with the meta-test's seed (``meta.SEED``) and three
  random seeds, printed, each run a subprocess with a fresh example database
  (``resume.testing.grading.runner``), ``meta.jobs()`` at a time.
* The level is beyond the lab: SQLite's defaults (the ``sqlite-defaults``
  bug) pass the lab's suite: the bug is the correct variant of that name.
* Traceability: every power bug breaks decision 18 (``clauses.BEYOND_THE_LAB``).
"""

import concurrent.futures
import pathlib
import random
import tempfile

import pytest

from quality import clauses, meta, variants
from quality import power_bugs as power
from resume.testing.drivers import loader
from resume.testing.grading import runner

pytestmark = pytest.mark.quality

TEST_FILE = pathlib.Path(__file__).resolve().parent.parent / "properties" / "test_power_loss.py"
SEEDS = [meta.SEED] + [str(random.randrange(2**32)) for _ in range(3)]
TIMEOUT = 120.0
STORY = ("then the power was cut", "After the restart the store held")  # words every story has


def _level(path, seed):
    """``pytest -m power_loss`` on the level's test file against ``path``, under dev."""
    return runner.run([f"--impl={path}", "-q", "-p", "no:cacheprovider", "-m", "power_loss",
                       f"--hypothesis-seed={seed}", str(TEST_FILE)], profile="dev", timeout=TIMEOUT)


@pytest.fixture(scope="module")
def runs():
    """``{(id, seed): Future of runner.Run}``: the reference, every variant and every bug, under each seed."""
    with tempfile.TemporaryDirectory(prefix="resume-power-level-") as folder, \
            concurrent.futures.ThreadPoolExecutor(meta.jobs()) as pool:
        paths = {"reference": meta.REFERENCE}
        paths.update(meta.write_copies(folder, power.VARIANTS, lambda v: f"# POWER VARIANT ({v.id}): {v.what}\n",
                                       power.apply))
        paths.update(meta.write_copies(folder, power.BUGS, lambda b: f"# POWER BUG ({b.id}): {b.what}\n",
                                       power.apply))
        print(f"\npower level seeds: {', '.join(SEEDS)}")
        yield {(name, seed): pool.submit(_level, path, seed) for name, path in paths.items() for seed in SEEDS}


@pytest.mark.parametrize("item", power.BUGS + power.VARIANTS, ids=lambda item: item.id)
def test_each_patch_applies_once_and_loads(item, tmp_path):
    source = meta.REFERENCE.read_text()
    patched = power.apply(item, source)
    assert patched != source
    path = tmp_path / "client.py"
    path.write_text(patched)
    loader.load(path)


@pytest.mark.parametrize("seed_index", range(len(SEEDS)))
@pytest.mark.parametrize("name", ["reference"] + [v.id for v in power.VARIANTS])
def test_the_level_passes_the_reference_and_each_correct_variant(runs, name, seed_index):
    seed = SEEDS[seed_index]
    run = runs[(name, seed)].result()
    failing = [test.nodeid for test in run.failures]
    passed = [test.nodeid for test in run.tests if test.outcome == "passed"]
    assert not run.timed_out and run.returncode == 0 and not failing and passed, (
        f"the power level fails the correct {name} (seed {seed}, exit {run.returncode}): a false alarm\n"
        + run.output[-3000:])


@pytest.mark.parametrize("seed_index", range(len(SEEDS)))
@pytest.mark.parametrize("bug", power.BUGS, ids=lambda bug: bug.id)
def test_the_level_catches_each_known_bug_with_a_story(runs, bug, seed_index, capsys):
    seed = SEEDS[seed_index]
    run = runs[(bug.id, seed)].result()
    assert not run.timed_out and run.returncode == 1 and run.failures, (
        f"the power level does not catch {bug.id} (seed {seed}, exit {run.returncode}):\n" + run.output[-3000:])
    errors = [entry["error"] for test in run.failures for entry in test.failures] or \
             [test.longrepr for test in run.failures]
    stories = [error for error in errors if all(words in error for words in STORY)]
    assert stories, f"{bug.id}: a failure without its story:\n" + "\n".join(errors)[-3000:]
    if seed_index == 0:
        with capsys.disabled():
            print(f"\n{bug.id}: {stories[0].strip().splitlines()[-1][:600]}")


def test_sqlite_defaults_are_the_correct_variant_of_that_name():
    """Beyond the lab: SQLite's defaults pass the lab's whole suite. The power bug is the very code of
    the correct variant ``sqlite-defaults``, which quality/test_correct_variants.py runs the lab on."""
    defaults = next(bug for bug in power.BUGS if bug.id == "sqlite-defaults")
    variant = next(v for v in variants.VARIANTS if v.id == "sqlite-defaults")
    source = meta.REFERENCE.read_text()
    assert power.apply(defaults, source) == variants.apply(variant, source)


def test_every_power_bug_breaks_decision_18():
    ids = {clause.id for clause in clauses.BEYOND_THE_LAB}
    assert set(clauses.POWER_BREAKS) == {bug.id for bug in power.BUGS}
    assert all(set(found) <= ids and found for found in clauses.POWER_BREAKS.values())
    assert ids == {c for found in clauses.POWER_BREAKS.values() for c in found}, "a clause with no bug"
