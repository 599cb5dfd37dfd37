"""An exactly-once-effect receiver for ``EVENT <seq> <delta>`` lines.

This one file is the whole implementation of the seven steps of the contract
(SPEC.md). It uses the standard library only and imports nothing else from
its package, so a copy of it alone in any folder is a working module.

Wire protocol (loopback TCP, ASCII, one line per message)::

    client -> server   RESUME <last>\\n      once, right after connecting
    server -> client   EVENT <seq> <delta>\\n any number of times
    client -> server   ACK <seq>\\n          after each committed (or duplicate) event
    server -> client   EOF                   the session ends

What each call guarantees:

* ``parse_line`` accepts exactly one complete frame or raises ValueError.
* ``apply_event`` commits the ledger row, the total and the cursor in one
  transaction, or changes nothing and leaves no transaction open.
* ``consume_line`` returns an ACK only after that commit.
* ``consume_session`` and ``run_client`` reclaim the socket on every path and
  never hide the error that ended the session.

Every invalid argument raises ValueError; ``bool`` is never an int here.
Requires Python 3.11+: every wait is bounded with ``asyncio.timeout`` (not
``asyncio.wait_for``, which on 3.11 can swallow a cancellation that arrives as
the inner wait completes, CPython gh-86296), and it raises the built-in
TimeoutError.
"""

import asyncio
import inspect
import math
import re
import sqlite3

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

SEQ_MIN, SEQ_MAX = 0, 2147483647
DELTA_MIN, DELTA_MAX = -1000, 1000
LAST_MIN = -1
LIMIT_MIN, LIMIT_MAX = 1, 16
LOG_MAX = 128
FRAME_MAX = 64  # bytes, the final LF included
CLOSE_TIMEOUT_FALLBACK = 1.0  # used to reclaim a connection when `timeout` is invalid

# One ASCII space between fields, ASCII digits only, no sign but a leading
# minus on a non-zero delta, no leading zero. A bytes pattern with fullmatch:
# `$` would also match before a final LF, and `\d` on str would admit
# non-ASCII digits; neither is used here.
_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")


class Gap(Exception):
    """The event's seq is past ``last + 1``: an event in between is missing."""


class Conflict(Exception):
    """The seq was already applied with other content (or its row is missing)."""


