"""An independent implementation of the resume-client contract (SPEC.md).

Written only from the specification, deliberately unlike a regex-based
implementation:

* frames are checked and scanned byte by byte (no ``re``);
* the store runs in WAL mode with ``synchronous=FULL`` and is initialised
  in one ``BEGIN IMMEDIATE`` transaction with an ``INSERT ... SELECT ...
  WHERE NOT EXISTS`` for the checkpoint row;
* the new total is computed in Python and written with plain ``UPDATE``s;
* every wait is bounded with ``asyncio.timeout`` (no ``asyncio.wait_for``).

Standard library only; Python 3.11 or newer.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import sqlite3

__all__ = [
    "parse_line",
    "open_store",
    "state",
    "Gap",
    "Conflict",
    "apply_event",
    "ResyncRequired",
    "replay",
    "consume_line",
    "consume_session",
    "run_client",
]

_SEQ_LOW, _SEQ_HIGH = 0, 2147483647
_DELTA_LOW, _DELTA_HIGH = -1000, 1000
_CURSOR_LOW = -1
_FRAME_MAX = 64
_LOG_MAX = 128
_LIMIT_LOW, _LIMIT_HIGH = 1, 16
_INVALID_TIMEOUT_CLOSE = 1.0

_LF = 0x0A
_CR = 0x0D
_SPACE = 0x20
_MINUS = 0x2D
_ZERO = 0x30
_NINE = 0x39
_KEYWORD = b"EVENT"


class Gap(Exception):
    """The event skips past the next expected sequence number."""


class Conflict(Exception):
    """An already-covered sequence number arrives with unprovable content."""


class ResyncRequired(Exception):
    """The retained log no longer reaches back to the cursor."""


# --------------------------------------------------------------------------
# argument helpers


def _plain_int(value, low, high, what):
    """Return ``value`` as an exact int if it is a non-bool int in range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: an int is required, got {type(value).__name__}")
    number = int.__int__(value)
    if number < low or number > high:
        raise ValueError(f"{what}: {number} lies outside {low}..{high}")
    return number


