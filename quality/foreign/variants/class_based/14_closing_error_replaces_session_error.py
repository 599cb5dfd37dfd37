"""Resumable event consumer: persistent cursor, atomic apply, replay range.

The receiving side of a small at-least-once protocol over loopback TCP::

    client -> server   RESUME <last>\\n
    server -> client   EVENT <seq> <delta>\\n   (any number of times)
    client -> server   ACK <seq>\\n             (only after the commit)

The logic lives in a few classes -- ``Frame`` (the wire grammar), ``Store``
(the SQLite cursor and ledger), ``EventLog`` (the replay window) and
``Session`` (one TCP session) -- and the public functions of the lab are
thin wrappers over them.

Durability: the store runs in WAL mode with ``synchronous=EXTRA``, so every
commit is fsynced before ``apply_event`` returns, and therefore before any
ACK is written; an ACKed event survives a power cut, not only a killed
process.

Standard library only; needs Python 3.11+ (``asyncio.timeout``, and
``asyncio.TimeoutError is TimeoutError``).
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

SEQ_MIN, SEQ_MAX = 0, 2_147_483_647
DELTA_MIN, DELTA_MAX = -1000, 1000
FRAME_MAX_BYTES = 64          # the final LF included
REPLAY_MAX_EVENTS = 128
REPLAY_MIN_LIMIT, REPLAY_MAX_LIMIT = 1, 16
CURSOR_MIN = -1
INVALID_TIMEOUT_CLOSE_WAIT = 1.0


class Gap(Exception):
    """The event is ahead of ``last + 1``: something in between is missing."""


class Conflict(Exception):
    """An already-applied seq arrived with content that cannot be shown equal."""


class ResyncRequired(Exception):
    """The retained log starts after the cursor: replay cannot close the gap."""


def _is_int(value):
    """An int in the lab's sense: int subclasses count, bool never does."""
    return isinstance(value, int) and not isinstance(value, bool)


def _checked_int(value, low, high, what):
    """Return ``value`` as a plain int if it is an int in [low, high]."""
    if not _is_int(value):
        raise ValueError(f"{what} must be an int, not {type(value).__name__}")
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"{what} {number} is outside {low}..{high}")
    return number


def _checked_timeout(timeout):
    """Return a valid timeout as a float, else raise ValueError.

    Valid: an int or float (subclasses too, bool never) with
    0 < timeout < inf; NaN and ints too large for a float are invalid.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ValueError(f"timeout must be an int or float, not {type(timeout).__name__}")
    try:
        seconds = float(timeout)
    except OverflowError:
        raise ValueError("timeout is too large to be a float") from None
    if not 0.0 < seconds < math.inf:  # False for NaN as well
        raise ValueError(f"timeout must be positive and finite, got {timeout!r}")
    return seconds


# --------------------------------------------------------------------------
# Step 1: the wire frame
# --------------------------------------------------------------------------

class Frame:
    """One ``EVENT <seq> <delta>\\n`` frame, parsed strictly.

    Exactly one ASCII space between the three fields, upper-case ``EVENT``,
    ASCII digits only, no leading zeros, no ``+``, no ``-0``, a single LF
    at the very end and nothing after it, at most 64 bytes including it.
    """

    __slots__ = ("seq", "delta")

    # [0-9] in a bytes pattern is ASCII only; fullmatch anchors both ends,
    # and the single literal \n rules out CR, a second line, or no newline.
    _GRAMMAR = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")

    def __init__(self, seq, delta):
        self.seq = seq
        self.delta = delta

    @classmethod
    def parse(cls, line):
        if not isinstance(line, bytes):  # bytes subclasses are bytes
            raise ValueError(f"a frame must be bytes, not {type(line).__name__}")
        if len(line) > FRAME_MAX_BYTES:
            raise ValueError(f"frame longer than {FRAME_MAX_BYTES} bytes")
        # Completeness first: a cut-off last line has no final LF.
        if not line.endswith(b"\n"):
            raise ValueError("incomplete frame: no final newline")
        if line.count(b"\n") != 1:
            raise ValueError("more than one line")
        if not line.isascii():
            raise ValueError("frame is not ASCII")
        if line.endswith(b"\r\n"):
            raise ValueError("CRLF line ending")
        match = cls._GRAMMAR.fullmatch(line)
        if match is None:
            raise ValueError(f"malformed frame: {line!r}")
        seq = _checked_int(int(match[1]), SEQ_MIN, SEQ_MAX, "seq")
        delta = _checked_int(int(match[2]), DELTA_MIN, DELTA_MAX, "delta")
        return cls(seq, delta)

    def as_tuple(self):
        return (self.seq, self.delta)

    def ack(self):
        return b"ACK %d\n" % self.seq


# --------------------------------------------------------------------------
# Steps 2-3: the store
# --------------------------------------------------------------------------

class _ImmediateTransaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; any BaseException rolls back.

    The exception that ended the block propagates unchanged (``__exit__``
    returns False), and no transaction is left open afterwards.
    """

    def __init__(self, con):
        self._con = con

    def __enter__(self):
        try:
            self._con.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._rollback()
            raise
        return self._con

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self._con.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        else:
            self._rollback()
        return False

    def _rollback(self):
        if self._con.in_transaction:
            try:
                self._con.execute("ROLLBACK")
            except Exception:
                # The error already on its way out is the one that matters.
                pass


