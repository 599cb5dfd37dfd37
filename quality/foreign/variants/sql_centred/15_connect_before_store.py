"""resume client -- the ledger does the bookkeeping, Python only routes.

Stdlib only, Python >= 3.11.  Public names: parse_line, open_store, state,
Gap, Conflict, apply_event, ResyncRequired, replay, consume_line,
consume_session, run_client.

Storage: rollback journal in DELETE mode with synchronous=EXTRA.  In that
mode the commit point is the unlink of the -journal file, and EXTRA makes
SQLite fsync the directory after the unlink, so a COMMIT that has returned
(and therefore every ACK we write) survives a power cut.
"""

import asyncio
import inspect
import math
import sqlite3
import sys

if sys.version_info < (3, 11):
    raise ImportError("resume client requires Python >= 3.11 (asyncio.timeout)")

SEQ_CEILING = 2147483647
DELTA_BOUND = 1000
LINE_BYTES_MAX = 64
LOG_ITEMS_MAX = 128
BATCH_MAX = 16
FALLBACK_CLOSE_WAIT = 1.0

_DIGIT_BYTES = b"0123456789"


class Gap(Exception):
    pass


class Conflict(Exception):
    pass


class ResyncRequired(Exception):
    pass


# ---------------------------------------------------------------- SQL text

SQL_JOURNAL = "PRAGMA journal_mode = DELETE"
SQL_SYNC = "PRAGMA synchronous = EXTRA"
SQL_BEGIN = "BEGIN IMMEDIATE"
SQL_COMMIT = "COMMIT"
SQL_ROLLBACK = "ROLLBACK"

SQL_MAKE_CHECKPOINT = """
CREATE TABLE IF NOT EXISTS checkpoint(
    id INTEGER PRIMARY KEY CHECK(id=1),
    last INTEGER NOT NULL,
    total INTEGER NOT NULL
)"""

SQL_MAKE_LEDGER = """
CREATE TABLE IF NOT EXISTS ledger(
    seq INTEGER PRIMARY KEY,
    delta INTEGER NOT NULL
)"""

SQL_SEED_CHECKPOINT = """
INSERT INTO checkpoint(id, last, total)
SELECT 1, -1, 0
WHERE NOT EXISTS (SELECT 1 FROM checkpoint WHERE id = 1)"""

SQL_STATE = "SELECT last, total FROM checkpoint WHERE id = 1"

# Inserts the row only when the cursor sits right before it.
SQL_RECORD_NEXT = """
INSERT INTO ledger(seq, delta)
SELECT :seq, :delta FROM checkpoint
WHERE id = 1 AND last = :seq - 1
RETURNING seq"""

SQL_ADD_TO_TOTAL = "UPDATE checkpoint SET total = total + :delta WHERE id = 1"

SQL_ADVANCE_CURSOR = "UPDATE checkpoint SET last = :seq WHERE id = 1 AND last = :seq - 1"

# What an event that was not recorded is: beyond the cursor, a faithful
# repeat, or a repeat that cannot be shown to be the same.
SQL_CLASSIFY = """
SELECT CASE
         WHEN :seq > c.last THEN 'gap'
         WHEN l.delta IS NOT NULL AND l.delta = :delta THEN 'repeat'
         ELSE 'conflict'
       END
FROM checkpoint AS c
LEFT JOIN ledger AS l ON l.seq = :seq
WHERE c.id = 1"""


# ------------------------------------------------------------ validation

def _int_within(value, lowest, highest, label):
    if type(value) is bool or not isinstance(value, int):
        raise ValueError("%s: expected int, got %s" % (label, type(value).__name__))
    value = int(value)
    if value < lowest or value > highest:
        raise ValueError("%s: %d not within %d..%d" % (label, value, lowest, highest))
    return value


