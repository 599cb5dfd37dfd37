"""pytest-asyncio runs as the suite expects, whether or not pytest read pyproject.toml.

A bare ``pytest --impl PATH`` may not read pyproject.toml (pytest issue
#8846, see conftest.py); the async tests must then run the same way: strict
mode (only tests marked ``@pytest.mark.asyncio`` are async) and one event
loop per test (all Hypothesis examples of a test share it, and
``resume.testing.drivers.hygiene`` checks each example).
"""

import asyncio

import pytest

LOOPS = []


def test_strict_mode_and_a_loop_per_test(pytestconfig):
    mode = pytestconfig.getoption("asyncio_mode") or pytestconfig.getini("asyncio_mode")
    assert mode == "strict"
    assert pytestconfig.getini("asyncio_default_test_loop_scope") == "function"


@pytest.mark.asyncio
@pytest.mark.parametrize("turn", [1, 2])
async def test_each_async_test_runs_on_a_loop_of_its_own(turn):
    # The loops of the async tests before this one in this process (pytest-xdist may run the two
    # turns in two processes: then one of them checks nothing) are other loops, and closed.
    current = asyncio.get_running_loop()
    assert all(loop is not current and loop.is_closed() for loop in LOOPS)
    LOOPS.append(current)
