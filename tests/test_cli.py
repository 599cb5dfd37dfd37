"""The command line (``resume``): exit codes, one-line errors, the user's files left alone.

Claims (resume/cli.py's docstring): every bad input of ``consume``, ``serve``,
``demo`` and ``check`` gives exit 2 and ONE line on stderr that names the
input, with no traceback, and leaves every file of its folder byte for byte
as it was, with no file added; ``demo`` checks what it claims (exit 0 on the
reference, 1 on a known bug that breaks the recovery); Ctrl-C during
``check`` exits 130 with one "interrupted" line, ends the suite's processes
and removes its temporary files. A file that prints when it is imported is
checked as usual, its output on stderr; one that hangs there is stopped
(``loader.IMPORT_LIMIT``, shortened here); a wrong ``HYPOTHESIS_PROFILE``
is one line for ``check`` and one usage error for plain pytest.

Most cases call ``resume.cli.main(argv)`` in this process (no start-up cost);
the console script itself, the demo's receivers and Ctrl-C need real
processes. Peers are real sockets on loopback: a port nobody listens on, and
a listener that never says a word.
"""

import contextlib
import os
import pathlib
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from tests import fake_suite
from quality import bugs as known
from quality import meta
from resume import cli
from resume.testing.drivers import loader
from resume.testing.grading import check, runner

REFERENCE = meta.REFERENCE


def run(argv):
    """``main(argv)`` in this process: ``(exit code, stdout, stderr)``."""
    out, err = _Capture(), _Capture()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


class _Capture(list):
    def write(self, text):
        self.append(text)

    def flush(self):
        pass

    def getvalue(self):
        return "".join(self)


def files(folder):
    """Every file under ``folder`` with its bytes."""
    return {p: p.read_bytes() for p in sorted(pathlib.Path(folder).rglob("*")) if p.is_file()}


def assert_one_line(err, command, *names):
    """One line on stderr, from ``resume COMMAND`` (``resume`` for an unknown command), naming ``names``."""
    prog = f"resume {command}" if command in ("serve", "consume", "demo", "check") else "resume"
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"{prog}: "), err
    assert "Traceback" not in err
    for name in names:
        assert str(name) in err, err


@pytest.fixture
def folder(tmp_path):
    """A folder of the user's files: inputs good and bad."""
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "a folder").mkdir()
    with contextlib.closing(sqlite3.connect(tmp_path / "users.db")) as con:
        con.execute("CREATE TABLE users(name TEXT)")
        con.execute("INSERT INTO users VALUES ('ada')")
        con.commit()
    with contextlib.closing(sqlite3.connect(tmp_path / "other-ledger.db")) as con:
        con.execute("CREATE TABLE ledger(id INTEGER, amount REAL, note TEXT)")
        con.commit()
    (tmp_path / "client.txt").write_text(REFERENCE.read_text())
    (tmp_path / "syntax.py").write_text("def parse_line(line:\n")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "hangs.py").write_text("import time\nwhile True:\n    time.sleep(1)\n")
    (tmp_path / "prints.py").write_text("print('hello from import')\n" + REFERENCE.read_text())
    (tmp_path / "half.py").write_text("def parse_line(line):\n    return 0, 0\n")
    (tmp_path / "delta5000.log").write_text("0 1\n1 5000\n")
    (tmp_path / "holes.log").write_text("0 1\n1 2\n3 4\n")
    (tmp_path / "words.log").write_text("0 1\nseven eight\n")
    (tmp_path / "binary.log").write_bytes(b"0 1\n\x00\xff\xfe\n")
    (tmp_path / "empty.log").write_text("\n")
    return tmp_path


