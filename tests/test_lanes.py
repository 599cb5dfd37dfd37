"""The lanes of ``resume check`` (``grading.lanes``): the parts shared out among a few pytest
processes (lanes forked from one), each test run once, and each part's report its FIRST failure in
the suite's order, as if the part had run alone with ``-x``, though a later test fails sooner in
another lane."""

import concurrent.futures
import json

from tests import fake_suite
from resume.testing.drivers import loader
from resume.testing.grading import check, lanes, runner, verdict


def a_suite(root):
    """Step 1: a slow failure, then a quick one; step 2: passes. Every test leaves a mark."""
    mark = ("import pathlib, time\n"
            "def ran(name):\n"
            "    (pathlib.Path(__file__).parent / 'ran').mkdir(exist_ok=True)\n"
            "    (pathlib.Path(__file__).parent / 'ran' / f'{name}-{time.monotonic_ns()}').touch()\n")
    return fake_suite.write(root, {
        "properties/test_step1_fake.py": mark +
        "def test_a_pass(impl):\n    ran('a')\n"
        "def test_b_slow_failure(impl):\n    ran('b'); time.sleep(1.0); assert False, 'b'\n"
        "def test_c_quick_failure(impl):\n    ran('c'); assert False, 'c'\n"
        "def test_d_after_the_failures(impl):\n    ran('d')\n",
        "properties/test_step2_fake.py":
        mark + "import pytest\n@pytest.mark.parametrize('n', range(3))\ndef test_e(impl, n):\n    ran('e')\n"})


def test_a_part_reports_its_first_failure_in_order_and_every_test_runs_at_most_once(tmp_path, monkeypatch):
    monkeypatch.setenv("RESUME_CHECK_JOBS", "3")
    root = a_suite(tmp_path / "suite")
    parts = [("1", [root / "properties" / "test_step1_fake.py"]), ("2", [root / "properties" / "test_step2_fake.py"])]
    ended = list(lanes.run_parts(loader.DEFAULT_PATH, parts, root=root, outcome=check.outcome))
    assert [key for key, _ in ended] == ["1", "2"]
    (_, one), (_, two) = ended
    assert one.status == "failed" and one.test.endswith("test_b_slow_failure"), one
    assert two.status == "passed" and two.tests == 3, two
    marks = sorted(path.name.split("-")[0] for path in (root / "properties" / "ran").iterdir())
    # a, b and e x3 once each; c and d at most once (run by another lane before b failed, or not)
    assert [m for m in marks if m not in "cd"] == ["a", "b", "e", "e", "e"] and len(set(marks)) == len(marks) - 2, marks


