"""``resume check``'s verdict reads as the learner's own: known bugs of steps 1, 3, 6 and 7.

Each bug is patched into a copy of resume/client.py in a folder of its own;
``check`` runs that bug's step with one fixed seed and a fresh example
database. Claims, for each report (issue 19):

* the step's headline says FAIL, and the block quotes a sentence of SPEC.md
  word for word, naming its step or decision;
* it has ``expected:`` and ``got:`` lines with plain values, and the bug's
  own fragment (the CR that was accepted, the Gap expected, the ACK sent for
  an event not committed, the RESUME that forgot the cursor);
* none of the harness's reprs (``Store(...)``, ``Scenario(...)``,
  ``Session(...)``, ``Raised(...)``, a class of the loaded module), no
  Hypothesis example block, no pytest diff notes, no "Explanation";
* one rerun line ``python3 -m resume check /abs/path --step N --seed 0``,
  and the summary line ``step N fails.``; exit 1.

And: pasted into a shell in ``/``, the rerun line of the step-1 report exits
1 with the same block; ``--json`` over a correct and a buggy file gives one
document that validates against the schema of docs/CHECK_JSON.md; every
quote of the verdict is SPEC.md's own words.
"""

import concurrent.futures
import io
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from quality import bugs as known
from quality import meta
from resume.testing.grading import check, runner, verdict
from resume.testing.drivers import loader

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

    for line in lines:  # "in your file: client.py:173  <that line of the file>"
        if line.strip().startswith("in your file: "):
            place, _, source = line.strip().removeprefix("in your file: ").partition("  ")
            source = re.sub(r"  \([^()]*\)$", "", source)  # how it got there, if not a plain raise
            number = int(place.rsplit(":", 1)[1])
            assert impl.read_text().splitlines()[number - 1].strip() == source, line
    assert [line.strip() for line in lines if line.strip().startswith("more:")] and \
        all(line.strip().startswith("more:     docs/FAILURES.md#") for line in lines if line.strip().startswith("more:"))

    again = [line.strip() for line in lines if line.strip().startswith("again:")]
    assert len(again) == 1, text
    command = again[0].split(":", 1)[1].strip()
    assert shlex.split(command) == ["python3", "-m", "resume", "check", str(impl), "--step", step, "--seed", "0"]
    assert out.rstrip().endswith(f"step {step} fails."), out


def comparable(report):
    """A report without the timings, which differ from run to run."""
    return re.sub(r"\(\d+(\.\d+)? s\)|\d+ tests?, \d+\.\d s", "(time)", report)


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


# ------------------------------------------------------------------ --json

def schema():
    """The JSON Schema in docs/CHECK_JSON.md (its one ```json block)."""
    text = (runner.ROOT / "docs" / "CHECK_JSON.md").read_text()
    return json.loads(re.search(r"```json\n(.*?)```", text, re.DOTALL).group(1))


def validate(value, rule, where="$", definitions=None):
    """A validator for the part of JSON Schema the document uses (no dependency for it)."""
    definitions = definitions if definitions is not None else rule.get("$defs", {})
    if "$ref" in rule:
        return validate(value, definitions[rule["$ref"].rsplit("/", 1)[-1]], where, definitions)
    if "anyOf" in rule:
        failures = []
        for option in rule["anyOf"]:
            try:
                return validate(value, option, where, definitions)
            except AssertionError as error:
                failures.append(str(error))
        raise AssertionError(f"{where}: no option of anyOf holds: {failures}")
    kinds = rule.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        python = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
                  "null": type(None), "boolean": bool}
        assert any(isinstance(value, python[k]) and not (k in ("integer", "number") and isinstance(value, bool))
                   for k in kinds), f"{where}: {value!r} is not {kinds}"
    if "enum" in rule:
        assert value in rule["enum"], f"{where}: {value!r} not in {rule['enum']}"
    if isinstance(value, dict):
        for key in rule.get("required", ()):
            assert key in value, f"{where}: {key} missing"
        properties = rule.get("properties", {})
        if rule.get("additionalProperties") is False:
            assert set(value) <= set(properties), f"{where}: unknown {set(value) - set(properties)}"
        for key, item in value.items():
            if key in properties:
                validate(item, properties[key], f"{where}.{key}", definitions)
    if isinstance(value, list) and "items" in rule:
        for index, item in enumerate(value):
            validate(item, rule["items"], f"{where}[{index}]", definitions)


