"""Resumable event receiver: a persistent cursor, atomic apply, replay ranges.

A client connects to a publisher over TCP, says ``RESUME <last>``, and
receives ``EVENT <seq> <delta>`` frames.  Each frame is committed to a SQLite
store (ledger row, running total and cursor in one transaction) *before* the
client answers ``ACK <seq>``, so a receiver killed between commit and ACK
resumes from the store and never applies a re-sent event twice.

Durability: the store runs in WAL mode with ``synchronous=FULL`` (each commit
fsyncs the WAL; SQLite fsyncs the directory when it creates the WAL), and
``open_store`` fsyncs the database file and its directory, so an ACKed event
survives a power cut.  If WAL cannot be enabled the store falls back to the
rollback journal with ``synchronous=EXTRA``, which syncs the directory after
the journal's unlink (the commit point of DELETE mode).

Socket reclaiming is done by one async context manager, ``_Reclaim``, shared
by ``consume_session`` and ``run_client``.

Stdlib only; Python 3.11 or newer.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import os
import sqlite3
import sys

if sys.version_info < (3, 11):  # asyncio.TimeoutError is TimeoutError from 3.11
    raise ImportError("this module needs Python 3.11 or newer")

__all__ = [
    "Conflict",
    "Gap",
    "ResyncRequired",
    "apply_event",
    "consume_line",
    "consume_session",
    "open_store",
    "parse_line",
    "replay",
    "run_client",
    "state",
]

SEQ_RANGE = (0, 2_147_483_647)
DELTA_RANGE = (-1000, 1000)
LAST_RANGE = (-1, 2_147_483_647)
LIMIT_RANGE = (1, 16)
LOG_SIZE_RANGE = (1, 128)
FRAME_MAX_BYTES = 64  # the final LF included
INVALID_TIMEOUT_CLOSE_BOUND = 1.0


class Gap(Exception):
    """The event is beyond ``last + 1``: something in between is missing."""


class Conflict(Exception):
    """An already-applied seq arrived with content that cannot be shown equal."""


class ResyncRequired(Exception):
    """The retained log no longer reaches back to the cursor."""


# ---------------------------------------------------------------- helpers


def _checked_int(value, bounds, name):
    """Return ``value`` as a plain int if it is an in-range int (never bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}")
    value = int.__int__(value)  # plain int, whatever a subclass overrides
    low, high = bounds
    if not low <= value <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {value}")
    return value


def _seconds(timeout):
    """Return a valid timeout as a float, or ``None`` if it is not valid.

    Valid: an int or float (subclasses too, never bool) with 0 < t < inf.
    """
    if isinstance(timeout, bool):
        return None
    if isinstance(timeout, int):
        try:
            seconds = float(int.__int__(timeout))
        except OverflowError:  # too large to become a float
            return None
    elif isinstance(timeout, float):
        seconds = float.__float__(timeout)
    else:
        return None
    if not 0.0 < seconds < math.inf:  # also rejects NaN
        return None
    return seconds


# ---------------------------------------------------------------- step 1


def _canonical_decimal(token, *, signed):
    """ASCII digits, no '+', no leading zero; '-' only if signed, never '-0'."""
    negative = signed and token.startswith(b"-")
    digits = token[1:] if negative else token
    if not digits or not digits.isdigit():  # bytes.isdigit is ASCII-only
        return False
    if digits.startswith(b"0") and (len(digits) > 1 or negative):
        return False
    return True


# Checks on the whole frame, in order; each is (predicate, complaint).
_FRAME_CHECKS = (
    (lambda raw: len(raw) <= FRAME_MAX_BYTES, "frame longer than 64 bytes"),
    (lambda raw: raw.endswith(b"\n"), "frame without its final LF"),
    (lambda raw: not raw.endswith(b"\r\n"), "CRLF line ending"),
    (lambda raw: raw.count(b"\n") == 1, "more than one line"),
    (lambda raw: raw.isascii(), "non-ASCII byte in frame"),
)

# Checks on the fields of the frame split on single spaces.
_FIELD_CHECKS = (
    (lambda f: len(f) == 3, "expected 'EVENT <seq> <delta>' with single spaces"),
    (lambda f: f[0] == b"EVENT", "frame does not start with 'EVENT'"),
    (lambda f: _canonical_decimal(f[1], signed=False), "seq is not a canonical decimal"),
    (lambda f: _canonical_decimal(f[2], signed=True), "delta is not a canonical decimal"),
)