def test_a_unit_still_running_when_an_earlier_one_of_its_part_fails_is_cut_and_its_lane_goes_on(tmp_path, monkeypatch):
    """Its finding would not be shown. Its test is cut where it is, though it catches the first
    cut (code under test may); its ``finally`` runs; the part's later units do not run; and the
    same two lanes go on (step 2's two tests, which wait for each other, run in the lanes of a and
    b), with nothing of the cut test left to fail them (garbage whose finalizer raises, as a
    coroutine never awaited does, collected in step 2 under ``-W error``)."""
    monkeypatch.setenv("RESUME_CHECK_JOBS", "2")
    wait_for = ("import os, pathlib, time\n"
                "HERE = pathlib.Path(__file__).parent\n"
                "def wait_for(name):\n"
                "    deadline = time.monotonic() + 10\n"
                "    while not (HERE / name).exists() and time.monotonic() < deadline:\n"
                "        time.sleep(0.01)\n"
                "def mark(name):\n"
                "    (HERE / name).write_text(str(os.getpid()))\n")
    root = fake_suite.write(tmp_path / "suite", {
        "properties/test_step1_fake.py": wait_for +
        "class Litter:\n"
        "    def __del__(self):\n"
        "        raise RuntimeError('collected late')\n"
        "def test_a_failure_once_b_runs(impl):\n"
        "    mark('a'); wait_for('b-began')\n"
        "    assert False, 'a'\n"
        "def test_b_a_minute(impl):\n"
        "    mark('b-began')\n"
        "    try:\n"
        "        try:\n"
        "            time.sleep(60)\n"
        "        except BaseException:\n"
        "            litter = Litter(); litter.cycle = litter\n"
        "            mark('b-caught'); time.sleep(60)\n"
        "        mark('b-slept')\n"
        "    finally:\n"
        "        mark('b-unwound')\n"
        "def test_c_after(impl):\n"
        "    mark('c-ran')\n",
        "properties/test_step2_fake.py": wait_for +
        "import gc\n"
        "def test_e0(impl):\n"
        "    mark('e0'); wait_for('e1'); gc.collect()\n"
        "def test_e1(impl):\n"
        "    mark('e1'); wait_for('e0'); gc.collect()\n",
        "conftest.py": "def pytest_configure(config):\n"
                       "    config.addinivalue_line('filterwarnings', 'error::pytest.PytestUnraisableExceptionWarning')\n"})
    parts = [("1", [root / "properties" / "test_step1_fake.py"]), ("2", [root / "properties" / "test_step2_fake.py"])]
    ended = dict(lanes.run_parts(loader.DEFAULT_PATH, parts, root=root, outcome=check.outcome))
    assert ended["1"].status == "failed" and ended["1"].test.endswith("test_a_failure_once_b_runs"), ended["1"]
    assert ended["2"].status == "passed" and ended["2"].tests == 2, ended["2"]
    here = root / "properties"
    assert all((here / name).exists() for name in ("b-caught", "b-unwound"))
    assert not (here / "b-slept").exists() and not (here / "c-ran").exists()
    pid = {name: (here / name).read_text() for name in ("a", "b-began", "e0", "e1")}
    assert {pid["e0"], pid["e1"]} == {pid["a"], pid["b-began"]}, pid


def test_the_gated_part_is_not_run_when_a_part_it_waits_for_fails(tmp_path):
    root = a_suite(tmp_path / "suite")
    parts = [("1", [root / "properties" / "test_step1_fake.py"]), ("2", [root / "properties" / "test_step2_fake.py"])]
    ended = dict(lanes.run_parts(loader.DEFAULT_PATH, parts, gate=["1"], gated="2", root=root,
                                 outcome=check.outcome))
    assert ended["1"].status == "failed" and ended["2"].status == "not run"
    assert sorted(path.name.split("-")[0] for path in (root / "properties" / "ran").iterdir()
                  if path.name.startswith("e")) == []


def test_a_call_that_never_returns_is_stopped_at_the_bound_and_its_line_named(tmp_path, monkeypatch):
    """A loop in the file under test holds the interpreter: no bound of the test's own cuts it.
    The lane is stopped past ``bound``, its stack names the line, the part's later tests never run
    (one lane at a time: with two, the other may run them before the bound is reached)."""
    monkeypatch.setenv("RESUME_CHECK_JOBS", "1")
    root = a_suite(tmp_path / "suite")
    (root / "properties" / "test_step1_fake.py").write_text(
        "def test_a_frame(impl):\n    impl.parse_line(b'EVENT 0 5\\n')\n"
        "def test_after(impl):\n    (__import__('pathlib').Path(__file__).parent / 'after').touch()\n")
    impl = tmp_path / "mine" / "client.py"
    impl.parent.mkdir()
    source = loader.DEFAULT_PATH.read_text()
    impl.write_text(source.replace("def parse_line(line):\n", "def parse_line(line):\n    while True: pass\n", 1))
    assert impl.read_text() != source
    parts = [("1", [root / "properties" / "test_step1_fake.py"]), ("2", [root / "properties" / "test_step2_fake.py"])]
    ended = dict(lanes.run_parts(impl, parts, root=root, outcome=check.outcome, bound=0.5))
    assert ended["1"].status == "timeout" and ended["1"].test.endswith("test_a_frame"), ended["1"]
    assert ended["2"].status == "passed"
    assert not (root / "properties" / "after").exists()
    found = verdict.from_outcome("1", "step 1  parse_line", ended["1"], impl, 0)
    # one line: the stack may be taken at the loop's test or at its body
    assert found.in_your_file.endswith("while True: pass") and found.in_your_file.startswith("client.py:")
    assert "(still running here when the check stopped it)" in verdict.render(found)