@pytest.fixture
def refused_port():
    """A loopback port that refuses connections: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def silent_port():
    """A loopback port that accepts (the kernel's backlog) and never sends a byte."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        yield sock.getsockname()[1]


def bad_inputs(f, refused, silent):
    """``(argv, the names the one line must hold)`` for each bad input."""
    return [
        # consume: the store
        (["consume", "127.0.0.1", refused, f / "missing" / "store.db"], ["missing"]),
        (["consume", "127.0.0.1", refused, f / "a folder"], ["a folder"]),
        (["consume", "127.0.0.1", refused, f / "notes.txt"], ["notes.txt", "SQLite"]),
        (["consume", "127.0.0.1", refused, f / "users.db"], ["users.db", "users"]),
        (["consume", "127.0.0.1", refused, f / "other-ledger.db"], ["other-ledger.db", "ledger"]),
        # consume: the peer and the options (a new store path: nothing may be left there)
        (["consume", "127.0.0.1", refused, f / "new.db"], [f"127.0.0.1:{refused}"]),
        (["consume", "127.0.0.1", silent, f / "new.db", "--timeout", "0.3"], [f"127.0.0.1:{silent}", "0.3"]),
        (["consume", "127.0.0.1", "70000", f / "new.db"], ["70000"]),
        (["consume", "127.0.0.1", "port", f / "new.db"], ["port"]),
        (["consume", "127.0.0.1", refused, f / "new.db", "--timeout", "-1"], ["-1"]),
        (["consume", "127.0.0.1", refused, f / "new.db", "--timeout", "nan"], ["nan"]),
        (["consume", "127.0.0.1", refused, f / "new.db", "--impl", f / "client.txt"], ["client.txt", ".py"]),
        # serve: the log and the options, all before it listens
        (["serve", "--log", f / "no such.log"], ["no such.log"]),
        (["serve", "--log", f / "a folder"], ["a folder"]),
        (["serve", "--log", f / "words.log"], ["words.log", "line 2"]),
        (["serve", "--log", f / "binary.log"], ["binary.log", "ASCII"]),
        (["serve", "--log", f / "holes.log"], ["holes.log", "line 3", "consecutive"]),
        (["serve", "--log", f / "delta5000.log"], ["delta5000.log", "5000"]),
        (["serve", "--log", f / "empty.log"], ["empty.log"]),
        (["serve", "--start", "-5", "--sessions", "1"], ["-5"]),
        (["serve", "--start", "2147483647", "--events", "2"], ["2147483647"]),
        (["serve", "--events", "-1"], ["-1"]),
        (["serve", "--sessions", "0"], ["0"]),
        (["serve", "--port", "70000"], ["70000"]),
        # demo and check: a file that cannot be used
        (["demo", "--impl", f / "client.txt"], ["client.txt", ".py"]),
        (["demo", "--impl", f / "missing.py"], ["missing.py"]),
        (["check", f / "client.txt"], ["client.txt", ".py"]),
        (["check", f / "syntax.py"], ["syntax.py", "line 1", "SyntaxError"]),
        (["check", f / "empty.py"], ["empty.py", "empty"]),
        (["check", f / "exits.py"], ["exits.py", "sys.exit"]),
        (["check", f / "raises.py"], ["raises.py", "RuntimeError", "boom at import"]),
        (["check", f / "hangs.py"], ["hangs.py", "still being imported"]),
        (["check", f / "missing.py"], ["missing.py"]),
        (["check", f / "a folder"], ["a folder"]),
        (["check", REFERENCE, "--step", "9"], ["9"]),
        (["bake"], ["bake"]),
    ]


def test_each_bad_input_exits_2_with_one_line_and_changes_no_file(folder, refused_port, silent_port,
                                                                  monkeypatch):
    monkeypatch.setattr(loader, "IMPORT_LIMIT", 0.5)  # hangs.py: 10 s for a learner
    before = files(folder)
    failures = []
    for argv, names in bad_inputs(folder, refused_port, silent_port):
        code, out, err = run(argv)
        try:
            assert code == 2, f"exit {code}"
            assert_one_line(err, argv[0], *names)
            assert out == "", out
            assert files(folder) == before, "a file was changed or added"
        except AssertionError as error:
            failures.append(f"{argv}: {error}\n  stderr: {err!r}")
    assert not failures, "\n".join(failures)


def test_a_file_that_prints_when_imported_is_checked_and_what_it_prints_kept_out(folder, tmp_path, one_lane):
    """The processes that import it keep their output to themselves (issue 57: a file can print
    a report of its own). (A suite of a few lines: the claim is the grader's, whatever the suite's
    tests are.)"""
    root = fake_suite.write(tmp_path / "suite", fake_suite.STEPS_ONE_AND_TWO)
    out, err = _Capture(), _Capture()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = check.check(folder / "prints.py", steps=["1", "2"], seed=0, storage=tmp_path / "hypothesis",
                           root=root)
    out, err = out.getvalue(), err.getvalue()
    assert code == 0, out + err
    assert "hello from import" not in out and "every step checked passed." in out
    assert err == ""


def test_a_wrong_profile_name_is_one_line_for_check(monkeypatch):
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "nope")
    code, out, err = run(["check", REFERENCE])
    assert (code, out) == (2, "")
    assert_one_line(err, "check", "HYPOTHESIS_PROFILE=nope", "dev, ci, fuzz")


