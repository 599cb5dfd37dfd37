"""A file half written is checked step by step (issue 56): each step runs once its own names, and
those of the steps it builds on (``model.BUILDS_ON``), are written, whatever else is missing.

Three implementations written apart (the reference, and two of the foreign corpus, one built
around a class), each cut after step N for N = 1..6: every top-level definition of a later step's
public name left out, wherever the file declares it (the exception classes too: ``Gap`` and
``Conflict`` go with step 3, ``ResyncRequired`` with step 4). ``python3 -m resume check`` on the
cut files: step N passes, and step N+1 is ``not written yet``; ``--step 1`` alone exits 0 on a
file with nothing but step 1. (Steps before N passed in their own cut, with fewer names still.)

A meta-test (``-m quality``, run by ``.ci/run``), as the correct variants are: eighteen files
checked cost half a minute of CPU, which the README's test command would wait for.
"""

import ast
import concurrent.futures
import json
import os
import subprocess
import sys

import pytest

from resume.testing import model
from resume.testing.drivers import loader
from resume.testing.grading import runner

pytestmark = pytest.mark.quality

IMPLEMENTATIONS = {
    "reference": loader.DEFAULT_PATH,
    "procedural": runner.ROOT / "quality" / "foreign" / "correct" / "procedural.py",
    "class_based": runner.ROOT / "quality" / "foreign" / "correct" / "class_based.py",
}


def cut(source, step):
    """``source`` without the top-level definitions of the public names of the steps after ``step``."""
    later = {name for number, names in model.PUBLIC_NAMES.items() if number > step for name in names}
    lines = source.splitlines(keepends=True)
    for node in reversed(ast.parse(source).body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = {node.name}
        elif isinstance(node, ast.Assign):
            names = {target.id for target in node.targets if isinstance(target, ast.Name)}
        else:
            continue
        if names & later:
            start = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
            del lines[start - 1:node.end_lineno]
    return "".join(lines)


def write_cuts(folder, step):
    """The three implementations cut after ``step``, as files in ``folder``."""
    files = []
    for name, path in IMPLEMENTATIONS.items():
        files.append(folder / f"{name}_after_step{step}.py")
        files[-1].write_text(cut(path.read_text(), step))
    return files


def check(folder, step, files):
    steps = ["--step", str(step)] + (["--step", str(step + 1)] if step > 1 else [])
    env = {key: value for key, value in os.environ.items() if key != "HYPOTHESIS_PROFILE"}
    done = subprocess.run([sys.executable, "-m", "resume", "check", *map(str, files), *steps, "--seed", "1", "--json"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    return step, done.returncode, json.loads(done.stdout)


def test_a_file_cut_after_each_step_passes_that_step_and_the_next_is_not_written_yet(tmp_path):
    # Cut here, one after the other: ast.parse in two threads at once fails now and then under
    # CPython 3.11.7 ("AST constructor recursion depth mismatch"; seen in CI).
    cuts = {step: write_cuts(tmp_path, step) for step in range(1, 7)}
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(lambda step: check(tmp_path, step, cuts[step]), range(1, 7)))
    for step, code, document in runs:
        for entry in document["files"]:
            parts = {part["step"]: part for part in entry["steps"]}
            assert parts[str(step)]["status"] == "ok", (entry["file"], parts[str(step)])
            if step > 1:
                assert parts[str(step + 1)]["status"] == "not written yet", (entry["file"], parts[str(step + 1)])
                lacking = {name for names in parts[str(step + 1)]["detail"].split(", ") for name in [names]}
                assert lacking == set(model.PUBLIC_NAMES[step + 1]), parts[str(step + 1)]
        assert code == (0 if step == 1 else 1), document
