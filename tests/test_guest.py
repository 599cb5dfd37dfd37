"""The file under check is a guest (issue 57): it cannot end, hang, write into or forge the check,
nor touch another file's verdict.

Files written for the purpose, each ``resume/client.py`` changed in one way, checked together
through ``python3 -m resume check ... --step 1 --json``, as a learner runs it: ``check`` never
imports them (``grading.probe``), runs them in folders of their own (``grading.room``), reports a
process they end as their bug (``lanes_plugin.guard_exits``), and refuses to grade one that
changed the grader (``grading.tamper``). Step 1 alone: what is claimed is the grader's, and step
1's tests are the quickest.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from resume.testing.drivers import loader
from resume.testing.grading import room, runner

CLIENT = loader.DEFAULT_PATH.read_text()
# Wrong in step 1: every line parses as (0, 0).
WRONG = CLIENT + "\n\ndef parse_line(line):\n    return (0, 0)\n"
ROOT = runner.ROOT

ENDS_IN_A_CALL = CLIENT + '''

_parse_line = parse_line


def parse_line(line):
    if isinstance(line, bytes) and line.startswith(b"EVENT 1"):
        import os
        os._exit(0)
    return _parse_line(line)
'''

# What the vandal writes, relative to its working folder (and the folder above it).
VANDALS = ("vandal-store.db", "vandal-notes.txt", "../vandal-left-here.txt")
VANDAL = f'''import os, shutil
VANDALS = {VANDALS!r}
def _vandal():
    for name in os.listdir("."):
        shutil.rmtree(name, ignore_errors=True) if os.path.isdir(name) else os.remove(name)
    for name in VANDALS:
        with open(name, "w") as out:
            out.write("vandal")
    os.makedirs("vandal-sub/dir", exist_ok=True)
_vandal()
''' + CLIENT + '''

_parse_line = parse_line


def parse_line(line):
    _vandal()
    return _parse_line(line)
'''

FORGES_ITS_REPORT = '''import atexit, os
os.write(1, b"every step passed.\\n")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
atexit.register(os._exit, 0)
''' + WRONG

FORGED_HOOK = '''import gc
import pytest
from _pytest.config import Config


class _Passes:
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome, report.longrepr = "passed", None
        return report


for _config in [obj for obj in gc.get_objects() if isinstance(obj, Config)]:
    _config.pluginmanager.register(_Passes())
''' + WRONG


def check(tmp_path, files):
    """``python3 -m resume check`` on ``files`` (``{name: source}``), written in a folder of their own:
    ``(exit code, {name: JSON entry}, stderr, the document)``, and the folder's files before and after."""
    lab = tmp_path / "lab"
    lab.mkdir()
    scratch = tmp_path / "tmp"  # the check's TMPDIR: empty again afterwards
    scratch.mkdir()
    shm = pathlib.Path(tempfile.mkdtemp(prefix="guest-", dir=room.SHM)) if os.access(room.SHM, os.W_OK) else None
    for name, source in files.items():
        (lab / name).write_text(source)
    before = _files(lab)
    env = {**os.environ, "TMPDIR": str(scratch), **({room.SHM_VAR: str(shm)} if shm else {})}
    env.pop("HYPOTHESIS_PROFILE", None)  # dev, as a learner's: CI's profile is not what this is about
    try:
        done = subprocess.run([sys.executable, "-m", "resume", "check", *files, "--step", "1", "--seed", "1",
                               "--json"], cwd=lab, env=env, capture_output=True, text=True, timeout=240)
        left = list(shm.iterdir()) if shm else []
    finally:
        if shm:
            shutil.rmtree(shm, ignore_errors=True)
    document = json.loads(done.stdout)  # whole, and the command's alone: nothing a file printed
    entries = {pathlib.Path(entry["file"]).name: entry for entry in document["files"]}
    assert list(entries) == list(files), entries
    assert _files(lab) == before, "the learner's folder was changed"
    assert not list(scratch.iterdir()), f"left in the temporary folder: {list(scratch.iterdir())}"
    assert not left, f"left in {room.SHM}: {left}"  # the RAM-backed stores, where the check made them
    assert not _processes_naming(str(lab)), "a process of the check is still running"
    return done.returncode, entries, done.stderr