def test_a_lane_that_dies_ends_its_part_and_a_new_lane_takes_the_units_left(tmp_path, monkeypatch):
    """The file under test may end the process (``os._exit``): the part it was running has ended
    (the file's bug, ``verdict``: a FAIL), with the exit status and the test, and the parts after
    it still run, in a lane started anew."""
    monkeypatch.setenv("RESUME_CHECK_JOBS", "1")
    root = a_suite(tmp_path / "suite")
    (root / "properties" / "test_step1_fake.py").write_text(
        "import os\ndef test_a_frame(impl):\n    os._exit(3)\n")
    parts = [("1", [root / "properties" / "test_step1_fake.py"]), ("2", [root / "properties" / "test_step2_fake.py"])]
    ended = dict(lanes.run_parts(loader.DEFAULT_PATH, parts, root=root, outcome=check.outcome))
    assert ended["1"].status == "ended" and ended["1"].test == "properties/test_step1_fake.py::test_a_frame", ended["1"]
    assert ended["1"].error == "your code ended the process (exit status 3)", ended["1"]
    assert ended["2"].status == "passed" and ended["2"].tests == 3, ended["2"]


def test_each_lane_captures_its_own_tests_output(tmp_path, monkeypatch):
    """Two lanes print at once, each test failing after its prints: each failure's captured output
    is its own, whole (lanes forked while pytest captured shared its one capture file)."""
    monkeypatch.setenv("RESUME_CHECK_JOBS", "2")
    prints = ("import time\n"
              "def test_it(impl):\n"
              "    for n in range(200):\n"
              "        print('{name}', n, flush=True)\n"
              "        time.sleep(0.001)\n"
              "    assert False\n")
    root = fake_suite.write(tmp_path / "suite", {f"properties/test_step{step}_fake.py": prints.format(name=name)
                                                 for step, name in ((1, "one"), (2, "two"))})
    parts = [(str(step), [root / "properties" / f"test_step{step}_fake.py"]) for step in (1, 2)]
    ended = dict(lanes.run_parts(loader.DEFAULT_PATH, parts, root=root, outcome=check.outcome))
    for key, name in (("1", "one"), ("2", "two")):
        captured = "".join(text for title, text in ended[key].failure.sections if "stdout" in title)
        assert captured.splitlines() == [f"{name} {n}" for n in range(200)], (key, captured[-500:])


def test_a_unit_that_passed_counts_only_with_a_result_for_each_of_its_tests(tmp_path):
    """Each unit's size is written before the file under check is loaded (``sizes.json``); a unit
    that ended ``passed`` with fewer results, or fewer tests run, makes its part broken, never ok
    (issue 57: a file that replaced pytest's reporting got "ok (0 tests)" for every part)."""
    done = concurrent.futures.Future()
    done.set_result(runner.Run(0, 0.1))
    lanes.write(tmp_path / "done-1.0.json", {"lane": 0, "status": "passed", "seconds": 0.1, "cpu": 0.1,
                                            "tests": ["t.py::a", "t.py::b"]})
    results = tmp_path / "lane-0.jsonl"

    def part(sizes):
        return lanes._outcome(tmp_path, "1", ["1.0"], [], [done], [0], check.outcome, tmp_path, sizes)

    for reported in (["t.py::a"], ["t.py::a", "t.py::b"]):
        results.write_text("".join(json.dumps({"nodeid": nodeid, "when": "call", "outcome": "passed", "duration": 0.0,
                                               "longrepr": "", "sections": [], "failures": []}) + "\n"
                                   for nodeid in reported))
        found = part({"1.0": 2})
        assert found.status == ("broken" if len(reported) < 2 else "passed"), found
    found = part({"1.0": 3})  # a test of the unit never ran
    assert found.status == "broken" and found.error == "2 of the 3 tests of a unit of this part reported a result"