def test_a_wrong_profile_name_is_a_usage_error_for_pytest():
    env = dict(os.environ, HYPOTHESIS_PROFILE="nope")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only",
                           "-q", "properties/test_step1_parse_line.py"],
                          cwd=runner.ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4  # pytest's usage error
    assert "Traceback" not in done.stdout + done.stderr
    assert "HYPOTHESIS_PROFILE=nope is not a profile of the suite: use one of dev, ci, fuzz" in done.stderr


def test_a_port_in_use_is_refused_before_serving(folder):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, out, err = run(["serve", "--port", port, "--sessions", "1"])
    assert code == 2
    assert_one_line(err, "serve", str(port), "in use")


def test_consume_on_a_store_of_an_earlier_run_resumes_it(folder, refused_port):
    """A store written by the implementation is accepted (and a refused peer leaves it as it was)."""
    from resume.testing.drivers import loader

    impl = loader.load(REFERENCE)
    con = impl.open_store(str(folder / "mine.db"))
    impl.apply_event(con, 0, 5)
    con.close()
    before = files(folder)
    code, _, err = run(["consume", "127.0.0.1", refused_port, folder / "mine.db"])
    assert code == 2
    assert_one_line(err, "consume", f"127.0.0.1:{refused_port}")
    assert files(folder) == before


