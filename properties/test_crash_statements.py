"""Crash anywhere, with nothing but the standard library: a process ended before each SQL statement.

The test owns the connection it hands to ``consume_line`` (it comes from the
implementation's ``open_store``), so ``con.set_trace_callback`` sees every SQL
statement the implementation issues on it, just before SQLite runs it. A
forked child process consumes a short session (new events, duplicates) and
ends itself with ``os._exit`` before statement K; the store must then be fully
old or fully new for every event (``total == SUM(ledger)``, the ledger exactly
``0..last`` as published, every ACK the child returned committed), and a new
connection consuming the session again from the start must ACK every line,
applying each event exactly once.

Every K, under every profile: a fork costs milliseconds. This catches a
commit split over two transactions; it cannot catch a torn write inside one
commit (``PRAGMA journal_mode=MEMORY``): that needs a kill between system
calls, properties/test_crash_syscalls.py.
"""

import contextlib
import os
import sys
import traceback

from resume.testing import crash, model
from resume.testing.store import temp_store_path

LOG = [(0, 5), (1, 7), (2, -3)]
LINES = [b"EVENT 0 5\n", b"EVENT 1 7\n", b"EVENT 1 7\n", b"EVENT 2 -3\n", b"EVENT 0 5\n"]
ENDED = 70  # the child's exit status when it ended itself before statement K
FINISHED = 0


def consume_in_child(impl, path, stop_before):
    """Fork a child that consumes LINES, ending before statement ``stop_before`` (0: never).

    Returns ``(exit status, ACKed seqs, statements seen, where it ended)``.
    """
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(reader)
        status = FINISHED
        try:
            report = os.fdopen(writer, "w", buffering=1)
            seen = 0
            line_no = 0

            def before_statement(sql):
                nonlocal seen
                seen += 1
                if seen == stop_before:
                    report.write(f"ended before statement #{seen} ({sql.split()[0]}), line {line_no + 1}\n")
                    report.flush()
                    os._exit(ENDED)

            con = impl.open_store(path)
            con.set_trace_callback(before_statement)
            for line_no, line in enumerate(LINES):
                ack = impl.consume_line(con, line)
                report.write(f"ack {ack.split()[1].decode()}\n")
            report.write(f"seen {seen}\n")
            report.flush()
        except BaseException:
            traceback.print_exc(file=sys.stderr)
            status = 1
        os._exit(status)
    os.close(writer)
    with os.fdopen(reader) as report:
        lines = report.read().splitlines()
    _, wait_status = os.waitpid(pid, 0)
    acks = [int(line.split()[1]) for line in lines if line.startswith("ack ")]
    seen = next((int(line.split()[1]) for line in lines if line.startswith("seen ")), None)
    where = next((line for line in lines if line.startswith("ended ")), "")
    return os.waitstatus_to_exitcode(wait_status), acks, seen, where


def resume(impl, path):
    """A new connection consumes LINES again: the problems seen (``[]`` if none)."""
    with contextlib.closing(impl.open_store(path)) as con:
        for line in LINES:
            expected = b"ACK %d\n" % int(line.split()[1])
            try:
                ack = impl.consume_line(con, line)
            except Exception as error:  # noqa: BLE001 - the problem is reported, not raised
                return [f"consuming {line!r} again raised {type(error).__name__}: {error}"]
            if ack != expected:
                return [f"consuming {line!r} again returned {ack!r}"]
    return []


def test_ending_the_process_before_any_sql_statement_leaves_the_store_consistent_and_exactly_once(impl):
    with temp_store_path() as path:
        code, acks, total_statements, _ = consume_in_child(impl, path, 0)
    assert code == FINISHED and acks == [0, 1, 1, 2, 0], (code, acks)
    for stop_before in range(1, total_statements + 1):
        with temp_store_path() as path:
            code, acks, _, where = consume_in_child(impl, path, stop_before)
            assert code == ENDED, f"the child did not end before statement #{stop_before} (exit {code})"
            problems = crash.consistency(path, dict(LOG), acks)
            if not problems:
                problems = resume(impl, path)
            if not problems:
                problems = crash.consistency(path, dict(LOG), acks)
                if crash.read_store(path)[0] != LOG[-1][0]:
                    problems.append(f"the store does not reach {LOG[-1][0]}")
        if problems:
            model.differs(
                "consume_line(con, line) for each of " + ", ".join(l.decode().strip() for l in LINES)
                + f" in a process that {where} (of {total_statements} statements), with "
                + (", ".join(f"ACK {seq}" for seq in acks) or "no ACK") + " sent; then the store",
                "all or nothing of each event: total = SUM(ledger), the ledger exactly seqs 0..last, "
                "every ACKed event in it", "; ".join(problems))
    print(f"\nSQL statements: explored {total_statements} of {total_statements}")

