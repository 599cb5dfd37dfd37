"""Every test a doc names exists: a test function (its first look counted with it), or a test
file, of properties/, stateful/, tests/ or quality/. A doc that names a deleted or renamed test
sends a reader to nothing; generated docs are regenerated, hand-written ones edited. A line that
says the test was removed, deleted or renamed may name it (a doc's history), and a name followed
by ``<`` or ``*`` is a pattern (``test_step<N>_*.py``)."""

import ast
import functools
import re

import pytest

from resume.testing import spec

FOLDERS = ("properties", "stateful", "tests", "quality")
DOCS = sorted([*spec.ROOT.glob("docs/*.md"), spec.ROOT / "README.md", *spec.ROOT.glob("*/README.md")])


@functools.cache  # parsed when a test asks, not when pytest collects (in every worker)
def existing_tests():
    names = set()
    for folder in FOLDERS:
        for path in (spec.ROOT / folder).rglob("*.py"):
            names.add(path.stem)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Assign):
                    names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(spec.ROOT)))
def test_each_test_a_doc_names_exists(doc):
    named = {name for line in doc.read_text().splitlines() if not re.search(r"\b(removed|deleted|renamed)\b", line)
             for name in re.findall(r"\btest_[a-z0-9_]*[a-z0-9]\b(?![<*])", line)}  # a name ending in _ is a prefix
    missing = sorted(name for name in named if name not in existing_tests()
               and name.removesuffix("_first_look") not in existing_tests())
    assert not missing, f"{doc.name} names tests that do not exist: {missing}"


def test_each_row_of_the_domain_table_names_the_test_functions_that_draw_it():
    table = (spec.ROOT / "docs" / "DOMAINS.md").read_text().split("| parameter | strategy |")[1].split("\n\n")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows
    bare = [row.split("|")[1].strip() for row in rows if "test_" not in row.split("|")[-2]]
    assert not bare, f"rows of docs/DOMAINS.md that name no test function: {bare}"
