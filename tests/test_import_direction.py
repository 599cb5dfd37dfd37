"""The kit's imports flow one way (``resume.testing``'s docstring), with no cycle.

The parts, lowest first: the contract (``spec``, ``model``), ``drivers/``,
``strategies/``, ``plugin/``; the suite's make-up (``suite``: its files and
profiles), which the plugin and the grader read; and ``grading/``, which may use the contract and
the drivers (to load a file) but never Hypothesis, so that ``resume check``
starts without it. A module may import its own part and the parts below it.
Every ``import`` counts, a function's own included.
"""

import ast
import functools
import subprocess
import sys

import pytest

from resume.testing import spec

PACKAGE = spec.ROOT / "resume" / "testing"
# part -> the parts it may import (its own included)
MAY_IMPORT = {
    "contract": {"contract"},
    "suite": {"contract", "suite"},
    "drivers": {"contract", "drivers"},
    "strategies": {"contract", "drivers", "strategies"},
    "plugin": {"contract", "suite", "drivers", "strategies", "plugin"},
    "grading": {"contract", "suite", "drivers", "grading"},
}


def part(module):
    """``"drivers"`` for ``resume.testing.drivers.peers``; ``"contract"`` for spec and model."""
    name = module.split(".")[2]
    return "contract" if name in ("spec", "model") else name


@functools.cache
def modules():
    """``{dotted name: path}`` of every module of the kit but the packages' indexes."""
    return {"resume.testing." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts): path
            for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}


def imports(module, path):
    """The kit's modules that ``module`` imports, anywhere in it."""
    known = modules()
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("resume.testing"):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
    return {name for name in found if name in known}


@functools.cache  # parsed when a test asks, not when pytest collects (in every worker)
def graph():
    return {module: imports(module, path) for module, path in modules().items()}


@pytest.mark.parametrize("module", sorted(modules()))
def test_each_module_imports_only_its_own_part_and_the_parts_below(module):
    wrong = {other for other in graph()[module] if part(other) not in MAY_IMPORT[part(module)]}
    assert not wrong, f"{module} ({part(module)}) imports {sorted(wrong)}"


def test_no_import_cycle():
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("an import cycle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for other in sorted(graph()[module]):
            visit(other)
        path.pop()
        done.add(module)

    for module in sorted(graph()):
        visit(module)


@pytest.mark.parametrize("module", ["resume.cli", "resume.testing.suite", "resume.testing.grading.check",
                                    "resume.testing.grading.verdict"])
def test_the_command_line_and_the_grader_start_without_hypothesis_or_pytest(module):
    code = (f"import sys, {module}; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'hypothesis', 'pytest', '_pytest'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"importing {module} imports {out.strip()}"