def parse_line(line):
    """Parse one complete ``EVENT <seq> <delta>\\n`` frame into ``(seq, delta)``."""
    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes, not {type(line).__name__}")
    raw = memoryview(line).tobytes()  # plain bytes, whatever a subclass overrides
    for check, complaint in _FRAME_CHECKS:
        if not check(raw):
            raise ValueError(f"{complaint}: {raw!r}")
    # Only now that it is one complete frame is the final LF stripped.
    fields = raw[:-1].split(b" ")
    for check, complaint in _FIELD_CHECKS:
        if not check(fields):
            raise ValueError(f"{complaint}: {raw!r}")
    seq = _checked_int(int(fields[1]), SEQ_RANGE, "seq")
    delta = _checked_int(int(fields[2]), DELTA_RANGE, "delta")
    return seq, delta


# ---------------------------------------------------------------- step 2 / 3


class _Immediate:
    """``with _Immediate(con):`` runs the block in one BEGIN IMMEDIATE transaction.

    A clean exit commits (and rolls back if the COMMIT itself fails).  Any
    BaseException leaving the block rolls back and propagates unchanged: the
    same object, never replaced by a rollback error.  Either way no
    transaction is left open.
    """

    def __init__(self, con):
        self._con = con

    def __enter__(self):
        try:
            self._con.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._roll_back()
            raise
        return self._con

    def __exit__(self, exc_type, exc, tb):
        if exc is not None:
            self._roll_back()
            return False  # the original exception propagates as it is
        try:
            self._con.execute("COMMIT")
        except BaseException:
            self._roll_back()
            raise
        return False

    def _roll_back(self):
        with contextlib.suppress(Exception):
            if self._con.in_transaction:
                self._con.execute("ROLLBACK")


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


