"""The suite's order: each step's model property first, then steps 1-7, the protocol machine, the deeper levels.

``pytest -x`` stops at the first failure, so the order is the time a learner
waits for it (conftest.py's collection hook). A run given files keeps their order.
"""

import subprocess
import sys

import conftest
from resume.testing import check


def collected(*args):
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=check.ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_a_plain_run_starts_with_each_steps_model_property_then_goes_step_by_step():
    ids = collected("properties", "stateful")
    names = [test.split("::")[1].split("[")[0] for test in ids]
    first = len([name for name in names if name in conftest.FIRST])
    assert set(names[:first]) == conftest.FIRST, "the model properties do not all come first"
    order = {path.relative_to(check.ROOT).as_posix(): index for index, path in enumerate(check.suite_paths())}
    files = [order[test.split("::")[0]] for test in ids]
    assert files[:first] == sorted(files[:first]) and files[first:] == sorted(files[first:])
    assert ids[-1].startswith("stateful/") and "test_protocol.py" not in ids[-1], "the deeper levels come last"


def test_a_run_given_files_keeps_their_order():
    ids = collected("properties/test_step7_crash_resume.py", "properties/test_step1_parse_line.py")
    assert ids[0].startswith("properties/test_step7_") and ids[-1].startswith("properties/test_step1_")