def _usable_timeout(value):
    """Return a positive finite float for a valid timeout, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        whole = int.__int__(value)
        if whole <= 0:
            return None
        try:
            as_float = float(whole)
        except OverflowError:
            return None
        if not math.isfinite(as_float):
            return None
        return as_float
    if isinstance(value, float):
        real = float.__float__(value)
        if real > 0.0 and real < math.inf:
            return real
        return None
    return None


# --------------------------------------------------------------------------
# step 1: the frame parser


def _scan_number(token, low, high, signed):
    """Turn an ASCII decimal token into an int, the strict way."""
    size = len(token)
    start = 0
    negative = False
    if signed and size > 0 and token[0] == _MINUS:
        negative = True
        start = 1
    if start >= size:
        raise ValueError("frame: a number is missing")
    if token[start] == _ZERO and size - start > 1:
        raise ValueError("frame: leading zero")
    value = 0
    position = start
    while position < size:
        octet = token[position]
        if octet < _ZERO or octet > _NINE:
            raise ValueError("frame: not a decimal digit")
        value = value * 10 + (octet - _ZERO)
        position += 1
    if negative:
        if value == 0:
            raise ValueError("frame: negative zero")
        value = -value
    if value < low or value > high:
        raise ValueError("frame: number out of range")
    return value


def parse_line(line):
    if not isinstance(line, bytes):
        raise ValueError("frame: bytes required")
    # an exact bytes copy, whatever the subclass overrides
    raw = bytes.__getitem__(line, slice(0, None))
    size = len(raw)
    if size == 0 or size > _FRAME_MAX:
        raise ValueError("frame: empty or longer than 64 bytes")
    # completeness first: exactly one LF and it is the last byte
    if raw[size - 1] != _LF:
        raise ValueError("frame: final newline missing")
    for index in range(size - 1):
        octet = raw[index]
        if octet == _LF:
            raise ValueError("frame: more than one line")
        if octet == _CR:
            raise ValueError("frame: carriage return")
        if octet > 0x7F:
            raise ValueError("frame: non-ASCII byte")
    body = raw[: size - 1]
    fields = []
    begin = 0
    for index in range(len(body)):
        if body[index] == _SPACE:
            fields.append(body[begin:index])
            begin = index + 1
    fields.append(body[begin:])
    if len(fields) != 3:
        raise ValueError("frame: expected exactly three fields")
    if fields[0] != _KEYWORD:
        raise ValueError("frame: keyword is not EVENT")
    seq = _scan_number(fields[1], _SEQ_LOW, _SEQ_HIGH, signed=False)
    delta = _scan_number(fields[2], _DELTA_LOW, _DELTA_HIGH, signed=True)
    return (seq, delta)


# --------------------------------------------------------------------------
# step 2: the store

_INIT_STATEMENTS = (
    "CREATE TABLE IF NOT EXISTS checkpoint("
    "id INTEGER PRIMARY KEY CHECK(id=1), "
    "last INTEGER NOT NULL, "
    "total INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger("
    "seq INTEGER PRIMARY KEY, "
    "delta INTEGER NOT NULL)",
    "INSERT INTO checkpoint (id, last, total) "
    "SELECT 1, -1, 0 "
    "WHERE NOT EXISTS (SELECT 1 FROM checkpoint WHERE id = 1)",
)


def _drop_transaction(con):
    """Roll back whatever is open; never raise (the caller's error wins)."""
    try:
        if con.in_transaction:
            con.execute("ROLLBACK")
    except Exception:
        pass
    try:
        if con.in_transaction:
            con.rollback()
    except Exception:
        pass


def _initialised(con):
    """True when both tables and the checkpoint row are already there."""
    found = con.execute(
        "SELECT name FROM sqlite_master "
        "WHERE type = 'table' AND name IN ('checkpoint', 'ledger')"
    ).fetchall()
    if len(found) != 2:
        return False
    return bool(con.execute("SELECT 1 FROM checkpoint WHERE id = 1").fetchall())


def open_store(path):
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=WAL").fetchall()
        con.execute("PRAGMA synchronous=FULL").fetchall()
        if not _initialised(con):
            con.execute("BEGIN IMMEDIATE")
            try:
                for statement in _INIT_STATEMENTS:
                    con.execute(statement)
                con.execute("COMMIT")
            except BaseException:
                _drop_transaction(con)
                raise
    except BaseException:
        con.close()
        raise
    return con


def state(con):
    rows = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchall()
    if not rows:
        raise sqlite3.DatabaseError("checkpoint row is missing")
    last, total = rows[0]
    return (last, total)


# --------------------------------------------------------------------------
# step 3: the atomic apply


def apply_event(con, seq, delta, fault=None):
    seq = _plain_int(seq, _SEQ_LOW, _SEQ_HIGH, "seq")
    delta = _plain_int(delta, _DELTA_LOW, _DELTA_HIGH, "delta")
    con.execute("BEGIN IMMEDIATE")
    try:
        rows = con.execute(
            "SELECT last, total FROM checkpoint WHERE id = 1"
        ).fetchall()
        if not rows:
            raise sqlite3.DatabaseError("checkpoint row is missing")
        last, total = rows[0]
        if seq > last + 1:
            raise Gap(f"event {seq} arrived while the cursor is at {last}")
        if seq <= last:
            stored = con.execute(
                "SELECT delta FROM ledger WHERE seq = ?", (seq,)
            ).fetchall()
            con.execute("ROLLBACK")
            if stored and stored[0][0] == delta:
                return False
            raise Conflict(f"event {seq} does not match what was committed")
        con.execute("INSERT INTO ledger (seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET total = ? WHERE id = 1", (total + delta,))
        if fault is not None:
            fault()
        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True
    except BaseException:
        _drop_transaction(con)
        raise


# --------------------------------------------------------------------------
# step 4: the replay range


def replay(events, last, limit):
    if not isinstance(events, list):
        raise ValueError("events: a list is required")
    count = len(events)
    if count < 1 or count > _LOG_MAX:
        raise ValueError("events: 1 to 128 items are required")
    checked = []
    previous = None
    for item in events:
        if not isinstance(item, tuple) or tuple.__len__(item) != 2:
            raise ValueError("events: each item must be a (seq, delta) tuple")
        seq = _plain_int(tuple.__getitem__(item, 0), _SEQ_LOW, _SEQ_HIGH, "seq")
        delta = _plain_int(
            tuple.__getitem__(item, 1), _DELTA_LOW, _DELTA_HIGH, "delta"
        )
        if previous is not None and seq != previous + 1:
            raise ValueError("events: seqs must be consecutive and ascending")
        previous = seq
        checked.append((seq, delta))
    cursor = _plain_int(last, _CURSOR_LOW, _SEQ_HIGH, "last")
    cap = _plain_int(limit, _LIMIT_LOW, _LIMIT_HIGH, "limit")
    first = checked[0][0]
    final = checked[-1][0]
    if cursor > final:
        raise ValueError("last: beyond the end of the log")
    if cursor < first - 1:
        raise ResyncRequired(f"log starts at {first}, cursor {cursor} is older")
    offset = cursor - first + 1
    return [pair for pair in checked[offset : offset + cap]]


# --------------------------------------------------------------------------
# step 5: ACK only after the commit


def consume_line(con, line, fault=None):
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK " + str(seq).encode("ascii") + b"\n"


# --------------------------------------------------------------------------
# steps 6 and 7: sessions


def _abort(writer):
    try:
        writer.transport.abort()
    except Exception:
        pass


async def _reclaim(writer, bound, own_error):
    """close(), then wait_closed() bounded by ``bound``.

    TimeoutError / ConnectionError: abort and carry on.  Anything else:
    abort, and raise it only when the session has no error of its own.
    """
    trouble = None
    try:
        writer.close()
        async with asyncio.timeout(bound):
            await writer.wait_closed()
    except (TimeoutError, ConnectionError):
        _abort(writer)
    except BaseException as other:
        _abort(writer)
        trouble = other
    if trouble is not None and not own_error:
        try:
            raise trouble
        finally:
            trouble = None


async def _read_frame(reader, bound):
    try:
        async with asyncio.timeout(bound):
            return await reader.readline()
    except asyncio.LimitOverrunError as overrun:
        raise ValueError("frame: line longer than the reader's limit") from overrun


async def consume_session(reader, writer, con, timeout, before_ack=None):
    bound = _usable_timeout(timeout)
    if bound is None:
        await _reclaim(writer, _INVALID_TIMEOUT_CLOSE, own_error=True)
        raise ValueError("timeout: a positive finite int or float is required")
    try:
        while True:
            line = await _read_frame(reader, bound)
            if line == b"":
                break
            ack = consume_line(con, line)
            seq = parse_line(line)[0]
            if before_ack is not None:
                outcome = before_ack(seq)
                if inspect.isawaitable(outcome):
                    await outcome
            writer.write(ack)
            async with asyncio.timeout(bound):
                await writer.drain()
    except BaseException:
        await _reclaim(writer, bound, own_error=True)
        raise
    await _reclaim(writer, bound, own_error=False)
    return state(con)


async def run_client(host, port, path, timeout, before_ack=None):
    bound = _usable_timeout(timeout)
    if bound is None:
        raise ValueError("timeout: a positive finite int or float is required")
    con = open_store(path)
    try:
        writer = None
        try:
            async with asyncio.timeout(bound):
                reader, writer = await asyncio.open_connection(host, port, limit=64)
            cursor = state(con)[0]
            writer.write(b"RESUME " + str(cursor).encode("ascii") + b"\n")
            async with asyncio.timeout(bound):
                await writer.drain()
        except BaseException:
            if writer is not None:
                await _reclaim(writer, bound, own_error=True)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()