class Store:
    """The checkpoint (cursor + total) and the ledger, on one connection."""

    _SCHEMA = (
        "CREATE TABLE IF NOT EXISTS checkpoint("
        "id INTEGER PRIMARY KEY CHECK(id=1), "
        "last INTEGER NOT NULL, "
        "total INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS ledger("
        "seq INTEGER PRIMARY KEY, "
        "delta INTEGER NOT NULL)",
    )

    def __init__(self, con):
        self.con = con

    @classmethod
    def open(cls, path):
        """Connect, complete the schema without touching saved data."""
        con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
        try:
            cls(con)._initialise()
        except BaseException:
            try:
                con.close()
            except Exception:
                pass
            raise
        return con

    def _initialise(self):
        con = self.con
        # Per connection, and set before the journal-mode switch so that
        # the switch's own commit is fully synced too.  EXTRA also syncs
        # the directory after a rollback journal is unlinked.
        con.execute("PRAGMA synchronous=EXTRA")
        # Persistent in the file; a no-op (no lock taken) when already WAL.
        con.execute("PRAGMA journal_mode=WAL").fetchall()
        for statement in self._SCHEMA:
            con.execute(statement)
        # Only write when the row is missing: an existing cursor is kept,
        # and opening an initialised store never waits for a writer's lock.
        if con.execute("SELECT 1 FROM checkpoint WHERE id = 1").fetchone() is None:
            con.execute(
                "INSERT OR IGNORE INTO checkpoint (id, last, total) VALUES (1, -1, 0)"
            )

    def state(self):
        row = self.con.execute(
            "SELECT last, total FROM checkpoint WHERE id = 1"
        ).fetchone()
        if row is None:
            raise sqlite3.DatabaseError("checkpoint row is missing")
        return (row[0], row[1])

    def _last(self):
        return self.state()[0]

    def apply(self, seq, delta, fault=None):
        seq = _checked_int(seq, SEQ_MIN, SEQ_MAX, "seq")
        delta = _checked_int(delta, DELTA_MIN, DELTA_MAX, "delta")
        # Read the cursor inside the writing transaction, so that two
        # connections can never both apply last + 1.
        with _ImmediateTransaction(self.con) as con:
            last = self._last()
            if seq == last + 1:
                con.execute("INSERT INTO ledger (seq, delta) VALUES (?, ?)", (seq, delta))
                con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
                if fault is not None:
                    fault()
                con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
                return True
            if seq > last + 1:
                raise Gap(f"seq {seq} arrived while the cursor is at {last}")
            row = con.execute("SELECT delta FROM ledger WHERE seq = ?", (seq,)).fetchone()
            if row is None:
                raise Conflict(f"seq {seq} <= cursor {last} but has no ledger row")
            if row[0] != delta:
                raise Conflict(f"seq {seq} was applied with delta {row[0]}, not {delta}")
            return False


def parse_line(line):
    """Step 1: return ``(seq, delta)`` for one complete EVENT frame."""
    return Frame.parse(line).as_tuple()


def open_store(path):
    """Step 2: a new sqlite3 connection to an initialised store."""
    return Store.open(path)


def state(con):
    """Step 2: ``(last, total)``."""
    return Store(con).state()


def apply_event(con, seq, delta, fault=None):
    """Step 3: True if applied now, False for an identical duplicate."""
    return Store(con).apply(seq, delta, fault)


# --------------------------------------------------------------------------
# Step 4: the replay window
# --------------------------------------------------------------------------

