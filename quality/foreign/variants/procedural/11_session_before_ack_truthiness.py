"""Event receiver that resumes from a SQLite store without double-applying.

Protocol (loopback TCP, ASCII lines):
    client -> server   RESUME <last>\\n
    server -> client   EVENT <seq> <delta>\\n   (at least once)
    client -> server   ACK <seq>\\n             (only after the commit)
    server closes the connection when the session is over.

The store is SQLite in its default rollback-journal mode with
PRAGMA synchronous=EXTRA: SQLite then fsyncs the directory after unlinking
the journal, which is the commit point of DELETE mode, so once a commit has
returned (and therefore before any ACK is written) it survives a power cut.
open_store also fsyncs the database file and its directory once, because
SQLite does not sync the directory entry of a database file it creates.

Python 3.11 or newer, standard library only.
"""

import asyncio
import inspect
import math
import os
import sqlite3
import sys

if sys.version_info < (3, 11):
    raise ImportError("Python 3.11 or newer is required")


MAX_SEQ = 2147483647
MIN_DELTA = -1000
MAX_DELTA = 1000
MAX_FRAME = 64          # bytes, counting the final LF
MAX_LOG = 128
MAX_LIMIT = 16
FALLBACK_CLOSE_WAIT = 1.0


class Gap(Exception):
    pass


class Conflict(Exception):
    pass


class ResyncRequired(Exception):
    pass


def _is_int(value):
    # bool is a subclass of int, but never counts as one here.
    if isinstance(value, bool):
        return False
    return isinstance(value, int)


def _timeout_to_seconds(timeout):
    # Returns a float for a valid timeout, None for an invalid one.
    if isinstance(timeout, bool):
        return None
    if isinstance(timeout, int):
        try:
            seconds = float(int.__int__(timeout))
        except OverflowError:
            return None
    elif isinstance(timeout, float):
        seconds = float.__float__(timeout)
    else:
        return None
    if math.isnan(seconds):
        return None
    if seconds <= 0.0:
        return None
    if seconds == math.inf:
        return None
    return seconds


# ----------------------------------------------------------------- step 1

def parse_line(line):
    if not isinstance(line, bytes):
        raise ValueError("parse_line accepts bytes only, got %s" % type(line).__name__)
    data = bytes(memoryview(line))

    # First make sure it is one complete frame.
    if len(data) > MAX_FRAME:
        raise ValueError("frame is longer than %d bytes" % MAX_FRAME)
    if len(data) == 0 or data[-1] != 0x0A:
        raise ValueError("frame has no final newline")
    if len(data) >= 2 and data[-2] == 0x0D:
        raise ValueError("frame ends with CRLF")
    body = data[:-1]
    if 0x0A in body:
        raise ValueError("more than one line")
    for byte in body:
        if byte > 0x7F:
            raise ValueError("non-ASCII byte in frame")

    # Then read "EVENT <seq> <delta>" strictly.
    if not body.startswith(b"EVENT "):
        raise ValueError("frame must start with 'EVENT '")
    pos = 6
    end = len(body)

    seq_start = pos
    while pos < end and 0x30 <= body[pos] <= 0x39:
        pos += 1
    seq_digits = body[seq_start:pos]
    if len(seq_digits) == 0:
        raise ValueError("seq is missing or not a decimal number")
    if len(seq_digits) > 1 and seq_digits[0] == 0x30:
        raise ValueError("seq has a leading zero")
    if pos >= end or body[pos] != 0x20:
        raise ValueError("seq must be followed by exactly one space")
    pos += 1

    negative = False
    if pos < end and body[pos] == 0x2D:
        negative = True
        pos += 1
    delta_start = pos
    while pos < end and 0x30 <= body[pos] <= 0x39:
        pos += 1
    delta_digits = body[delta_start:pos]
    if len(delta_digits) == 0:
        raise ValueError("delta is missing or not a decimal number")
    if pos != end:
        raise ValueError("unexpected bytes after delta")
    if len(delta_digits) > 1 and delta_digits[0] == 0x30:
        raise ValueError("delta has a leading zero")
    if negative and delta_digits == b"0":
        raise ValueError("-0 is not a valid delta")

    seq = int(seq_digits.decode("ascii"))
    delta = int(delta_digits.decode("ascii"))
    if negative:
        delta = -delta
    if seq > MAX_SEQ:
        raise ValueError("seq out of range")
    if delta < MIN_DELTA or delta > MAX_DELTA:
        raise ValueError("delta out of range")
    return (seq, delta)


