"""Tests of the crash-point tools (resume/testing/drivers/crash.py): reading strace's trace, naming points, judging a store.

No strace needed: the trace is a fixed excerpt of ``strace -f -o FILE``
output (each line after the traced process's PID), as a receiver writes it.
"""

import contextlib
import sqlite3

import pytest

from resume.testing.drivers import crash

TRACE = """\
4242 openat(AT_FDCWD, "/tmp/x/store.db", O_RDWR|O_CREAT|O_NOFOLLOW|O_CLOEXEC, 0644) = 6
4242 openat(AT_FDCWD, "/tmp/x/store.db-journal", O_RDWR|O_CREAT|O_NOFOLLOW|O_CLOEXEC, 0644) = 7
4242 pwrite64(7, "\\0\\0\\0\\0", 512, 0) = 512
4242 fdatasync(7)                      = 0
4242 openat(AT_FDCWD, "/tmp/x", O_RDONLY|O_CLOEXEC) = 8
4242 fdatasync(8)                      = 0
4242 pwrite64(6, "SQLite format 3\\0", 4096, 0) = 4096
4242 sendto(9, "RESUME -1\\n", 10, 0, NULL, 0) = 10
4242 recvfrom(9, "EVENT 0 5\\n", 262144, 0, NULL, NULL) = 10
4242 pwrite64(7, "\\0\\0\\0\\3", 4, 512) = 4
4242 fdatasync(6)                      = 0
4242 sendto(9, "ACK 0\\n", 6, 0, NULL, 0) = 6
4242 recvfrom(9, "", 262144, 0, NULL, NULL) = 0
4242 +++ exited with 0 +++
"""


def run():
    return crash.TracedRun(0, "", "", crash.timeline(TRACE))


def test_the_trace_gives_every_point_in_order_with_its_phase_and_file():
    traced = run()
    assert [str(p) for p in traced.points()] == [
        "pwrite64 #1", "fdatasync #1", "fdatasync #2", "pwrite64 #2", "sendto #1", "recvfrom #1",
        "pwrite64 #3", "fdatasync #3", "sendto #2", "recvfrom #2"]
    assert traced.describe(crash.Point("fdatasync", 2)) == "killed at fdatasync #2 on x, during open_store"
    assert traced.describe(crash.Point("fdatasync", 3, "EIO")) == \
        "EIO at fdatasync #3 on store.db, during event 0's commit"
    assert traced.describe(crash.Point("sendto", 2)) == "killed at sendto #2, during sending ACK 0"
    assert traced.describe(crash.Point("recvfrom", 2)) == \
        "killed at recvfrom #2, during reading the next line, after ACK 0 left"
    assert traced.call(crash.Point("pwrite64", 9)) is None


def test_a_point_is_one_strace_injection():
    assert crash.Point("fdatasync", 2).option() == "inject=fdatasync:signal=KILL:when=2"
    assert crash.Point("pwrite64", 7, "ENOSPC").option() == "inject=pwrite64:error=ENOSPC:when=7"


def store(path, last, total, ledger):
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        con.execute("CREATE TABLE checkpoint(id INTEGER PRIMARY KEY, last INTEGER, total INTEGER)")
        con.execute("CREATE TABLE ledger(seq INTEGER PRIMARY KEY, delta INTEGER)")
        con.execute("INSERT INTO checkpoint VALUES (1, ?, ?)", (last, total))
        con.executemany("INSERT INTO ledger VALUES (?, ?)", ledger.items())


@pytest.mark.parametrize("last, total, ledger, acks, wrong", [
    (1, 12, {0: 5, 1: 7}, [0, 1], None),
    (0, 12, {0: 5, 1: 7}, [0], "not exactly 0..0"),  # a ledger row past the cursor
    (1, 5, {0: 5, 1: 7}, [0], "SUM(ledger)"),  # torn: the row without its total
    (1, 12, {0: 5, 1: 7}, [0, 1, 2], "ACKs [2]"),  # an ACK with no commit
    (1, 10, {0: 5, 1: 5}, [], "never published"),  # applied with other content
])
def test_consistency_names_what_is_wrong(tmp_path, last, total, ledger, acks, wrong):
    path = tmp_path / "store.db"
    store(path, last, total, ledger)
    problems = crash.consistency(path, {0: 5, 1: 7, 2: -3}, acks)
    if wrong is None:
        assert problems == []
    else:
        assert any(wrong in problem for problem in problems), problems


def test_a_store_never_set_up_is_the_old_state(tmp_path):
    assert crash.consistency(tmp_path / "none.db", {0: 5}) == []
    assert crash.consistency(tmp_path / "none.db", {0: 5}, [0]) != []


def test_without_strace_the_crash_tests_skip_naming_the_install_command_and_fail_in_ci(monkeypatch):
    monkeypatch.setattr(crash, "strace_problem", lambda: "strace is not installed")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y strace"):
        crash.require_strace()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI needs strace"):
        crash.require_strace()
