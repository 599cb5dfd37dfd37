"""``resume check``'s verdict of a known bug reads as the learner's own: bugs of steps 1, 3, 6 and 7.

Each bug is patched into a copy of resume/client.py in a folder of its own;
``check`` runs that bug's step with one fixed seed and a fresh example
database. Claims, for each report (issue 19):

* the step's headline says FAIL, and the block quotes a sentence of SPEC.md
  word for word, naming its step or decision;
* it has ``expected:`` and ``got:`` lines with plain values, and the bug's
  own fragment (the CR that was accepted, the Gap expected, the ACK sent for
  an event not committed, the RESUME that forgot the cursor, the line of the
  learner's file and how the call got there);
* none of the harness's reprs (``Store(...)``, ``Scenario(...)``,
  ``Session(...)``, ``Raised(...)``, a class of the loaded module), no
  Hypothesis example block, no pytest diff notes, no "Explanation";
* one rerun line ``python3 -m resume check /abs/path --step N --seed 0``,
  and the summary line ``step N fails (checked in T s).``; exit 1.

And: pasted into a shell in ``/``, the rerun line of the step-1 report exits
1 with the same block. Meta-tests (``-m quality``): each runs the suite
against a known bug. The verdict's other claims (``--json``, the power
level, the deeper levels' turn) are tests/test_check_verdict.py.
"""

import concurrent.futures
import io
import os
import re
import shlex
import subprocess
import sys

import pytest

from quality import bugs as known
from quality import meta
from resume.testing.grading import check, runner
from resume.testing.drivers import loader

pytestmark = pytest.mark.quality

# (bug, step, a fragment of the report any faithful test of that step shows)
CASES = [
    ("crlf-accepted", "1", r"\r"),  # the frame ending in CR LF that was accepted
    ("gap-applied", "3", "expected: raises Gap"),
    ("ack-before-commit", "6", "got:      ACK 0, ACK "),  # an ACK for an event that was never committed
    ("resume-minus-one", "7", "RESUME -1"),  # the second process forgot the cursor
    # the line of the learner's code: where it raised; where it waited when the test cut its
    # hang; where a cancellation reached it, or the hook raised, before it returned all the same
    ("non-bytes-typeerror", "1", "in your file: client.py:"),
    ("unbounded-read", "6", "readline()  (still waiting here when the test cut it)"),
    ("swallowed-cancellation", "6", "readline()  (cancelled here, and it returned)"),
    ("run-client-swallows-cancellation", "7", "before_ack(seq)  (raised here, and it returned)"),
    # and, for an error the file caught and raised again by name, where it let it go
    ("independent-closing-error-wins", "6", "then raised again at "),
]

HARNESS = re.compile(
    r"\b(Store|Scenario|Session|Raised|Returned|Snapshot|Expected)\(|<class '|<module '|"
    r"resume_impl_under_test|Explanation|always and only run|Left contains|Right contains|"
    r"Use -v|Full output truncated|Omitting \d+ identical|Falsifying|Failing (explicit )?example|"
    r"Failing test case|Draw \d|AssertionError")
SPEC = " ".join((runner.ROOT / "SPEC.md").read_text().split())


def buggy(folder, bug_id):
    bug = next(b for b in known.BUGS if b.id == bug_id)
    return meta.write_bugs(folder, [bug])[bug_id]


def run_check(case, folder):
    bug_id, step, fragment = case
    impl = buggy(folder / bug_id, bug_id)
    out, err = io.StringIO(), io.StringIO()
    code = check.check(impl, steps=[step], seed=0, storage=folder / bug_id / "hypothesis", out=out, err=err)
    return impl, code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("verdicts")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip([c[0] for c in CASES], pool.map(lambda case: run_check(case, folder), CASES)))


def block(report):
    """The failing step's block: from its headline to the blank line after it."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith(")") and " FAIL " in line)
    end = lines.index("", start)
    return lines[start:end]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_failing_step_is_reported_in_the_learners_words(reports, case):
    bug_id, step, fragment = case
    impl, code, out, err = reports[bug_id]
    assert code == 1, out + err
    assert err == ""
    lines = block(out)
    text = "\n".join(lines)
    assert lines[0].startswith(f"step {step}  ") and " FAIL " in lines[0], text

    quoted = re.search(r'SPEC\.md, (step|decision) (\d+): "(.+?)"\n    (what|the call|expected)', text, re.DOTALL)
    assert quoted, text
    assert " ".join(quoted.group(3).split()) in SPEC, quoted.group(3)

    expected = [line for line in lines if line.strip().startswith("expected: ")]
    got = [line for line in lines if line.strip().startswith("got: ")]
    assert len(expected) == 1 and len(got) == 1, text
    assert expected[0].split(":", 1)[1].strip() and got[0].split(":", 1)[1].strip(), text
    assert fragment in text, text
    assert not HARNESS.search(text), HARNESS.search(text).group(0) + "\n" + text

    for line in lines:  # "in your file: client.py:173  <that line of the file>", "then raised again at ..."
        if line.strip().startswith(("in your file: ", "then raised again at ")):
            place, _, source = re.sub(r"^(in your file: |then raised again at )", "", line.strip()).partition("  ")
            source = re.sub(r"  \([^()]*\)$", "", source)  # how it got there, if not a plain raise
            number = int(place.rsplit(":", 1)[1])
            assert impl.read_text().splitlines()[number - 1].strip() == source, line
    assert [line.strip() for line in lines if line.strip().startswith("more:")] and \
        all(line.strip().startswith("more:     docs/FAILURES.md#") for line in lines if line.strip().startswith("more:"))

    again = [line.strip() for line in lines if line.strip().startswith("again:")]
    assert len(again) == 1, text
    command = again[0].split(":", 1)[1].strip()
    assert shlex.split(command) == ["python3", "-m", "resume", "check", str(impl), "--step", step, "--seed", "0"]
    assert re.search(rf"\nstep {step} fails \(checked in \d+\.\d s\)\.$", out.rstrip()), out


def comparable(report):
    """A report without the timings, which differ from run to run."""
    return re.sub(r"\((checked in )?\d+(\.\d+)? s( of CPU)?\)|\d+ tests?, \d+\.\d s of CPU", "(time)", report)


def test_the_rerun_line_pasted_in_the_root_folder_fails_the_same_way(tmp_path):
    impl = buggy(tmp_path / "mine", "crlf-accepted")
    env = {k: v for k, v in os.environ.items() if k not in ("HYPOTHESIS_STORAGE_DIRECTORY", loader.ENV_VAR)}
    # The rerun line says `python3`: the one running this test, as in a learner's activated venv
    # (a venv that is not activated leaves another python3 first on the PATH).
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    first = subprocess.run(["python3", "-m", "resume", "check", str(impl), "--step", "1"], cwd="/",
                           env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 1, first.stdout + first.stderr
    (command,) = [line.split(":", 1)[1].strip() for line in first.stdout.splitlines()
                  if line.strip().startswith("again:")]
    again = subprocess.run(command, shell=True, cwd="/", env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    assert comparable("\n".join(block(again.stdout))) == comparable("\n".join(block(first.stdout)))
