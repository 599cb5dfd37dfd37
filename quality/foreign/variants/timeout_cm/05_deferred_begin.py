"""Resumable receiver for the "vending machine that stopped before ACK" lab.

A client connects to a publisher over loopback TCP, asks it to resume after
the last event it has durably applied, applies each ``EVENT <seq> <delta>``
frame atomically to a SQLite store (total and cursor together) and only then
acknowledges it.  A receiver killed between the commit and the ACK is taken
over by a new process that reuses the same store, so the event the publisher
resends is recognised as a duplicate instead of being applied twice.

Every bounded wait uses an ``asyncio.timeout(...)`` context manager.

Stdlib only; requires Python 3.11 or newer.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import re
import sqlite3
import sys

if sys.version_info < (3, 11):  # asyncio.timeout, Task.cancelling, TimeoutError
    raise ImportError("this module needs Python 3.11 or newer")

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

SEQ_MIN = 0
SEQ_MAX = 2_147_483_647
DELTA_MIN = -1000
DELTA_MAX = 1000
MAX_FRAME_BYTES = 64          # the final LF included
REPLAY_MAX_EVENTS = 128
REPLAY_MIN_LIMIT = 1
REPLAY_MAX_LIMIT = 16
CLOSE_WAIT_FALLBACK = 1.0     # closing bound when the caller's timeout is invalid
STREAM_LIMIT = 64             # StreamReader buffer limit for run_client


# ---------------------------------------------------------------------------
# argument checking
# ---------------------------------------------------------------------------

def _exact_int(value, name):
    """Return ``value`` as an exact ``int``; ``bool`` and non-ints are rejected.

    ``int.__int__`` reads the stored value of an int subclass directly, so a
    subclass cannot disguise itself through overridden dunder methods.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}")
    return int.__int__(value)


def _ranged_int(value, name, low, high):
    number = _exact_int(value, name)
    if not low <= number <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {number}")
    return number


def _seconds(timeout):
    """Validate a timeout and return it as a finite positive ``float``."""
    if isinstance(timeout, bool):
        raise ValueError("timeout must be an int or a float, not bool")
    if isinstance(timeout, int):
        try:
            seconds = float(int.__int__(timeout))
        except OverflowError:
            raise ValueError("timeout is too large") from None
    elif isinstance(timeout, float):
        seconds = float.__float__(timeout)
    else:
        raise ValueError(
            f"timeout must be an int or a float, not {type(timeout).__name__}")
    if not 0.0 < seconds < math.inf:          # also rejects NaN
        raise ValueError(f"timeout must be positive and finite, got {seconds!r}")
    return seconds


# ---------------------------------------------------------------------------
# step 1: the frame grammar
# ---------------------------------------------------------------------------

# One frame, nothing else: fullmatch() anchors both ends, and the LF is matched
# literally (no ``$``, which would also match before a trailing newline).
# Byte patterns make [0-9] ASCII digits only.
_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]{0,9}) (0|-?[1-9][0-9]{0,3})\n")


def parse_line(line):
    """Parse one complete ``EVENT <seq> <delta>\\n`` frame into ``(seq, delta)``."""
    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes, not {type(line).__name__}")
    frame = bytes.__bytes__(line)             # an exact bytes copy of a subclass
    if len(frame) > MAX_FRAME_BYTES:
        raise ValueError(f"frame longer than {MAX_FRAME_BYTES} bytes")
    match = _FRAME.fullmatch(frame)
    if match is None:
        raise ValueError(f"not a complete EVENT frame: {frame[:MAX_FRAME_BYTES]!r}")
    seq = int(match.group(1))
    delta = int(match.group(2))
    if seq > SEQ_MAX:
        raise ValueError(f"seq out of range: {seq}")
    if not DELTA_MIN <= delta <= DELTA_MAX:
        raise ValueError(f"delta out of range: {delta}")
    return seq, delta


# ---------------------------------------------------------------------------
# step 2: the store
# ---------------------------------------------------------------------------

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS checkpoint("
    "id INTEGER PRIMARY KEY CHECK(id=1), "
    "last INTEGER NOT NULL, "
    "total INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger("
    "seq INTEGER PRIMARY KEY, "
    "delta INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO checkpoint(id, last, total) VALUES (1, -1, 0)",
)


def open_store(path):
    """Open (creating if needed) the store at ``path``; return a new connection."""
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        # Durability beyond the lab: in the default DELETE journal mode the
        # commit point is the journal's unlink, which only EXTRA makes durable
        # (it fsyncs the directory).  Set before the first write.
        con.execute("PRAGMA synchronous=EXTRA")
        con.execute("BEGIN IMMEDIATE")
        for statement in _SCHEMA:
            con.execute(statement)
        con.execute("COMMIT")
    except BaseException:
        try:
            con.close()                       # also rolls back an open transaction
        except Exception:
            pass
        raise
    return con


def state(con):
    """Return the checkpoint as ``(last, total)``."""
    row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("the checkpoint row is missing")
    return row[0], row[1]


# ---------------------------------------------------------------------------
# step 3: atomic application
# ---------------------------------------------------------------------------

class Gap(Exception):
    """The event skips ahead of ``last + 1``; earlier events are missing."""


class Conflict(Exception):
    """An already-applied seq arrived with different (or unprovable) content."""


