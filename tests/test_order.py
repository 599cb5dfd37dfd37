"""The suite's order: the first looks, each step's model property, steps 1-7, the protocol machine, the deeper levels.

``pytest -x`` stops at the first failure, so the order is the time a learner
waits for it (conftest.py's collection hook). A run given files keeps their order.
"""

import subprocess
import sys

import conftest
from resume.testing import check
from resume.testing.first_look import SUFFIX


def collected(*args):
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=check.ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_a_plain_run_starts_with_the_first_looks_then_each_steps_model_property_then_goes_step_by_step():
    ids = collected("properties", "stateful")
    names = [test.split("::")[1].split("[")[0] for test in ids]
    looks = len([name for name in names if name.endswith(SUFFIX)])
    assert looks and all(name.endswith(SUFFIX) for name in names[:looks]), "the first looks do not all come first"
    assert {name.removesuffix(SUFFIX) for name in names[:looks]} <= conftest.FIRST, "a first look of another test"
    first = looks + len([name for name in names if name in conftest.FIRST])
    assert set(names[looks:first]) == conftest.FIRST, "the model properties do not all come next"
    order = {path.relative_to(check.ROOT).as_posix(): index for index, path in enumerate(check.suite_paths())}
    files = [order[test.split("::")[0]] for test in ids]
    for part in (files[:looks], files[looks:first], files[first:]):
        assert part == sorted(part), "not step by step"
    assert ids[-1].startswith("stateful/") and "test_protocol.py" not in ids[-1], "the deeper levels come last"


def test_a_run_given_files_keeps_their_order_after_their_first_looks():
    ids = collected("properties/test_step7_run_client.py", "properties/test_step1_parse_line.py")
    looks = [test for test in ids if SUFFIX in test]
    assert ids[:len(looks)] == looks and looks[0].startswith("properties/test_step7_")
    rest = ids[len(looks):]
    assert rest[0].startswith("properties/test_step7_") and rest[-1].startswith("properties/test_step1_")