def _bound_seconds(timeout):
    """Float seconds for a valid timeout, else None."""
    if type(timeout) is bool or not isinstance(timeout, (int, float)):
        return None
    try:
        seconds = float(timeout)
    except OverflowError:
        return None
    if seconds > 0.0 and seconds != math.inf:
        return seconds          # NaN is not > 0.0
    return None


# ---------------------------------------------------------- step 1: frames

def _number(text, ceiling, label):
    """Unsigned decimal without a leading zero, at most `ceiling`."""
    if text == b"" or text.translate(None, _DIGIT_BYTES) != b"":
        raise ValueError("%s: not plain ASCII digits: %r" % (label, text))
    if text[:1] == b"0" and text != b"0":
        raise ValueError("%s: leading zero: %r" % (label, text))
    value = int(text)
    if value > ceiling:
        raise ValueError("%s: %d too large" % (label, value))
    return value


def parse_line(line):
    if not isinstance(line, bytes):
        raise ValueError("frame must be bytes, got %s" % type(line).__name__)
    if len(line) > LINE_BYTES_MAX:
        raise ValueError("frame longer than %d bytes" % LINE_BYTES_MAX)
    if not line.isascii():
        raise ValueError("frame is not ASCII")

    # Completeness first: the one and only LF must be the last byte.
    body, newline, after = line.partition(b"\n")
    if newline != b"\n":
        raise ValueError("frame has no final LF (cut off)")
    if after != b"":
        raise ValueError("more than one line")
    if body.endswith(b"\r"):
        raise ValueError("CRLF line ending")

    keyword, space1, rest = body.partition(b" ")
    seq_text, space2, delta_text = rest.partition(b" ")
    if keyword != b"EVENT" or space1 != b" " or space2 != b" ":
        raise ValueError("expected 'EVENT <seq> <delta>': %r" % line)

    seq = _number(seq_text, SEQ_CEILING, "seq")
    sign, minus, magnitude = delta_text.rpartition(b"-")
    if minus == b"":
        delta = _number(delta_text, DELTA_BOUND, "delta")
    elif sign == b"":
        delta = -_number(magnitude, DELTA_BOUND, "delta")
        if delta == 0:
            raise ValueError("delta: -0")
    else:
        raise ValueError("delta: misplaced '-': %r" % delta_text)
    return (seq, delta)


# ----------------------------------------------------------- step 2: store

def _end_transaction(con):
    """ROLLBACK whatever is open; a failing rollback never hides the cause."""
    if con.in_transaction:
        try:
            con.execute(SQL_ROLLBACK)
        except Exception:
            pass


def open_store(path):
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        con.execute(SQL_JOURNAL)
        con.execute(SQL_SYNC)
        con.execute(SQL_BEGIN)
        con.execute(SQL_MAKE_CHECKPOINT)
        con.execute(SQL_MAKE_LEDGER)
        con.execute(SQL_SEED_CHECKPOINT)
        con.execute(SQL_COMMIT)
    except BaseException:
        try:
            _end_transaction(con)
        finally:
            con.close()
        raise
    return con


def state(con):
    last, total = con.execute(SQL_STATE).fetchone()
    return (last, total)


# ----------------------------------------------------------- step 3: apply

_REFUSALS = {"gap": Gap, "conflict": Conflict}


def apply_event(con, seq, delta, fault=None):
    params = {
        "seq": _int_within(seq, 0, SEQ_CEILING, "seq"),
        "delta": _int_within(delta, -DELTA_BOUND, DELTA_BOUND, "delta"),
    }
    try:
        con.execute(SQL_BEGIN)
        if con.execute(SQL_RECORD_NEXT, params).fetchall():
            con.execute(SQL_ADD_TO_TOTAL, params)
            if fault is not None:
                fault()
            con.execute(SQL_ADVANCE_CURSOR, params)
            con.execute(SQL_COMMIT)
            return True
        (verdict,) = con.execute(SQL_CLASSIFY, params).fetchone()
        con.execute(SQL_COMMIT)
        if verdict == "repeat":
            return False
        raise _REFUSALS[verdict]("seq %(seq)d delta %(delta)d" % params)
    except BaseException:
        _end_transaction(con)
        raise


