"""The README is the learner's page (issue 19): short, and its commands are the ones CI runs.

* at most 150 lines;
* the install, main-job and test commands that ``.ci/run`` runs word for
  word are there, each on a line of its own in a shell block;
* its example report has the shape ``resume check`` prints: a failing step
  with SPEC.md quoted, ``expected:``/``got:`` and a ``python3`` rerun line,
  and the closing ``N of 7 steps pass`` line;
* every link to a file of the checkout points at a file that exists.
"""

import re

from resume.testing.grading import runner

README = runner.ROOT / "README.md"


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 150


def test_the_commands_ci_runs_are_in_the_readme_word_for_word():
    commands = [line.split("#", 1)[0].strip() for line in README.read_text().splitlines()]
    for command in ('python3 -m pip install -e ".[test]"', "python3 -m resume demo", "python3 -m pytest -n auto"):
        assert command in commands, command


def test_the_readme_shows_a_report_as_check_prints_it():
    text = README.read_text()
    assert re.search(r"^step 3  apply_event \.+ FAIL", text, re.MULTILINE)
    assert re.search(r'^    SPEC\.md, step \d: "', text, re.MULTILINE)
    assert re.search(r"^    expected: ", text, re.MULTILINE) and re.search(r"^    got: ", text, re.MULTILINE)
    assert re.search(r"^    again:    python3 -m resume check \S+ --step \d --seed \d+$", text, re.MULTILINE)
    assert re.search(r"^\d of 7 steps pass", text, re.MULTILINE)


def test_every_link_of_the_readme_points_at_a_file_that_exists():
    for target in re.findall(r"\]\(([^)#]+)\)", README.read_text()):
        if "://" not in target:
            assert (runner.ROOT / target).exists(), target
