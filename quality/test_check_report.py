"""``resume check`` reports a known bug in the learner's words, whole, for real failures.

Four known bugs of quality/bugs.py, of four different steps (1, 3, 5, 6), each patched
into a copy of resume/client.py in a temporary folder; ``check`` runs only
that bug's step (``steps=[...]``), with one fixed Hypothesis seed (so the
verdict does not depend on luck) and a fresh example database. Claims, for
each report (resume.testing.grading.verdict builds it):

* the bug's own fragment is in the counterexample the report shows;
* every line the test noted (``note()``: the calls, the store they ran on,
  a session's lines) and a state machine's every step is printed, whole and
  in order - the report leaves out only Hypothesis's own blocks of the
  suite's objects (its example heading, its draws, its explanations);
* SPEC.md's clause is quoted word for word; when the test compared with the
  model (``model.Mismatch``), the call, expected and got are the model's,
  as they are;
* the line to run it again names the file, the step and the seed.

The four checks run two at a time (each is a pytest process: 2-4 s of CPU;
these four bugs were picked among the cheapest to catch of their steps).
The same claims for a state machine's report (its steps as the example) are
in quality/test_check_report_machines.py. Like every test that runs the
suite against known bugs, these are meta-tests (``-m quality``, run by
``.ci/run``): they would take a tenth of the default suite's minute. The
report's shape as a learner reads it (no harness reprs, the rerun line
pasted in ``/``) is quality/test_check_verdict.py.
"""

import concurrent.futures
import io
import pathlib
import re

import pytest

from quality import bugs as known
from quality import meta
from resume.testing.grading import check, verdict
from resume.testing import spec

pytestmark = pytest.mark.quality

# (bug, the step check runs, a fragment of its counterexample any faithful
# test of that step must show): fragments are facts about the bug itself.
CASES = [
    ("crlf-accepted", "1", "\\r"),  # the frame ending in CR LF that was accepted
    ("gap-applied", "3", "Gap"),  # the model expected Gap where it was applied
    ("no-ack-for-duplicate", "5", "duplicate"),  # the duplicate sent again, not ACKed (the call says so)
    ("ack-before-commit", "6", "ACK"),  # an ACK sent for an event not committed
]
SPEC = " ".join((check.ROOT / "SPEC.md").read_text().split())


def run_check(case, folder):
    """Patch the bug in, run ``check`` on its step; what it printed and its outcomes."""
    bug_id, step, fragment = case
    bug = next(b for b in known.BUGS if b.id == bug_id)
    impl = meta.write_bugs(folder / bug_id, [bug])[bug_id]
    outcomes = []
    out, err = io.StringIO(), io.StringIO()
    code = check.check(impl, steps=[step], seed=0, storage=folder / bug_id / "hypothesis",
                       out=out, err=err, seen=lambda part, outcome: outcomes.append(outcome))
    return bug_id, step, fragment, impl, code, out.getvalue(), err.getvalue(), outcomes


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check-reports")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda case: run_check(case, folder), CASES))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_the_report_of_a_known_bug_holds_the_example_the_notes_and_the_assertion(reports, index):
    assert_complete_report(*reports[index])


def assert_complete_report(bug_id, step, fragment, impl, code, out, err, outcomes):
    """The claims of this module's docstring, for one report."""
    assert code == 1, f"{bug_id} not caught:\n{out}{err}"
    assert err == ""
    (outcome,) = outcomes
    failure = outcome.failure
    report = out
    assert fragment in report, report

    # The test's own notes and the machine's steps, whole and in order.
    printed = [line.strip() for line in report.splitlines()]
    entry = failure.failures[0]
    noted = [line.strip() for line in verdict.plain_calls(entry["notes"], check.invariant_names())]
    assert noted or entry.get("mismatch"), entry  # something to show the learner
    at = 0
    for line in noted:
        at = printed.index(line if line in printed else f"the call: {line}", at) + 1

    # The clause, in SPEC.md's words; the model's call, expected and got as they are.
    quote = re.search(r'SPEC\.md, (step|decision) \d+: "(.+?)"\n', report, re.DOTALL)
    assert quote and " ".join(quote.group(2).split()) in SPEC, report
    if entry.get("mismatch"):
        parts = {key: verdict.scrub(entry["mismatch"][key]) for key in ("call", "expected", "got")}
        assert entry["mismatch"]["clause"] in quote.group(0) or spec.place(entry["mismatch"]["clause"]) in report
        assert f"expected: {parts['expected']}" in printed, report
        assert f"got:      {parts['got']}" in printed, report
        assert parts["call"] in report

    # How to run it again.
    assert verdict.rerun_command(impl, step, 0) in report, report
    assert pathlib.Path(failure.nodeid.split("::")[0]).parts[0] in ("properties", "stateful")


# The state machines' cases (quality/test_check_report_machines.py): their steps are the example.
MACHINE_CASES = [
    ("ack-before-commit", "protocol", "step: "),
    ("hook-before-commit", "protocol", "step: "),
]
