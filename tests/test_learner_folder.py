"""The learner's folder is left exactly as found, by ``check`` and by ``pytest --impl``.

Claim (issue 19): no ``__pycache__``, ``.hypothesis``, ``.pytest_cache``,
store or temporary file appears beside or under the learner's ``client.py``,
and the file's bytes and modification time are unchanged. Checked with
bytecode writing ON (``PYTHONDONTWRITEBYTECODE`` removed from the
environment), as on a learner's machine: ``check`` on a known-buggy file
through step 1, as a learner runs it, and on a correct file through a suite
whose one test starts the suite's receiver process on it (the one kind of
process the suite starts on the file); ``pytest --impl`` through one cheap
test, with the buggy file (a failing run writes all a passing one does, and
the failing example).
"""

import io
import os
import subprocess
import sys

import pytest

from tests import fake_suite
from quality import bugs as known
from quality import meta
from resume.testing.drivers import loader
from resume.testing.grading import check, runner


def listing(folder):
    """Every entry under ``folder``: its kind, size and modification time, and each file's bytes."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        entries[str(path.relative_to(folder))] = (path.is_dir(), stat.st_size, stat.st_mtime_ns,
                                                  path.read_bytes() if path.is_file() else None)
    return entries


def learner_folder(parent, source):
    folder = parent / "my lab"  # a space too: paths are passed whole
    folder.mkdir()
    (folder / "client.py").write_bytes(source.read_bytes())
    (folder / "notes.txt").write_text("mine\n")
    return folder / "client.py"


def buggy_file(tmp_path):
    """A learner's folder with a copy of client.py that fails step 1 (its failing example is saved)."""
    bug = next(b for b in known.BUGS if b.id == "strip-before-check")
    return learner_folder(tmp_path, meta.write_bugs(tmp_path / "bugs", [bug])[bug.id])