# ---------------------------------------------------------- step 4: replay

def replay(events, last, limit):
    if not isinstance(events, list):
        raise ValueError("events: expected list, got %s" % type(events).__name__)
    count = len(events)
    if count < 1 or count > LOG_ITEMS_MAX:
        raise ValueError("events: %d items, expected 1..%d" % (count, LOG_ITEMS_MAX))

    head = None
    for offset in range(count):
        item = events[offset]
        if not isinstance(item, tuple) or len(item) != 2:
            raise ValueError("events[%d]: expected a (seq, delta) tuple" % offset)
        seq = _int_within(item[0], 0, SEQ_CEILING, "events[%d] seq" % offset)
        _int_within(item[1], -DELTA_BOUND, DELTA_BOUND, "events[%d] delta" % offset)
        if head is None:
            head = seq
        elif seq != head + offset:
            raise ValueError("events[%d]: seq %d breaks the run from %d" % (offset, seq, head))

    cursor = _int_within(last, -1, SEQ_CEILING, "last")
    batch = _int_within(limit, 1, BATCH_MAX, "limit")
    tail = head + count - 1
    if cursor > tail:
        raise ValueError("last %d is past the final seq %d" % (cursor, tail))

    if cursor + 1 < head:
        raise ResyncRequired("log begins at %d, cursor %d needs %d" % (head, cursor, cursor + 1))
    begin = cursor + 1 - head
    return [events[i] for i in range(begin, min(begin + batch, count))]


# ------------------------------------------------------------- step 5: line

def consume_line(con, line, fault=None):
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK " + str(seq).encode("ascii") + b"\n"


# ---------------------------------------------------- steps 6, 7: network

async def _within(seconds, awaitable):
    async with asyncio.timeout(seconds):
        return await awaitable


async def _hang_up(writer, seconds, cause):
    """close(); wait_closed() within `seconds`; abort() when that wait fails.
    Raises only when there is no `cause` and the failure is neither a
    TimeoutError nor a ConnectionError."""
    if isinstance(cause, GeneratorExit):
        writer.close()                  # the coroutine is being closed:
        writer.transport.abort()        # it may not suspend any more
        return
    try:
        writer.close()
        await _within(seconds, writer.wait_closed())
    except (TimeoutError, ConnectionError):
        writer.transport.abort()
    except BaseException:
        writer.transport.abort()
        if cause is None:
            raise


async def consume_session(reader, writer, con, timeout, before_ack=None):
    seconds = _bound_seconds(timeout)
    cause = None
    try:
        if seconds is None:
            raise ValueError("timeout: expected a positive finite int or float, got %r" % (timeout,))
        while True:
            line = await _within(seconds, reader.readline())
            if line == b"":
                return state(con)
            ack = consume_line(con, line)
            if before_ack is not None:
                pending = before_ack(int(ack[4:-1]))
                if inspect.isawaitable(pending):
                    await pending
            writer.write(ack)
            await _within(seconds, writer.drain())
    except BaseException as exc:
        cause = exc
        raise
    finally:
        await _hang_up(writer, seconds or FALLBACK_CLOSE_WAIT, cause)


async def run_client(host, port, path, timeout, before_ack=None):
    seconds = _bound_seconds(timeout)
    if seconds is None:
        raise ValueError("timeout: expected a positive finite int or float, got %r" % (timeout,))
    reader, writer = await _within(
        seconds, asyncio.open_connection(host, port, limit=64))
    try:
        con = open_store(path)
    except BaseException as exc:
        await _hang_up(writer, seconds, exc)
        raise
    try:
        try:
            (last, _total) = state(con)
            writer.write(b"RESUME " + str(last).encode("ascii") + b"\n")
            await _within(seconds, writer.drain())
        except BaseException as exc:
            await _hang_up(writer, seconds, exc)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()
