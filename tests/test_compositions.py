"""The composition table (quality/compositions.py) is the one docs/DOMAINS.md shows, and each
row names a test that exists and a known bug that exists; ``python -m quality.compositions``
proves each row (the whole suite per bug and seed: minutes, so not run here)."""

import ast

import pytest

from quality import bugs as known
from quality import compositions
from resume.testing.grading import check

ROWS = compositions.ROWS


def test_docs_domains_shows_the_table():
    assert compositions.table() in (check.ROOT / "docs" / "DOMAINS.md").read_text()


@pytest.mark.parametrize("row", ROWS, ids=[row.bug for row in ROWS])
def test_each_row_names_its_test_and_a_known_bug_of_the_collection(row):
    assert row.bug in {bug.id for bug in known.BUGS}
    for test in (row.test, *row.mixes):
        path, function = test.split("::")
        tree = ast.parse((check.ROOT / path).read_text())
        assert function in {node.name for node in ast.walk(tree)
                            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}, test