def as_a_learner_runs(*args, cwd=runner.ROOT):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "HYPOTHESIS_STORAGE_DIRECTORY")}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_check_leaves_a_buggy_files_folder_as_found(tmp_path):
    """As a learner runs it: step 1 fails, and Hypothesis saves the failing example."""
    learner_file = buggy_file(tmp_path)
    before = listing(learner_file.parent)
    done = as_a_learner_runs("resume", "check", str(learner_file), "--step", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert listing(learner_file.parent) == before


def test_check_leaves_a_correct_files_folder_as_found_though_its_processes_load_it(tmp_path, monkeypatch):
    """The check loads the file, its lane too, and the lane's test starts a receiver process on it
    (resume/testing/drivers/receiver.py: the one kind of process the suite starts on a learner's
    file, in step 7, the deeper levels and the power level alike, under strace or not), which runs
    a session with the real publisher. Bytecode writing is on, as on a learner's machine."""
    learner_file = learner_folder(tmp_path, loader.DEFAULT_PATH)
    root = fake_suite.write(tmp_path / "suite", fake_suite.A_RECEIVER)
    before = listing(learner_file.parent)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    out = io.StringIO()
    assert check.check(learner_file, steps=["1"], seed=0, storage=tmp_path / "hypothesis", out=out,
                       err=io.StringIO(), root=root) == 0, out.getvalue()
    assert listing(learner_file.parent) == before


# One class of step 1's property: the buggy file fails it (and Hypothesis saves
# the failing example); a whole file costs seconds more.
STEP1_NODE = "test_step1_parse_line.py::test_parse_line_does_what_the_model_predicts[malformed: CR or CRLF]"


def test_pytest_impl_leaves_the_learner_folder_as_found(tmp_path):
    learner_file = buggy_file(tmp_path)
    before = listing(learner_file.parent)
    done = as_a_learner_runs("pytest", "--impl", str(learner_file), f"properties/{STEP1_NODE}", "-q")
    assert done.returncode == 1, done.stdout + done.stderr
    assert listing(learner_file.parent) == before


@pytest.mark.parametrize("form", ["--impl=client.py", "--impl client.py"])
def test_pytest_impl_run_from_the_learner_folder_leaves_it_as_found(tmp_path, form):
    """Run where a learner is: in their folder, naming the file relatively and the suite's tests by path.

    Hypothesis would keep ``.hypothesis/`` in the folder pytest runs in, and
    pytest its ``.pytest_cache`` in its root, which is the file's folder for
    ``--impl PATH`` with a space (pytest issue #8846): the suite's plugin
    moves both to the suite's folder. A failing file: its run writes all a
    passing one does (the cache, the bytecode) and more (the failing example).
    """
    learner_file = buggy_file(tmp_path)
    before = listing(learner_file.parent)
    step1 = str(runner.ROOT / "properties" / STEP1_NODE)
    done = as_a_learner_runs("pytest", *form.split(" "), step1, "-q", cwd=learner_file.parent)
    assert done.returncode == 1, done.stdout + done.stderr
    assert listing(learner_file.parent) == before


def steps_one_and_two(folder):
    """A learner's file with steps 1 and 2 written (resume/client.py up to step 3), in ``folder``."""
    source = loader.DEFAULT_PATH.read_text()
    path = folder / "client.py"
    path.write_text(source[:source.index("# ---------------------------------------------------------------- step 3")])
    return path


def test_a_half_written_file_checks_step_by_step(tmp_path, one_lane):
    """Steps 1 and 2 written: they are checked and pass, every other part is "not written yet"
    (named, not run), and the check exits 1; ``--step 1`` runs step 1 alone and exits 0.
    (A suite of a few lines: the claim is the grader's, whatever the suite's tests are.)"""
    path = steps_one_and_two(tmp_path)
    root = fake_suite.write(tmp_path / "suite", fake_suite.STEPS_ONE_AND_TWO)
    out = io.StringIO()
    code = check.check(path, seed=0, storage=tmp_path / "hypothesis", out=out, err=io.StringIO(), root=root)
    assert code == 1, out.getvalue()
    lines = out.getvalue().splitlines()
    assert [" ok " in line for line in lines if line.startswith(("step 1 ", "step 2 "))] == [True, True]
    for step in range(3, 8):
        assert any(line.startswith(f"step {step} ") and "not written yet: define" in line for line in lines), step
    assert "2 of 7 steps written" in out.getvalue()
    out = io.StringIO()
    assert check.check(path, steps=["1"], seed=0, storage=tmp_path / "hypothesis", out=out, err=io.StringIO(),
                       root=root) == 0, out.getvalue()
    assert "step 2" not in out.getvalue()


def test_a_file_that_writes_when_imported_leaves_the_suite_and_its_folder_as_found(tmp_path, monkeypatch, one_lane):
    """A stray ``open_store("store.db")`` at the file's top level runs in a scratch folder of its
    own: no ``store.db`` appears beside the file, in the suite's folder (where the lanes run), or
    where the check was started, though the check and each of its lanes import the file."""
    folder = tmp_path / "my lab"
    folder.mkdir()
    path = steps_one_and_two(folder)
    path.write_text(path.read_text() + '\nopen_store("store.db").close()  # trying it out\n')
    root = fake_suite.write(tmp_path / "suite", fake_suite.STEPS_ONE_AND_TWO)
    before, suite = listing(folder), sources(root)
    monkeypatch.chdir(folder)
    out = io.StringIO()
    assert check.check(path, steps=["1", "2"], seed=0, storage=tmp_path / "hypothesis", out=out,
                       err=io.StringIO(), root=root) == 0, out.getvalue()
    assert listing(folder) == before
    assert sources(root) == suite


def sources(root):
    """Every entry under ``root`` but the bytecode pytest writes for the suite's own files."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if "__pycache__" not in path.parts)


def test_each_steps_tests_use_only_the_names_that_step_needs():
    """A half-written file is checked step by step (``model.names_for``): step N's test files call
    only the public names of step N and of the steps it builds on, so that a file with steps 1-N
    written passes them. Read from the files: every ``impl.<name>`` they use."""
    import re

    from resume.testing import model, suite
    for path in sorted((runner.ROOT / "properties").glob("test_step*_*.py")):
        used = set(re.findall(r"\bimpl\.([A-Za-z_]+)", path.read_text())) & set(loader.PUBLIC_NAMES)
        extra = used - set(model.names_for(suite.step_of(path)))
        assert not extra, f"{path.name} uses {sorted(extra)}, which step {suite.step_of(path)} does not build on"