def test_json_grades_several_files_in_one_document_that_follows_the_documented_schema(tmp_path):
    correct = tmp_path / "correct" / "client.py"
    correct.parent.mkdir()
    correct.write_bytes(loader.DEFAULT_PATH.read_bytes())
    wrong = buggy(tmp_path / "bug", "crlf-accepted")
    missing = tmp_path / "nothing" / "client.py"
    out, err = io.StringIO(), io.StringIO()
    code = check.check([correct, wrong, missing], steps=["1"], seed=0, storage=tmp_path / "hypothesis",
                       out=out, err=err, as_json=True)
    document = json.loads(out.getvalue())
    validate(document, schema())
    assert code == document["exit"] == 2  # a file that cannot be checked
    first, second, third = document["files"]
    assert (first["status"], second["status"], third["status"]) == ("pass", "fail", "unusable")
    assert first["steps"][0]["status"] == "ok" and first["steps"][0]["expected"] is None
    step = second["steps"][0]
    assert step["status"] == "fail" and step["expected"] == "raises ValueError"
    assert step["got"].startswith("returns (") and r"\r" in step["call"] and step["calls"] == []
    assert step["clause"]["quote"] in SPEC and step["clause"]["where"] == "step 1"
    assert step["rerun"] == f"python3 -m resume check {wrong} --step 1 --seed 0"
    assert str(missing) in third["error"] and str(missing) in err.getvalue()


def test_the_harness_reprs_are_scrubbed_from_a_message():
    text = "assert None in (<class 'resume_impl_under_test_608380381510271813.Gap'>,)"
    assert verdict.scrub(text) == "assert None in (Gap,)"


# ------------------------------------------------------------------ beyond the lab

def a_suite_with_a_power_level(root):
    """A suite of two files: a step-1 test that passes, and a power-loss level that fails."""
    (root / "properties").mkdir(parents=True)
    (root / "conftest.py").write_text("")
    (root / "properties" / "test_step1_fake.py").write_text(
        "def test_a_frame(impl):\n    assert impl.parse_line(b'EVENT 0 5\\n') == (0, 5)\n")
    (root / "properties" / "test_power_loss.py").write_text(
        "import pytest\n"
        "from resume.testing import model\n"
        "pytestmark = pytest.mark.power_loss\n"
        "def test_an_ack_survives_a_power_cut(impl):\n"
        "    model.differs('ACK 0 written, then the power is cut', 'last >= 0 after the restart', 'last=-1', 'D18')\n")
    return root


def test_the_power_level_is_a_verdict_of_its_own_that_never_changes_the_exit_code(tmp_path):
    root = a_suite_with_a_power_level(tmp_path / "suite")
    out = io.StringIO()
    code = check.check(loader.DEFAULT_PATH, seed=0, storage=tmp_path / "hypothesis", out=out,
                       err=io.StringIO(), root=root)
    report = out.getvalue()
    assert code == 0, report  # the lab passed; the level beyond it failed
    lab, _, beyond = report.partition("beyond the lab: an ACK that survives a power cut")
    assert "step 1 fails" not in lab and "FAIL" not in lab, report  # the lab ran without that level
    assert beyond.split("\n", 1)[0].strip(" .").startswith("FAIL"), report
    assert "SPEC.md, decision 18:" in beyond and "expected: last >= 0 after the restart" in beyond
    assert "--step power --seed 0" in beyond
    assert "does not change the exit code" in beyond

    out = io.StringIO()
    assert check.check(loader.DEFAULT_PATH, seed=0, storage=tmp_path / "hypothesis", out=out, err=io.StringIO(),
                       root=root, steps=["1"]) == 0
    assert "beyond the lab" not in out.getvalue()  # only the step asked for


def test_a_derandomized_profile_prints_no_seed_and_its_rerun_line_names_none():
    """Under ``ci`` (Hypothesis's ``derandomize``) the seed changes nothing: the report must not
    claim one. suite.DERANDOMIZED says which profiles are; Hypothesis's own settings agree."""
    from hypothesis import settings  # the profiles conftest.py registered

    from resume.testing import suite
    assert {p for p in suite.PROFILES if settings.get_profile(p).derandomize} == set(suite.DERANDOMIZED)
    assert verdict.rerun_command("/a/client.py", "6", None, "ci") == \
        "python3 -m resume check /a/client.py --step 6 --profile ci"


def test_the_deeper_levels_wait_for_every_step_to_pass(tmp_path):
    """A step that fails leaves the deeper levels not run, and says why; once the steps pass they run."""
    root = tmp_path / "suite"
    (root / "properties").mkdir(parents=True)
    (root / "stateful").mkdir()
    (root / "conftest.py").write_text("")
    (root / "properties" / "test_step1_fake.py").write_text(
        "import pytest\ndef test_a_frame(impl):\n    with pytest.raises(ValueError):\n"
        "        impl.parse_line(b'EVENT 0 5\\r\\n')\n")
    (root / "stateful" / "test_deep.py").write_text(
        "import pathlib\ndef test_deep(impl):\n    pathlib.Path(__file__).with_name('ran').touch()\n")
    wrong = buggy(tmp_path / "bug", "crlf-accepted")
    for impl, code, deeper in ((wrong, 1, "not run: step 1 does not pass yet"), (loader.DEFAULT_PATH, 0, "ok")):
        out = io.StringIO()
        assert check.check(impl, seed=0, storage=tmp_path / "hypothesis", out=out, err=io.StringIO(),
                           root=root) == code, out.getvalue()
        line = next(line for line in out.getvalue().splitlines() if line.startswith("deeper levels"))
        assert line.split(" .. ", 1)[1].strip(" .").startswith(deeper), out.getvalue()
        assert (root / "stateful" / "ran").exists() == (code == 0)