class EventLog:
    """A validated, retained run of consecutive ``(seq, delta)`` events."""

    def __init__(self, events):
        if not isinstance(events, list):
            raise ValueError(f"events must be a list, not {type(events).__name__}")
        if not 1 <= len(events) <= REPLAY_MAX_EVENTS:
            raise ValueError(f"events must hold 1..{REPLAY_MAX_EVENTS} items, not {len(events)}")
        previous = None
        for index, item in enumerate(events):
            if not isinstance(item, tuple) or len(item) != 2:
                raise ValueError(f"events[{index}] is not a (seq, delta) tuple")
            seq = _checked_int(item[0], SEQ_MIN, SEQ_MAX, f"events[{index}] seq")
            _checked_int(item[1], DELTA_MIN, DELTA_MAX, f"events[{index}] delta")
            if previous is not None and seq != previous + 1:
                raise ValueError(f"events[{index}] seq {seq} does not follow {previous}")
            previous = seq
        self._events = events
        self.first = int(events[0][0])
        self.final = previous

    def after(self, last, limit):
        last = _checked_int(last, CURSOR_MIN, SEQ_MAX, "last")
        limit = _checked_int(limit, REPLAY_MIN_LIMIT, REPLAY_MAX_LIMIT, "limit")
        if last > self.final:
            raise ValueError(f"last {last} is beyond the log's final seq {self.final}")
        if last < self.first - 1:
            raise ResyncRequired(
                f"log starts at {self.first}; cursor {last} would miss {last + 1}"
            )
        start = last - self.first + 1  # index of seq last + 1
        return self._events[start:start + limit]  # a new list


def replay(events, last, limit):
    """Step 4: the next ``limit`` events after ``last``, or ResyncRequired."""
    # Every ValueError check (the log, last, limit) happens before the
    # ResyncRequired decision.
    return EventLog(events).after(last, limit)


# --------------------------------------------------------------------------
# Step 5
# --------------------------------------------------------------------------

def consume_line(con, line, fault=None):
    """Step 5: parse, commit, and only then hand back the ACK."""
    frame = Frame.parse(line)
    apply_event(con, frame.seq, frame.delta, fault)
    return frame.ack()


# --------------------------------------------------------------------------
# Steps 6-7: the TCP session
# --------------------------------------------------------------------------

def _abort(writer):
    try:
        writer.transport.abort()
    except Exception:
        pass


async def _reclaim(writer, seconds):
    """close(), then wait_closed() bounded by ``seconds``; abort on failure.

    Returns None when the connection is dealt with (closed, or aborted after
    a TimeoutError / ConnectionError), otherwise the exception the closing
    raised (after aborting), for the caller to raise if it has no error of
    its own.
    """
    try:
        writer.close()
        async with asyncio.timeout(seconds):
            await writer.wait_closed()
    except (TimeoutError, ConnectionError):
        _abort(writer)
        return None
    except BaseException as exc:  # cancellation, another OSError, ...
        _abort(writer)
        return exc
    return None


class Session:
    """One consuming session over an open (reader, writer) pair."""

    def __init__(self, reader, writer, con, timeout, before_ack=None):
        self.reader = reader
        self.writer = writer
        self.con = con
        self.before_ack = before_ack
        try:
            self.seconds = _checked_timeout(timeout)
            self.timeout_error = None
        except ValueError as exc:
            self.seconds = INVALID_TIMEOUT_CLOSE_WAIT
            self.timeout_error = exc

    async def run(self):
        try:
            return await self._serve()
        finally:
            closing_error = await _reclaim(self.writer, self.seconds)
            if closing_error is not None:
                raise closing_error

    async def _serve(self):
        if self.timeout_error is not None:
            raise self.timeout_error
        while True:
            line = await self._read_line()
            if isinstance(line, bytes) and not line:  # EOF
                return state(self.con)
            # Anything else, a cut-off last line included, goes to the
            # parser; a parse error propagates with nothing committed.
            ack = consume_line(self.con, line)
            await self._before_ack(int(ack[4:-1]))
            self.writer.write(ack)
            async with asyncio.timeout(self.seconds):
                await self.writer.drain()

    async def _read_line(self):
        try:
            async with asyncio.timeout(self.seconds):
                return await self.reader.readline()
        except asyncio.LimitOverrunError as exc:
            # StreamReader.readline already turns this into ValueError;
            # keep that contract for readers that do not.
            raise ValueError(str(exc)) from exc

    async def _before_ack(self, seq):
        if self.before_ack is None:
            return
        outcome = self.before_ack(seq)
        if inspect.isawaitable(outcome):
            await outcome  # no bound of the session's


async def consume_session(reader, writer, con, timeout, before_ack=None):
    """Step 6: ACK each committed line; return ``state(con)`` at EOF."""
    return await Session(reader, writer, con, timeout, before_ack).run()


async def run_client(host, port, path, timeout, before_ack=None):
    """Step 7: resume from the store at ``path`` over one TCP connection."""
    seconds = _checked_timeout(timeout)  # before anything is opened
    con = open_store(path)
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_connection(host, port, limit=64)
        try:
            last = state(con)[0]
            writer.write(b"RESUME %d\n" % last)
            async with asyncio.timeout(seconds):
                await writer.drain()
        except BaseException:
            await _reclaim(writer, seconds)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()
