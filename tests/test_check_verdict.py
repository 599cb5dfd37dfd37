"""``resume check``'s verdict as a whole: ``--json`` over several files follows the schema of
docs/CHECK_JSON.md, the power level is a verdict of its own, the deeper levels wait for every
step, a derandomized profile prints no seed, the harness's reprs are scrubbed. The report of
each known bug in the learner's words is quality/test_check_verdict.py (a meta-test).
"""

import io
import json
import re

from tests import fake_suite
from quality import bugs as known
from quality import meta
from resume.testing.grading import check, runner, verdict
from resume.testing.drivers import loader

SPEC = " ".join((runner.ROOT / "SPEC.md").read_text().split())


def buggy(folder, bug_id):
    bug = next(b for b in known.BUGS if b.id == bug_id)
    return meta.write_bugs(folder, [bug])[bug_id]


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


# Step 1 of a suite of a few lines: one line, compared with the model as the suite's own tests do.
A_CRLF_LINE = {"properties/test_step1_fake.py": (
    "from resume.testing import model\n"
    "def test_a_crlf_line(impl):\n"
    "    line = b'EVENT 0 5\\r\\n'\n"
    "    model.expect(model.outcome_of(impl, impl.parse_line, line), model.parse_line(line, None), f'parse_line({line!r})')\n")}


def test_json_grades_several_files_in_one_document_that_follows_the_documented_schema(tmp_path, one_lane):
    root = fake_suite.write(tmp_path / "suite", A_CRLF_LINE)
    correct = tmp_path / "correct" / "client.py"
    correct.parent.mkdir()
    correct.write_bytes(loader.DEFAULT_PATH.read_bytes())
    wrong = buggy(tmp_path / "bug", "crlf-accepted")
    missing = tmp_path / "nothing" / "client.py"
    out, err = io.StringIO(), io.StringIO()
    code = check.check([correct, wrong, missing], steps=["1"], seed=0, storage=tmp_path / "hypothesis",
                       out=out, err=err, as_json=True, root=root)
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


def test_a_long_value_is_shown_short_and_reads_as_one_argument():
    # A learner read "an int past the float range, 2**1024" inside a call as two arguments.
    call = f"consume_session(reader, writer, con, {2**1024}, None)"
    assert verdict.shorten(call) == "consume_session(reader, writer, con, 2**1024, None)"
    assert verdict.shorten(str(-(2**200 + 1))) == "-(2**200 + 1)"
    assert verdict.shorten(str(2**300 - 1)) == "2**300 - 1"
    assert verdict.shorten(str(3**200)) == f"<an int of {len(str(3**200))} digits>"
    assert verdict.shorten(repr(b"EVENT 0 " + b"0" * 100)).endswith("(108 bytes)")


# ------------------------------------------------------------------ beyond the lab

def a_suite_with_a_power_level(root):
    """A suite of two files: a step-1 test that passes, and a power-loss level that fails."""
    return fake_suite.write(root, {
        "properties/test_step1_fake.py":
        "def test_a_frame(impl):\n    assert impl.parse_line(b'EVENT 0 5\\n') == (0, 5)\n",
        "properties/test_power_loss.py":
        "import pytest\n"
        "from resume.testing import model\n"
        "pytestmark = pytest.mark.power_loss\n"
        "def test_an_ack_survives_a_power_cut(impl):\n"
        "    model.differs('ACK 0 written, then the power is cut', 'last >= 0 after the restart', 'last=-1', 'D18')\n"})


def test_the_power_level_is_a_verdict_of_its_own_that_never_changes_the_exit_code(tmp_path, one_lane):
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


def test_the_deeper_levels_wait_for_every_step_to_pass(tmp_path, one_lane):
    """A step that fails leaves the deeper levels not run, and says why; once the steps pass they run."""
    root = fake_suite.write(tmp_path / "suite", {
        "properties/test_step1_fake.py": "import pytest\ndef test_a_frame(impl):\n    with pytest.raises(ValueError):\n"
                                         "        impl.parse_line(b'EVENT 0 5\\r\\n')\n",
        "stateful/test_deep.py":
        "import pathlib\ndef test_deep(impl):\n    pathlib.Path(__file__).with_name('ran').touch()\n"})
    wrong = buggy(tmp_path / "bug", "crlf-accepted")
    for impl, code, deeper in ((wrong, 1, "not run: step 1 does not pass yet"), (loader.DEFAULT_PATH, 0, "ok")):
        out = io.StringIO()
        assert check.check(impl, seed=0, storage=tmp_path / "hypothesis", out=out, err=io.StringIO(),
                           root=root) == code, out.getvalue()
        line = next(line for line in out.getvalue().splitlines() if line.startswith("deeper levels"))
        assert line.split(" .. ", 1)[1].strip(" .").startswith(deeper), out.getvalue()
        assert (root / "stateful" / "ran").exists() == (code == 0)