@contextlib.contextmanager
def serving(*options):
    """``resume serve --sessions 1 OPTIONS`` in a process of its own; yields (process, port)."""
    serve = subprocess.Popen([sys.executable, "-m", "resume", "serve", "--sessions", "1", *options],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = serve.stdout.readline()
        yield serve, first.split(":")[1].split()[0]
    finally:
        if serve.poll() is None:
            serve.kill()
        serve.communicate()


def test_serve_and_consume_run_a_session_and_exit_0(folder):
    """The happy path: serve --sessions 1, one consume."""
    with serving("--events", "3") as (serve, port):
        code, out, err = run(["consume", "127.0.0.1", port, folder / "store.db"])
        assert (code, err) == (0, "")
        assert out.startswith("last=2 total=")
        rest, serve_err = serve.communicate(timeout=10)
    assert serve.returncode == 0, serve_err
    assert "session 1: RESUME -1, sent 3, ACKs [0, 1, 2], end: eof" in rest


def test_a_log_that_does_not_follow_the_store_is_one_line_and_leaves_no_store(folder):
    before = files(folder)
    with serving("--start", "5", "--events", "1") as (serve, port):
        code, out, err = run(["consume", "127.0.0.1", port, folder / "new.db"])
    assert (code, out) == (2, "")
    assert_one_line(err, "consume", f"127.0.0.1:{port}", "new.db", "Gap")
    assert files(folder) == before


def test_the_demo_checks_its_claims_and_keeps_the_store_when_asked(tmp_path):
    code, out, err = run(["demo", "--keep"])
    assert (code, err) == (0, "")
    assert "FAIL" not in out and "recovery held" in out
    assert "duplicate" in out and "RESUME -1" in out
    kept = pathlib.Path(out.split("the store is kept: ")[1].split()[0])
    try:
        assert kept.is_file()
    finally:
        for path in kept.parent.iterdir():
            path.unlink()
        kept.parent.rmdir()


def test_the_demo_exits_1_when_the_recovery_fails(tmp_path):
    bug = next(b for b in known.BUGS if b.id == "resume-minus-one")
    impl = meta.write_bugs(tmp_path, [bug])[bug.id]
    code, out, err = run(["demo", "--impl", impl])
    assert code == 1, out + err
    assert "FAIL" in out and "recovery did NOT hold" in out


def test_the_console_script_gives_one_line_and_exit_2_without_a_traceback(folder):
    done = subprocess.run([sys.executable, "-m", "resume", "consume", "127.0.0.1", "1",
                           str(folder / "users.db")], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert_one_line(done.stderr, "consume", "users.db")


def _processes_naming(text):
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


@pytest.mark.skipif(not pathlib.Path("/proc").is_dir(), reason="reads /proc to find processes")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_ctrl_c_during_check_ends_the_suite_removes_its_files_and_exits_130(tmp_path, signum):
    impl = tmp_path / "impl" / "client.py"  # a path of its own, to find the processes by
    impl.parent.mkdir()
    impl.write_text(REFERENCE.read_text())
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp))
    # As from a terminal: SIGINT not ignored. A pytest started in the background by a script (`&`)
    # ignores it, and so would every child; Python then raises no KeyboardInterrupt at all.
    as_from_a_terminal = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                          "os.execv(sys.executable, [sys.executable, '-m', 'resume', 'check', sys.argv[1]])")
    check = subprocess.Popen([sys.executable, "-c", as_from_a_terminal, str(impl)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (_processes_naming(f"--impl={impl}") and list(temp.glob("resume-run-*"))):
            assert time.monotonic() < deadline, "the suite never started"
            time.sleep(0.05)
        check.send_signal(signum)
        out, err = check.communicate(timeout=30)
    finally:
        if check.poll() is None:
            check.kill()
            check.communicate()
    assert check.returncode == 130
    assert_one_line(err, "check", "interrupted", impl)
    assert not list(temp.glob("resume-run-*"))
    # check returns only once no process of the suite runs (runner._end_group waits for them).
    assert _processes_naming(f"--impl={impl}") == []


def test_a_publisher_that_fails_in_a_session_ends_serve_with_one_line(monkeypatch, capsys):
    """A fake, to force a path no input reaches any more: the publisher raising inside a session.

    Before its input was checked, ``serve --start -5`` crashed the publisher
    inside the connection and ``serve --sessions 1`` then waited forever.
    """
    from resume.publisher import Publisher

    async def broken(self, reader, writer, session):
        raise RuntimeError("a fault injected by the test")

    monkeypatch.setattr(Publisher, "_converse", broken)
    with socket.socket() as probe:  # a free port, for serve to listen on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = {}
    serve = threading.Thread(target=lambda: result.update(
        code=cli.main(["serve", "--port", str(port), "--sessions", "1"])), daemon=True)
    serve.start()
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as client:
                client.sendall(b"RESUME -1\n")
                with contextlib.suppress(ConnectionError):  # the broken session may reset it
                    client.recv(1)
            break
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, "serve never listened"
            time.sleep(0.05)
    serve.join(timeout=10)
    assert not serve.is_alive(), "serve kept waiting after its publisher failed"
    assert result["code"] == 2
    assert_one_line(capsys.readouterr().err, "serve", "RuntimeError", "a fault injected by the test")