# ----------------------------------------------------------------- step 2

def _rollback_if_open(con):
    # Used only while another exception is on its way out: it must not be
    # replaced by a failing rollback.
    try:
        if con.in_transaction:
            con.execute("ROLLBACK")
    except Exception:
        pass


def _fsync_best_effort(name, is_directory):
    flags = os.O_RDONLY
    if is_directory and hasattr(os, "O_DIRECTORY"):
        flags = flags | os.O_DIRECTORY
    try:
        fd = os.open(name, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _sync_new_file(path):
    try:
        name = os.fspath(path)
    except TypeError:
        return
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if name == "" or name == ":memory:":
        return
    name = os.path.abspath(name)
    _fsync_best_effort(name, False)
    _fsync_best_effort(os.path.dirname(name), True)


def open_store(path):
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        con.execute("PRAGMA synchronous=EXTRA")

        rows = con.execute(
            "SELECT name FROM sqlite_master"
            " WHERE type = 'table' AND name IN ('checkpoint', 'ledger')"
        ).fetchall()
        complete = len(rows) == 2
        if complete:
            row = con.execute("SELECT 1 FROM checkpoint WHERE id = 1").fetchone()
            if row is None:
                complete = False

        if not complete:
            try:
                con.execute("BEGIN IMMEDIATE")
                con.execute(
                    "CREATE TABLE IF NOT EXISTS checkpoint("
                    "id INTEGER PRIMARY KEY CHECK(id=1), "
                    "last INTEGER NOT NULL, "
                    "total INTEGER NOT NULL)"
                )
                con.execute(
                    "CREATE TABLE IF NOT EXISTS ledger("
                    "seq INTEGER PRIMARY KEY, "
                    "delta INTEGER NOT NULL)"
                )
                con.execute(
                    "INSERT OR IGNORE INTO checkpoint(id, last, total) VALUES (1, -1, 0)"
                )
                con.execute("COMMIT")
            except BaseException:
                _rollback_if_open(con)
                raise

        _sync_new_file(path)
    except BaseException:
        try:
            con.close()
        except Exception:
            pass
        raise
    return con


def state(con):
    row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
    return (row[0], row[1])


# ----------------------------------------------------------------- step 3

def apply_event(con, seq, delta, fault=None):
    if not _is_int(seq):
        raise ValueError("seq must be an int")
    if not _is_int(delta):
        raise ValueError("delta must be an int")
    seq = int.__int__(seq)
    delta = int.__int__(delta)
    if seq < 0 or seq > MAX_SEQ:
        raise ValueError("seq out of range")
    if delta < MIN_DELTA or delta > MAX_DELTA:
        raise ValueError("delta out of range")

    try:
        con.execute("BEGIN IMMEDIATE")
        last = con.execute("SELECT last FROM checkpoint WHERE id = 1").fetchone()[0]

        if seq == last + 1:
            con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
            con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
            if fault is not None:
                fault()
            con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
            con.execute("COMMIT")
            return True

        if seq > last + 1:
            raise Gap("expected seq %d, got %d" % (last + 1, seq))

        row = con.execute("SELECT delta FROM ledger WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise Conflict("seq %d is not in the ledger" % seq)
        if row[0] != delta:
            raise Conflict("seq %d has delta %d, not %d" % (seq, row[0], delta))
        con.execute("ROLLBACK")
        return False
    except BaseException:
        _rollback_if_open(con)
        raise


# ----------------------------------------------------------------- step 4

def replay(events, last, limit):
    if not isinstance(events, list):
        raise ValueError("events must be a list")
    items = list(events)
    if len(items) < 1:
        raise ValueError("the log is empty")
    if len(items) > MAX_LOG:
        raise ValueError("the log holds more than %d events" % MAX_LOG)

    expected = None
    for item in items:
        if not isinstance(item, tuple):
            raise ValueError("every event must be a tuple")
        if len(item) != 2:
            raise ValueError("every event must be a (seq, delta) pair")
        seq = item[0]
        delta = item[1]
        if not _is_int(seq) or not _is_int(delta):
            raise ValueError("seq and delta must be ints")
        seq = int.__int__(seq)
        delta = int.__int__(delta)
        if seq < 0 or seq > MAX_SEQ:
            raise ValueError("seq out of range")
        if delta < MIN_DELTA or delta > MAX_DELTA:
            raise ValueError("delta out of range")
        if expected is not None and seq != expected:
            raise ValueError("seqs are not consecutive and ascending")
        expected = seq + 1

    if not _is_int(last):
        raise ValueError("last must be an int")
    last = int.__int__(last)
    if last < -1 or last > MAX_SEQ:
        raise ValueError("last out of range")
    if not _is_int(limit):
        raise ValueError("limit must be an int")
    limit = int.__int__(limit)
    if limit < 1 or limit > MAX_LIMIT:
        raise ValueError("limit out of range")

    first_seq = int.__int__(items[0][0])
    final_seq = expected - 1
    if last > final_seq:
        raise ValueError("last is beyond the final seq of the log")

    if last < first_seq - 1:
        raise ResyncRequired("log starts at %d, cursor %d needs %d" % (first_seq, last, last + 1))

    start = last + 1 - first_seq
    result = []
    index = start
    while index < len(items) and len(result) < limit:
        result.append(items[index])
        index += 1
    return result


# ----------------------------------------------------------------- step 5

def consume_line(con, line, fault=None):
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK " + str(seq).encode("ascii") + b"\n"


# ----------------------------------------------------------------- step 6

async def _wait_bounded(awaitable, seconds):
    # asyncio.wait_for of Python 3.11 can swallow a cancellation of the
    # calling task when the inner awaitable finishes at the same moment
    # (gh-86296): it then returns the result as if nothing happened.  A
    # cancel() of this task always bumps task.cancelling(), so a count that
    # grew while wait_for returned normally means the cancellation was lost:
    # raise it again.
    task = asyncio.current_task()
    cancels_before = task.cancelling()
    result = await asyncio.wait_for(awaitable, seconds)
    if task.cancelling() > cancels_before:
        raise asyncio.CancelledError()
    return result


async def _reclaim_socket(writer, seconds, pending_error):
    # close(), wait_closed() bounded by `seconds`, abort() if that wait
    # fails.  A closing error propagates only when there is no pending
    # error of the caller's (which is then raised by the caller).
    if isinstance(pending_error, GeneratorExit):
        # The coroutine is being closed rather than cancelled; it may not
        # await anything any more, so close and abort without waiting.
        try:
            writer.close()
            writer.transport.abort()
        except Exception:
            pass
        return
    try:
        writer.close()
        await _wait_bounded(writer.wait_closed(), seconds)
    except (TimeoutError, ConnectionError):
        writer.transport.abort()
    except BaseException:
        writer.transport.abort()
        if pending_error is None:
            raise


async def consume_session(reader, writer, con, timeout, before_ack=None):
    seconds = _timeout_to_seconds(timeout)
    if seconds is None:
        error = ValueError("timeout must be a positive finite int or float, not %r" % (timeout,))
        await _reclaim_socket(writer, FALLBACK_CLOSE_WAIT, error)
        raise error

    try:
        while True:
            line = await _wait_bounded(reader.readline(), seconds)
            if line == b"":
                result = state(con)
                break

            ack = consume_line(con, line)
            # The event is committed now; the publisher does not know yet.
            if before_ack:
                seq = parse_line(line)[0]
                hook_result = before_ack(seq)
                if inspect.isawaitable(hook_result):
                    await hook_result

            writer.write(ack)
            await _wait_bounded(writer.drain(), seconds)
    except BaseException as error:
        await _reclaim_socket(writer, seconds, error)
        raise

    await _reclaim_socket(writer, seconds, None)
    return result


# ----------------------------------------------------------------- step 7

async def run_client(host, port, path, timeout, before_ack=None):
    seconds = _timeout_to_seconds(timeout)
    if seconds is None:
        raise ValueError("timeout must be a positive finite int or float, not %r" % (timeout,))

    con = open_store(path)
    try:
        task = asyncio.current_task()
        cancels_before = task.cancelling()
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, limit=64), seconds
        )

        # The socket is open: until consume_session owns it, reclaim it here.
        try:
            if task.cancelling() > cancels_before:
                # wait_for swallowed a cancellation (gh-86296).
                raise asyncio.CancelledError()
            last = state(con)[0]
            writer.write(b"RESUME " + str(last).encode("ascii") + b"\n")
            await _wait_bounded(writer.drain(), seconds)
        except BaseException as error:
            await _reclaim_socket(writer, seconds, error)
            raise

        result = await consume_session(reader, writer, con, timeout, before_ack)
    except BaseException:
        try:
            con.close()
        except Exception:
            pass
        raise

    con.close()
    return result