class ResyncRequired(Exception):
    """The retained log starts after the cursor: replay cannot bridge the hole."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(name, value, low, high):
    if not _is_int(value):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}: {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {value}")


# ---------------------------------------------------------------- step 1


def parse_line(line):
    """Return ``(seq, delta)`` for one complete frame ``b"EVENT <seq> <delta>\\n"``.

    Raises ValueError for anything else: a non-bytes value, a frame over 64
    bytes (LF included), a missing final LF, more than one line, CR, non-ASCII,
    a sign, a leading zero, ``-0``, extra or missing spaces or fields, and
    numbers out of range.
    """
    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes, not {type(line).__name__}: {line!r}")
    # Check that this is one complete frame before looking inside it.
    if len(line) > FRAME_MAX:
        raise ValueError(f"frame is {len(line)} bytes, over the {FRAME_MAX}-byte limit")
    if not line.endswith(b"\n"):
        raise ValueError(f"frame has no final LF (cut off?): {line!r}")
    if line.count(b"\n") != 1:
        raise ValueError(f"frame holds more than one line: {line!r}")
    if not line.isascii():
        raise ValueError(f"frame is not ASCII: {line!r}")
    match = _FRAME.fullmatch(line)
    if match is None:
        raise ValueError(f"not a frame 'EVENT <seq> <delta>\\n': {line!r}")
    seq, delta = int(match[1]), int(match[2])
    _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    return seq, delta


# ---------------------------------------------------------------- step 2

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS checkpoint("
    "id INTEGER PRIMARY KEY CHECK(id=1), last INTEGER NOT NULL, total INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger(seq INTEGER PRIMARY KEY, delta INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO checkpoint(id, last, total) VALUES (1, -1, 0)",
)


def open_store(path):
    """Open (creating if needed) the store at ``path`` and return the connection.

    The tables and the checkpoint row ``(1, -1, 0)`` are created only when
    they do not exist, so a saved cursor survives every reopen. The connection
    has ``isolation_level=None`` and a 1 s busy timeout. If initialisation
    fails the connection is closed and the error propagates.

    Durability (SPEC.md decision 18: an ACK survives a power cut): the store
    is in WAL mode with ``synchronous=FULL``. SQLite's defaults (a DELETE
    rollback journal, ``synchronous=FULL``) commit by unlinking the journal
    and never sync the folder after it: a power cut right after the ACK can
    bring the journal back, and the next open rolls the ACKed event back.
    In WAL mode with FULL each commit is one append to the WAL and one
    ``fdatasync`` of it before COMMIT returns (the WAL's folder is synced
    when the WAL is created), so the commit is durable before the ACK.
    ``synchronous=EXTRA`` with the DELETE journal is safe too (it syncs the
    folder after the unlink), but it commits at 0.8-0.9 times the defaults'
    rate, where WAL with FULL commits at about three times it (2.9-3.5x
    measured: docs/BENCHMARKS.md, "Commits per second by durability
    setting"): one WAL append and one sync per commit instead of a journal,
    the store and four syncs. WAL with NORMAL or ``synchronous=OFF`` ACK
    before anything is synced. docs/POWER_LOSS.md has the traces.
    """
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                con.execute(statement)
            # Fails here, not later, on a store whose tables have other columns.
            con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
            con.execute("SELECT seq, delta FROM ledger LIMIT 0").fetchall()
            con.execute("COMMIT")
        except BaseException:
            _rollback(con)
            raise
        # An ACK must survive a power cut (decision 18; see the docstring).
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
    except BaseException:
        con.close()
        raise
    return con


def state(con):
    """Return the stored ``(last, total)``."""
    row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("the checkpoint row is missing")
    return row[0], row[1]


def _rollback(con):
    # Called while an error is propagating: that error must win, so a failing
    # ROLLBACK (the connection already gone, say: even in_transaction raises
    # then) is not allowed to replace it.
    try:
        if con.in_transaction:
            con.execute("ROLLBACK")
    except sqlite3.Error:
        pass


# ---------------------------------------------------------------- step 3


def apply_event(con, seq, delta, fault=None):
    """Apply event ``(seq, delta)`` exactly once.

    * ``seq == last + 1``: in ONE transaction insert the ledger row, add
      ``delta`` to the total, call ``fault()`` if given, move ``last``;
      commit and return True.
    * ``seq <= last``: return False if the ledger holds the same delta for
      ``seq``; raise Conflict if it holds another, or no row.
    * ``seq > last + 1``: raise Gap.

    ``last`` is read inside the writing transaction (``BEGIN IMMEDIATE``), so
    two connections cannot both apply ``last + 1``. On any failure (any
    BaseException, from ``fault`` too) everything is rolled back, the same
    exception object propagates and no transaction is left open.
    """
    _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try: if BEGIN fails, there is no transaction of ours to undo.
    con.execute("BEGIN IMMEDIATE")
    try:
        last, _ = state(con)
        if seq > last + 1:
            raise Gap(f"event {seq} arrived but the cursor is at {last}: expected {last + 1}")
        if seq <= last:
            row = con.execute("SELECT delta FROM ledger WHERE seq = ?", (seq,)).fetchone()
            if row is None:
                raise Conflict(f"event {seq} is at or before the cursor {last} but has no ledger row")
            if row[0] != delta:
                raise Conflict(f"event {seq} was applied with delta {row[0]}, now {delta}")
            con.execute("ROLLBACK")
            return False
        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True
    except BaseException:
        _rollback(con)
        raise


# ---------------------------------------------------------------- step 4


def replay(events, last, limit):
    """Return the next at most ``limit`` events after cursor ``last``, as a new list.

    ``events`` is a list of 1..128 ``(seq, delta)`` tuples with consecutive,
    ascending seqs. The whole input is validated first (ValueError); only then
    is ResyncRequired raised when ``last < first_seq - 1`` (the log no longer
    holds the event right after the cursor). The input is not changed.
    """
    if not isinstance(events, list):
        raise ValueError(f"events must be a list, not {type(events).__name__}")
    if not LOG_MAX >= len(events) >= 1:
        raise ValueError(f"events must hold 1..{LOG_MAX} items, got {len(events)}")
    previous = None
    for index, item in enumerate(events):
        if not isinstance(item, tuple) or len(item) != 2:
            raise ValueError(f"events[{index}] must be a (seq, delta) tuple, got {item!r}")
        seq, delta = item
        _check_int(f"events[{index}] seq", seq, SEQ_MIN, SEQ_MAX)
        _check_int(f"events[{index}] delta", delta, DELTA_MIN, DELTA_MAX)
        if previous is not None and seq != previous + 1:
            raise ValueError(f"events[{index}] has seq {seq} after {previous}: not consecutive")
        previous = seq
    _check_int("last", last, LAST_MIN, SEQ_MAX)
    _check_int("limit", limit, LIMIT_MIN, LIMIT_MAX)
    first, final = events[0][0], events[-1][0]
    if last > final:
        raise ValueError(f"last {last} is past the log's final seq {final}")
    if last < first - 1:
        raise ResyncRequired(f"the log starts at {first}; cursor {last} needs {last + 1}")
    start = last - first + 1
    return list(events[start:start + limit])


# ---------------------------------------------------------------- step 5


def consume_line(con, line, fault=None):
    """Parse and apply one frame; return ``b"ACK <seq>\\n"`` only once it is committed.

    A duplicate with the same content is ACKed too. Parse errors, Gap,
    Conflict and any failure of ``fault`` propagate, and no ACK is returned.
    """
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq


# ---------------------------------------------------------------- step 6


def _is_valid_timeout(timeout):
    if not _is_int(timeout) and not isinstance(timeout, float):
        return False
    try:
        seconds = float(timeout)
    except OverflowError:  # an int too large to become a float
        return False
    return 0 < seconds < math.inf  # False for NaN too


def _check_timeout(timeout):
    if not _is_valid_timeout(timeout):
        raise ValueError(f"timeout must be a positive finite int or float, got {timeout!r}")


async def _reclaim(writer, timeout):
    """close(), then wait_closed() bounded by ``timeout``; abort() if that fails.

    TimeoutError and ConnectionError are absorbed after the abort; anything
    else (a cancellation arriving during the wait) is re-raised after it.
    """
    try:
        writer.close()
        async with asyncio.timeout(timeout):
            await writer.wait_closed()
    except (TimeoutError, ConnectionError):
        writer.transport.abort()
    except BaseException:
        writer.transport.abort()
        raise


async def _reclaim_after_error(writer, timeout):
    # The session's own error is propagating; a closing error must not replace it.
    try:
        await _reclaim(writer, timeout)
    except BaseException:
        pass


async def consume_session(reader, writer, con, timeout, before_ack=None):
    """Consume frames until EOF, ACKing each one after its commit; return ``state(con)``.

    Every ``readline`` and every ``drain`` is bounded by ``timeout``.
    ``before_ack(seq)`` (a function, or one returning an awaitable) runs after
    each commit and before its ACK, duplicates included. On every path the
    connection is reclaimed (close, bounded wait_closed, abort if needed); the
    DB connection is left open. Errors and cancellation propagate unchanged.
    With an invalid timeout the connection is reclaimed with a 1 s bound and
    ValueError is raised.
    """
    valid = _is_valid_timeout(timeout)
    close_timeout = timeout if valid else CLOSE_TIMEOUT_FALLBACK
    try:
        _check_timeout(timeout)
        while True:
            async with asyncio.timeout(timeout):
                line = await reader.readline()
            if not line:
                break
            ack = consume_line(con, line)
            if before_ack is not None:
                seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
                result = before_ack(seq)
                if inspect.isawaitable(result):
                    await result
            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()
    except BaseException:
        await _reclaim_after_error(writer, close_timeout)
        raise
    await _reclaim(writer, close_timeout)
    return state(con)


# ---------------------------------------------------------------- step 7


async def run_client(host, port, path, timeout, before_ack=None):
    """Resume from the store at ``path``: connect, send ``RESUME <last>``, consume.

    The timeout is validated before anything is opened. The store is opened
    first, then the connection (bounded by ``timeout``). The DB connection is
    closed on every path; if something fails before ``consume_session`` takes
    over, the socket is reclaimed here. Returns the final ``(last, total)``.
    """
    _check_timeout(timeout)
    con = open_store(path)
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)
        try:
            last, _ = state(con)
            writer.write(b"RESUME %d\n" % last)
            async with asyncio.timeout(timeout):
                await writer.drain()
        except BaseException:
            await _reclaim_after_error(writer, timeout)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()
