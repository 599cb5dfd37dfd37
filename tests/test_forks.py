"""The meta-test's forks (quality/forks.py): many files checked from one pytest process, each
job run as a process of its own would run it: its own file, its stages in order, ``-x``, its own
results and console, its own bound."""

from quality import forks
from resume.testing.grading import runner
from tests import fake_suite

SUITE = {
    "properties/test_step1_fake.py": (
        "def test_a(impl):\n    print('a ran against', impl.NAME)\n    assert impl.parse_line(b'') == 'ok'\n"
        "def test_b(impl):\n    pass\n"),
    "properties/test_step2_fake.py": "def test_c():\n    pass\n",
}
FILES = {
    "good": "NAME = 'good'\ndef parse_line(line):\n    return 'ok'\n",
    "bad": "NAME = 'bad'\ndef parse_line(line):\n    return 'not ok'\n",
    "hangs": "NAME = 'hangs'\nimport time\ndef parse_line(line):\n    time.sleep(60)\n",
    "broken": "NAME = (\n",
}


def test_each_job_runs_as_a_process_of_its_own_would(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(runner.ROOT))  # quality/ for the process the suite's root starts
    root = fake_suite.write(tmp_path / "suite", SUITE)
    step1, step2 = root / "properties" / "test_step1_fake.py", root / "properties" / "test_step2_fake.py"
    impls = {}
    for key, source in FILES.items():
        impls[key] = tmp_path / key / "client.py"
        impls[key].parent.mkdir()
        impls[key].write_text(source)
    ended = []
    runs = forks.run([("good", impls["good"], [[step2], [step1]]),
                      ("bad", impls["bad"], [[step1], [step2]]),
                      ("hangs", impls["hangs"], [[step1]]),
                      ("broken", impls["broken"], [[step1]])],
                     workers=2, timeout=1.5, root=root, on_run=lambda key, run: ended.append(key))
    assert sorted(ended) == sorted(runs) == ["bad", "broken", "good", "hangs"]
    names = {key: [test.nodeid.rsplit("::", 1)[-1] for test in run.tests] for key, run in runs.items()}
    good, bad, hangs, broken = runs["good"], runs["bad"], runs["hangs"], runs["broken"]
    # The stages in the order given; each file's tests in its own order.
    assert (good.returncode, names["good"]) == (0, ["test_c", "test_a", "test_b"]), good.output
    # -x: the first failure ends the job, its later stage never starts.
    assert (bad.returncode, names["bad"]) == (1, ["test_a"]), bad.output
    assert "a ran against bad" in bad.failures[0].sections[0][1] and "good" not in bad.output, (bad.tests, bad.output)
    assert hangs.timed_out and hangs.returncode is None
    assert broken.returncode == 4 and "broken" in broken.output and not broken.tests