def _fsync_path(name, *, directory):
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    fd = os.open(name, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _persist_file_and_entry(path):
    """fsync the database file and its directory (its directory entry).

    SQLite syncs every commit, but not the directory entry of a database file
    it has just created.  Best effort: a file system that cannot fsync a
    directory must not make the store unusable.
    """
    try:
        name = os.fspath(path)
    except TypeError:
        return
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if name in ("", ":memory:"):
        return
    name = os.path.abspath(name)
    for target, is_dir in ((name, False), (os.path.dirname(name), True)):
        with contextlib.suppress(OSError):
            _fsync_path(target, directory=is_dir)


def _configure_durability(con):
    # FULL before switching so that the switch itself is synced.
    con.execute("PRAGMA synchronous=FULL")
    (mode,) = con.execute("PRAGMA journal_mode=WAL").fetchone()
    if str(mode).lower() != "wal":
        # Rollback journal: only EXTRA makes the journal's unlink durable.
        con.execute("PRAGMA synchronous=EXTRA")


def open_store(path):
    """Open (creating only what is missing) the store; return a new connection."""
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        _configure_durability(con)
        with _Immediate(con):
            for statement in _SCHEMA:
                con.execute(statement)
        _persist_file_and_entry(path)
    except BaseException:
        with contextlib.suppress(Exception):
            con.close()
        raise
    return con


def state(con):
    """Return ``(last, total)`` from the checkpoint."""
    last, total = con.execute(
        "SELECT last, total FROM checkpoint WHERE id = 1"
    ).fetchone()
    return last, total


def apply_event(con, seq, delta, fault=None):
    """Apply one event atomically; True if applied, False for a same duplicate."""
    seq = _checked_int(seq, SEQ_RANGE, "seq")
    delta = _checked_int(delta, DELTA_RANGE, "delta")
    with _Immediate(con):
        # Read inside the write transaction: no other connection can apply
        # the same ``last + 1`` concurrently.
        (last,) = con.execute("SELECT last FROM checkpoint WHERE id = 1").fetchone()
        if seq == last + 1:
            con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
            con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
            if fault is not None:
                fault()
            con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
            return True
        if seq > last:
            raise Gap(f"seq {seq} arrived while the cursor is at {last}")
        row = con.execute("SELECT delta FROM ledger WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise Conflict(f"seq {seq} is at or below the cursor but not in the ledger")
        if row[0] != delta:
            raise Conflict(f"seq {seq} was applied with delta {row[0]}, not {delta}")
        return False


# ---------------------------------------------------------------- step 4


def replay(events, last, limit):
    """Return at most ``limit`` events after ``last`` from a retained log."""
    if not isinstance(events, list):
        raise ValueError(f"events must be a list, not {type(events).__name__}")
    log = list(events)  # one snapshot: validated and sliced, the input untouched
    low, high = LOG_SIZE_RANGE
    if not low <= len(log) <= high:
        raise ValueError(f"the log must hold {low}..{high} events, not {len(log)}")
    previous = None
    for index, item in enumerate(log):
        if not isinstance(item, tuple) or len(item) != 2:
            raise ValueError(f"event #{index} is not a (seq, delta) tuple: {item!r}")
        seq = _checked_int(item[0], SEQ_RANGE, f"seq of event #{index}")
        _checked_int(item[1], DELTA_RANGE, f"delta of event #{index}")
        if previous is not None and seq != previous + 1:
            raise ValueError(f"event #{index} has seq {seq}, expected {previous + 1}")
        previous = seq
    last = _checked_int(last, LAST_RANGE, "last")
    limit = _checked_int(limit, LIMIT_RANGE, "limit")
    first = int.__int__(log[0][0])
    final = previous
    if last > final:
        raise ValueError(f"last {last} is beyond the log's final seq {final}")
    # Every ValueError check is done; only now the range decision.
    if last < first - 1:
        raise ResyncRequired(f"the log starts at {first}; cursor {last} misses {last + 1}")
    start = last - first + 1
    return log[start:start + limit]


# ---------------------------------------------------------------- step 5


def consume_line(con, line, fault=None):
    """Commit one frame, then (only then) return its ``ACK <seq>\\n``."""
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq


# ---------------------------------------------------------------- steps 6 / 7


class _Reclaim:
    """``async with _Reclaim(writer, bound):`` reclaims the socket on leaving.

    Reclaiming is ``close()``, then ``wait_closed()`` bounded by ``bound``.
    If that wait raises TimeoutError or ConnectionError the transport is
    aborted and the exit carries on.  Anything else (a cancellation arriving
    during the wait, another OSError) aborts too; it then propagates only if
    the block itself ended cleanly: the block's own error is never replaced.

    With ``on_success=False`` a clean exit leaves the socket alone (it has
    been handed over to someone who reclaims it).
    """

    def __init__(self, writer, bound, *, on_success=True):
        self._writer = writer
        self._bound = bound
        self._on_success = on_success

    async def __aenter__(self):
        return self._writer

    async def __aexit__(self, exc_type, exc, tb):
        if exc is None and not self._on_success:
            return False
        if isinstance(exc, GeneratorExit):
            # The coroutine is being closed, not cancelled: it must not await.
            with contextlib.suppress(Exception):
                self._writer.close()
                self._writer.transport.abort()
            return False
        try:
            self._writer.close()
            async with asyncio.timeout(self._bound):
                await self._writer.wait_closed()
        except (TimeoutError, ConnectionError):
            self._writer.transport.abort()
        except BaseException:
            self._writer.transport.abort()
            if exc is None:
                raise
        return False  # never swallow the block's own exception


async def consume_session(reader, writer, con, timeout, before_ack=None):
    """Commit each received frame, ACK it, and return ``state(con)`` at EOF."""
    seconds = _seconds(timeout)
    bound = INVALID_TIMEOUT_CLOSE_BOUND if seconds is None else seconds
    async with _Reclaim(writer, bound):
        if seconds is None:
            raise ValueError(f"timeout must be a positive finite int or float: {timeout!r}")
        while True:
            async with asyncio.timeout(seconds):
                line = await reader.readline()
            if not line:
                return state(con)
            ack = consume_line(con, line)  # committed from here on
            if before_ack is not None:
                outcome = before_ack(int(ack[4:-1]))
                if inspect.isawaitable(outcome):
                    await outcome
            writer.write(ack)
            async with asyncio.timeout(seconds):
                await writer.drain()


async def run_client(host, port, path, timeout, before_ack=None):
    """Resume from the store at ``path`` over one connection to the publisher."""
    seconds = _seconds(timeout)
    if seconds is None:
        raise ValueError(f"timeout must be a positive finite int or float: {timeout!r}")
    con = open_store(path)
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_connection(host, port, limit=64)
        # Until consume_session takes over, a failure reclaims the socket here.
        async with _Reclaim(writer, seconds, on_success=False):
            last, _ = state(con)
            writer.write(b"RESUME %d\n" % last)
            async with asyncio.timeout(seconds):
                await writer.drain()
        outcome = await consume_session(reader, writer, con, timeout, before_ack)
    except BaseException:
        with contextlib.suppress(Exception):
            con.close()
        raise
    con.close()
    return outcome
