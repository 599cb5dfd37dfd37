"""Every class and observation docs/DOMAINS.md lists as checked is drawn by the test it names.

The table "Drawn whole, and checked in CI" names, for each class, a test and
the ``event()`` that test records when it draws the class. This runs those
tests once, in one pytest process under the ``dev`` profile with a fixed
seed (the verdict is the same on every run), with Hypothesis's statistics,
and fails on a row whose event its test never recorded, or whose test was not
collected or did not pass: a draw narrowed or dropped, for speed or by
mistake, fails here by name, whatever the known bugs say.
"""

import re

from resume.testing import spec
from resume.testing.grading import runner

DOMAINS = spec.ROOT / "docs" / "DOMAINS.md"
SECTION = "## Drawn whole, and checked in CI"


def rows():
    """``[(class, node id, event or "")]`` of the section's table."""
    text = DOMAINS.read_text(encoding="utf-8")
    section = text[text.index(SECTION):].split("\n## ", 1)[0]
    found = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and "::" in cells[1]:
            found.append((cells[0], cells[1].strip("`"), cells[2]))
    return found


def statistics(output):
    """``{node id: its statistics text}`` from ``--hypothesis-show-statistics`` output."""
    sections, node = {}, None
    for line in output.splitlines():
        if re.match(r"^\S+\.py::\S.*:$", line):
            node = line[:-1]
            sections[node] = ""
        elif node is not None:
            sections[node] += line + "\n"
    return sections


def test_the_table_names_tests_and_events():
    assert len(rows()) >= 9, rows()


def test_every_listed_class_is_drawn_by_its_test():
    listed = rows()
    nodes = sorted({node for _, node, _ in listed})
    run = runner.run(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--hypothesis-seed=0",
                      "--hypothesis-show-statistics", *nodes], profile="dev", timeout=300)
    outcomes = {test.nodeid: test.outcome for test in run.tests}
    stats = statistics(run.output)
    missing = []
    for what, node, wanted in listed:
        if outcomes.get(node) != "passed":
            missing.append(f"{node}: {outcomes.get(node, 'not collected')} ({what})")
        elif wanted and wanted not in stats.get(node, ""):
            missing.append(f"{node}: never recorded the event {wanted!r} ({what})")
    assert not missing, "classes docs/DOMAINS.md lists that their test did not draw:\n" + "\n".join(missing)
