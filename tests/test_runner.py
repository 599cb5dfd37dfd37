"""The one subprocess runner (resume/testing/grading/runner.py): its environment and its structured results.

Claims:

* every child gets the same scrubbed environment: no shared example database
  unless asked, a fresh example folder unless asked, the project root first
  on PYTHONPATH;
* what a failure reports is read from the child's report hooks, whole,
  whatever Hypothesis calls the example: a ``Failing explicit example``
  (an ``@example``), a generated example with a multi-line ``Draw`` and
  ``note()`` lines, a state machine's steps; with the failing line and the
  comment above it, and the error.

The second claim runs one pytest process on three tiny, deliberately failing
tests written to a temporary folder (about a second), independent of the
suite's own tests.
"""

import pathlib
import re

from resume.testing.grading import runner

TINY = '''\
from hypothesis import example, given, note, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule


@settings(database=None)
@given(st.integers())
@example(7)
def test_explicit(n):
    # seven is not allowed
    assert n != 7


@settings(database=None, max_examples=50)
@given(st.data())
def test_drawn(data):
    pair = data.draw(st.tuples(st.just("fault"), st.just("x" * 90), st.just("y" * 90)), label="failure")
    note(f"before: {pair[0]}")
    assert pair[0] != "fault"  # a fault always fails here


class Machine(RuleBasedStateMachine):
    count = 0

    @rule()
    def step(self):
        self.count += 1
        assert self.count < 2, "two steps are too many"


TestMachine = Machine.TestCase
TestMachine.settings = settings(database=None, max_examples=50)
'''


def test_the_environment_is_scrubbed_the_same_way_for_everyone(monkeypatch, tmp_path):
    monkeypatch.setenv("HYPOTHESIS_DATABASE", "redis://example.invalid:6379/0")
    monkeypatch.setenv("HYPOTHESIS_DATABASE_READONLY", "1")
    monkeypatch.setenv("HYPOTHESIS_STORAGE_DIRECTORY", "/somewhere/shared")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-n 2")  # the parent run's (CI's), never the child's
    env = runner.environment(storage=tmp_path)
    assert "HYPOTHESIS_DATABASE" not in env and "HYPOTHESIS_DATABASE_READONLY" not in env
    assert "PYTEST_ADDOPTS" not in env
    assert env["HYPOTHESIS_STORAGE_DIRECTORY"] == str(tmp_path)
    assert env["PYTHONPATH"].split(":") == [str(runner.ROOT), "/elsewhere"]
    kept = runner.environment(keep_database=True, storage=runner.KEEP, profile="ci")
    assert kept["HYPOTHESIS_DATABASE"] == "redis://example.invalid:6379/0"
    assert kept["HYPOTHESIS_STORAGE_DIRECTORY"] == "/somewhere/shared"
    assert kept["HYPOTHESIS_PROFILE"] == "ci"


def test_failures_are_reported_whole_under_every_heading(tmp_path):
    (tmp_path / "test_tiny.py").write_text(TINY)
    run = runner.run(["-q", "-p", "no:cacheprovider", "test_tiny.py"], cwd=tmp_path)
    assert run.returncode == 1, run.output
    by_name = {test.nodeid.split("::", 1)[1]: test for test in run.tests}
    assert set(by_name) == {"test_explicit", "test_drawn", "TestMachine::runTest"}
    assert all(test.outcome == "failed" for test in by_name.values())

    (explicit,) = by_name["test_explicit"].failures
    # "Falsifying explicit example" or "Failing explicit example", by Hypothesis's version.
    assert re.match(r"\w+ explicit example: test_explicit\(", explicit["notes"][0])
    assert "n=7" in explicit["notes"][0]
    assert explicit["where"]["source"] == "# seven is not allowed\nassert n != 7"
    assert explicit["error"].startswith("AssertionError: assert 7 != 7")

    (drawn,) = by_name["test_drawn"].failures
    draw = next(note for note in drawn["notes"] if note.startswith("Draw 1 (failure): "))
    assert "x" * 90 in draw and "y" * 90 in draw  # the whole draw, however it is wrapped
    assert "before: fault" in drawn["notes"]
    assert drawn["where"]["source"] == 'assert pair[0] != "fault"  # a fault always fails here'

    (machine,) = by_name["TestMachine::runTest"].failures
    assert "state = Machine()" in machine["notes"]
    assert machine["notes"].count("state.step()") == 2
    assert machine["error"].startswith("AssertionError: two steps are too many")
    assert pathlib.PurePath(machine["where"]["file"]).name == "test_tiny.py"