def apply_event(con, seq, delta, fault=None):
    """Apply one event atomically; ``True`` if applied now, ``False`` if a duplicate."""
    seq = _ranged_int(seq, "seq", SEQ_MIN, SEQ_MAX)
    delta = _ranged_int(delta, "delta", DELTA_MIN, DELTA_MAX)
    try:
        # The cursor is read inside the write transaction, so two connections
        # can never both apply last + 1.
        con.execute("BEGIN")
        last, total = con.execute(
            "SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
        if seq == last + 1:
            con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
            con.execute("UPDATE checkpoint SET total = ? WHERE id = 1",
                        (total + delta,))
            if fault is not None:
                fault()
            con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
            con.execute("COMMIT")
            return True
        if seq > last:
            raise Gap(f"seq {seq} arrived but the cursor is at {last}")
        row = con.execute("SELECT delta FROM ledger WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise Conflict(f"seq {seq} is at or below the cursor but not in the ledger")
        if row[0] != delta:
            raise Conflict(f"seq {seq} was applied with delta {row[0]}, not {delta}")
        con.execute("COMMIT")                 # read-only: just ends the transaction
        return False
    except BaseException:
        if con.in_transaction:
            try:
                con.execute("ROLLBACK")
            except Exception:
                pass
        raise


# ---------------------------------------------------------------------------
# step 4: replay range
# ---------------------------------------------------------------------------

class ResyncRequired(Exception):
    """The retained log starts after the cursor; it cannot bridge the hole."""


def replay(events, last, limit):
    """Return the (at most ``limit``) retained events right after ``last``."""
    if not isinstance(events, list):
        raise ValueError(f"events must be a list, not {type(events).__name__}")
    snapshot = list.copy(events)              # plain copy; a subclass cannot interfere
    if not 1 <= len(snapshot) <= REPLAY_MAX_EVENTS:
        raise ValueError(f"events must hold 1..{REPLAY_MAX_EVENTS} items")
    seqs = []
    for index, item in enumerate(snapshot):
        if not isinstance(item, tuple) or tuple.__len__(item) != 2:
            raise ValueError(f"events[{index}] is not a (seq, delta) tuple")
        seq = _ranged_int(tuple.__getitem__(item, 0), f"events[{index}] seq",
                          SEQ_MIN, SEQ_MAX)
        _ranged_int(tuple.__getitem__(item, 1), f"events[{index}] delta",
                    DELTA_MIN, DELTA_MAX)
        if seqs and seq != seqs[-1] + 1:
            raise ValueError(f"events[{index}] seq {seq} does not follow {seqs[-1]}")
        seqs.append(seq)
    cursor = _ranged_int(last, "last", -1, SEQ_MAX)
    count = _ranged_int(limit, "limit", REPLAY_MIN_LIMIT, REPLAY_MAX_LIMIT)
    first, final = seqs[0], seqs[-1]
    if cursor > final:
        raise ValueError(f"last {cursor} is beyond the log's final seq {final}")
    # Every ValueError check is done; only now decide whether a resync is due.
    if cursor < first - 1:
        raise ResyncRequired(f"log starts at {first}; cursor {cursor} needs {cursor + 1}")
    start = cursor - first + 1
    return snapshot[start:start + count]


# ---------------------------------------------------------------------------
# step 5: ACK only after the commit
# ---------------------------------------------------------------------------

def consume_line(con, line, fault=None):
    """Parse and apply one frame; return the ACK to send (duplicates too)."""
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq


# ---------------------------------------------------------------------------
# steps 6-7: the session and the client
# ---------------------------------------------------------------------------

def _abort(writer):
    try:
        writer.transport.abort()
    except Exception:
        pass


async def _reclaim(writer, seconds, failure):
    """Close ``writer``, waiting at most ``seconds``; abort if that goes wrong.

    ``failure`` is the error already ending the caller's path (or ``None``).
    When there is one, nothing raised here may replace it, so every closing
    error is swallowed; on a normal path only a timeout or a connection error
    is tolerated, anything else (a cancellation, another OSError) propagates
    after the abort.
    """
    try:
        writer.close()
        async with asyncio.timeout(seconds):
            await writer.wait_closed()
    except (TimeoutError, ConnectionError):
        _abort(writer)
    except BaseException:
        _abort(writer)
        if failure is None:
            raise


async def consume_session(reader, writer, con, timeout, before_ack=None):
    """Consume EVENT frames until EOF, ACKing each only after its commit.

    Returns ``state(con)`` at EOF.  The socket is reclaimed on every path;
    ``con`` is left open.
    """
    try:
        seconds = _seconds(timeout)
    except ValueError as invalid:
        await _reclaim(writer, CLOSE_WAIT_FALLBACK, invalid)
        raise
    try:
        while True:
            async with asyncio.timeout(seconds):
                line = await reader.readline()
            if not line:
                break
            ack = consume_line(con, line)
            if before_ack is not None:
                outcome = before_ack(int(ack[4:-1]))
                if inspect.isawaitable(outcome):
                    await outcome
            writer.write(ack)
            async with asyncio.timeout(seconds):
                await writer.drain()
        result = state(con)
    except BaseException as failure:
        await _reclaim(writer, seconds, failure)
        raise
    await _reclaim(writer, seconds, None)
    return result


async def run_client(host, port, path, timeout, before_ack=None):
    """Resume from the store at ``path`` against ``host:port``; return ``(last, total)``."""
    seconds = _seconds(timeout)
    con = open_store(path)
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_connection(host, port, limit=STREAM_LIMIT)
        try:
            last, _total = state(con)
            writer.write(b"RESUME %d\n" % last)
            async with asyncio.timeout(seconds):
                await writer.drain()
        except BaseException as failure:
            await _reclaim(writer, seconds, failure)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()