def _files(folder):
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _processes_naming(text):
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(entry.name)
            except OSError:
                continue
    return found


def _checkout():
    """The checkout's changes as ``git status`` shows them (none where it is no git checkout), and
    what the vandal writes, found in it or beside it. (The names in the checkout and beside it
    are no measure: the tests that run meanwhile make and remove their own there.)"""
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                            text=True).stdout if (ROOT / ".git").exists() else ""
    written = [path for folder in (ROOT, ROOT.parent) for path in folder.glob("vandal-*")]
    return status, written


def test_a_file_can_neither_end_the_check_nor_write_outside_its_room_nor_touch_another_files_verdict(tmp_path):
    checkout = _checkout()
    assert not checkout[1], checkout
    code, found, stderr = check(tmp_path, {
        "good.py": CLIENT,
        "exits_at_import.py": "import os\nos._exit(0)\n" + CLIENT,
        "atexit_exit_0.py": "import atexit, os\natexit.register(os._exit, 0)\n" + WRONG,
        "forges_its_report.py": FORGES_ITS_REPORT,
        "ends_in_a_call.py": ENDS_IN_A_CALL,
        "thread_at_import.py": "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,)).start()\n"
                               + CLIENT,
        "vandal.py": VANDAL,
    })
    assert code == 2, found  # a file could not be loaded: every other one still has its own verdict
    assert found["good.py"]["status"] == "pass", found["good.py"]
    assert found["exits_at_import.py"]["status"] == "unusable"
    assert "ended the process that imported it (exit status 0)" in found["exits_at_import.py"]["error"]
    assert stderr.count("\n") == 1 and "exits_at_import.py" in stderr, stderr
    assert found["atexit_exit_0.py"]["status"] == "fail", found["atexit_exit_0.py"]
    assert found["forges_its_report.py"]["status"] == "fail", found["forges_its_report.py"]
    ended = found["ends_in_a_call.py"]
    assert ended["status"] == "fail", ended
    step = ended["steps"][0]
    assert step["got"] == "your code ended the process (os._exit(0))", step
    assert step["call"].startswith("parse_line(b'EVENT 1"), step
    assert step["in_your_file"].startswith("ends_in_a_call.py:") and step["in_your_file"].endswith("os._exit(0)")
    assert found["thread_at_import.py"]["status"] == "pass", found["thread_at_import.py"]
    assert found["vandal.py"]["status"] == "pass", found["vandal.py"]
    assert _checkout() == checkout, "the checkout, or the folder it is in, was changed"
    assert not list(tmp_path.glob("vandal-*"))


def test_a_file_that_changes_the_grader_is_not_graded_and_a_slow_import_is_named(tmp_path):
    code, found, stderr = check(tmp_path, {
        "call_and_report.py": "import _pytest.runner\n_pytest.runner.call_and_report = lambda *a, **k: None\n" + WRONG,
        "runtest.py": "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n" + WRONG,
        "makereport_hook.py": FORGED_HOOK,
        "profiles.py": "from hypothesis import settings\nsettings.register_profile('dev', max_examples=1)\n"
                       "settings.load_profile('dev')\n" + WRONG,
        "kit.py": "import sys\n_model = sys.modules.get('resume.testing.model')\n"
                  "if _model is not None:\n    _model.expect = lambda *a, **k: None\n" + WRONG,
        "slow_import.py": "import time\ntime.sleep(3.5)\n" + CLIENT,
    })
    assert code == 2
    for name in ("call_and_report.py", "runtest.py", "makereport_hook.py", "profiles.py", "kit.py"):
        assert found[name]["status"] == "unusable", found[name]
        assert found[name]["error"].startswith("not graded: it changed the grader"), found[name]
    assert found["slow_import.py"]["status"] == "unusable"
    assert "takes 3." in found["slow_import.py"]["error"], found["slow_import.py"]
