"""``resume check`` shows a learner the whole failure, for real failures of known bugs.

Four known bugs of quality/bugs.py, of four different steps (1, 3, 5, 6), each patched
into a copy of resume/client.py in a temporary folder; ``check`` runs only
that bug's step (``steps=[...]``), with one fixed Hypothesis seed (so the
verdict does not depend on luck) and a fresh example database. Claims, for
each report:

* the falsifying example is there, under whatever heading Hypothesis gives it;
* every note Hypothesis attached to the failure (the example, each draw, each
  ``note()``, a state machine's steps) is printed whole, line for line, in
  order - the report does not cut a multi-line draw or drop a block;
* the failing line of the suite is shown as it stands in the test file, with
  the error's type and message;
* the command to run that one test again names the test and the file.

The four checks run two at a time (each is a pytest process: 2-4 s of CPU;
these four bugs were picked among the cheapest to catch of their steps).
The same claims for a state machine's report (its steps as the example) are
in quality/test_check_report_machines.py. Like every test that runs the
suite against known bugs, these are meta-tests (``-m quality``, run by
``.ci/run``): they would take a tenth of the default suite's minute.
"""

import concurrent.futures
import io
import pathlib
import re

import pytest

from quality import bugs as known
from quality import meta
from resume.testing import check

pytestmark = pytest.mark.quality

# (bug, the step check runs, a fragment of its counterexample any faithful
# test of that step must show): fragments are facts about the bug itself.
CASES = [
    ("crlf-accepted", "1", "\\r"),  # the frame ending in CR LF that was accepted
    ("gap-applied", "3", "Gap"),  # the model expected Gap where it was applied
    ("no-ack-for-duplicate", "5", "duplicate"),  # the duplicate sent again, not ACKed
    ("ack-before-commit", "6", "ACK"),  # an ACK sent for an event not committed
]
HEADING = re.compile(r"^\s*(Falsifying|Failing)\b.*(example|test case)", re.MULTILINE)


def run_check(case, folder):
    """Patch the bug in, run ``check`` on its step; what it printed and its outcomes."""
    bug_id, step, fragment = case
    bug = next(b for b in known.BUGS if b.id == bug_id)
    impl = meta.write_bugs(folder / bug_id, [bug])[bug_id]
    outcomes = []

    def recording(*args, **kwargs):
        outcomes.append(real(*args, **kwargs))
        return outcomes[-1]

    real = check.run_suite
    out, err = io.StringIO(), io.StringIO()
    code = check.check(impl, steps=[step], seed=0, storage=folder / bug_id / "hypothesis",
                       out=out, err=err, run=recording)
    return bug_id, fragment, impl, code, out.getvalue(), err.getvalue(), outcomes


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check-reports")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda case: run_check(case, folder), CASES))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_the_report_of_a_known_bug_holds_the_example_the_notes_and_the_assertion(reports, index):
    assert_complete_report(*reports[index])


def assert_complete_report(bug_id, fragment, impl, code, out, err, outcomes):
    """The claims of this module's docstring, for one report."""
    assert code == 1, f"{bug_id} not caught:\n{out}{err}"
    assert err == ""
    (outcome,) = outcomes
    failure = outcome.failure
    report = out

    # The example, under any heading, and the bug's own fragment.
    assert HEADING.search(report), report
    assert fragment in report, report

    # Every note, whole and in order (the implementation's module line aside).
    printed = [line.strip() for line in report.splitlines()]
    for entry in failure.failures:
        expected = [line.strip() for note in entry["notes"] for line in note.splitlines()
                    if not line.lstrip().startswith("impl=<module ")]
        assert len(expected) >= 2, entry  # a heading and at least the example's body
        at = printed.index(expected[0])
        assert printed[at:at + len(expected)] == expected

        # The failing line as the test file holds it, and the error.
        where = entry["where"]
        assert f"failed at {where['file']}:{where['line']}:" in report
        source_line = (check.ROOT / where["file"]).read_text().splitlines()[where["line"] - 1].strip()
        assert source_line in printed
        assert entry["error"].splitlines()[0].strip() in printed

    # How to run it again.
    assert check.reproduce_command(impl, failure.nodeid) in report
    assert pathlib.Path(failure.nodeid.split("::")[0]).parts[0] in ("properties", "stateful")
