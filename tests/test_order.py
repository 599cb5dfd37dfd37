"""The suite's order: first looks, the steps' other tests, their long searches, the machines and deeper levels.

``pytest -x`` stops at the first failure, so the order is the time a learner
waits for it (conftest.py's collection hook). A run given files keeps their order.
"""

import re
import subprocess
import sys

from resume.testing import suite
from resume.testing.plugin.first_look import SUFFIX


def collected(*args):
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=suite.ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_a_plain_run_goes_looks_first_then_the_steps_other_tests_then_their_searches_then_the_rest():
    ids = collected("properties", "stateful")
    names = [test.split("::")[1].split("[")[0] for test in ids]
    looks = len([name for name in names if name.endswith(SUFFIX)])
    assert looks and all(name.endswith(SUFFIX) for name in names[:looks]), "the first looks do not all come first"
    searches = {(test.split("::")[0], name.removesuffix(SUFFIX)) for test, name in zip(ids[:looks], names[:looks])}
    order = {path.relative_to(suite.ROOT).as_posix(): index for index, path in enumerate(suite.suite_paths())}

    def group(test, name):
        if name.endswith(SUFFIX):
            return 0
        if re.match(r"properties/test_step[1-7]_", test):
            return 2 if (test.split("::")[0], name) in searches else 1
        return 3

    placed = [(group(test, name), order[test.split("::")[0]]) for test, name in zip(ids, names)]
    assert placed == sorted(placed), "not looks, the steps' other tests, their searches, then the rest, step by step"
    assert {g for g, _ in placed} == {0, 1, 2, 3}
    assert ids[-1].startswith("stateful/") and "test_protocol.py" not in ids[-1], "the deeper levels come last"


def test_a_run_given_files_keeps_their_order_after_their_first_looks():
    ids = collected("properties/test_step7_run_client.py", "properties/test_step1_parse_line.py")
    looks = [test for test in ids if SUFFIX in test]
    assert ids[:len(looks)] == looks and looks[0].startswith("properties/test_step7_")
    rest = ids[len(looks):]
    assert rest[0].startswith("properties/test_step7_") and rest[-1].startswith("properties/test_step1_")
