"""Receiver that resumes from its own durable cursor (stdlib only, Python 3.11+).

Wire exchange, loopback TCP, one ASCII line per message::

    client -> server   RESUME <last>\\n     once, right after connecting
    server -> client   EVENT <seq> <delta>\\n
    client -> server   ACK <seq>\\n         only after the event is committed
    server -> client   (end of stream)     the session ends

Bounded waits go through ``asyncio.wait_for``.  On Python 3.11, ``wait_for``
can swallow a cancellation that arrives just as the awaited operation
completes (gh-86296): it returns the result and the caller never sees the
``CancelledError``.  ``_Deadline`` closes that hole by comparing the task's
``cancelling()`` count before and after the wait.
"""

import asyncio
import inspect
import math
import sqlite3
import sys

if sys.version_info < (3, 11):
    raise ImportError("Python 3.11 or newer is required")

__all__ = (
    "parse_line", "open_store", "state", "Gap", "Conflict", "apply_event",
    "ResyncRequired", "replay", "consume_line", "consume_session", "run_client",
)


class _Limits:
    """The numeric contract shared by the frame, the store and the replay log."""

    SEQ = (0, 2147483647)
    DELTA = (-1000, 1000)
    CURSOR = (-1, 2147483647)
    REPLAY_LIMIT = (1, 16)
    LOG_ITEMS = (1, 128)
    FRAME_BYTES = 64            # the terminating LF counts
    READER_LIMIT = 64           # StreamReader limit used by run_client
    FALLBACK_CLOSE = 1.0        # closing bound when the given timeout is invalid


def _int_argument(value, bounds, label):
    """An ``int`` (subclasses allowed, ``bool`` never) inside ``bounds``, as a plain int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("%s must be an int, got %s" % (label, type(value).__name__))
    plain = int.__index__(value)        # the stored value, whatever the subclass overrides
    low, high = bounds
    if plain < low or plain > high:
        raise ValueError("%s must be between %d and %d, got %d" % (label, low, high, plain))
    return plain


def _timeout_seconds(timeout):
    """A positive finite ``int``/``float`` (not ``bool``) as a plain float."""
    if isinstance(timeout, bool):
        raise ValueError("timeout cannot be a bool")
    if isinstance(timeout, float):
        seconds = float.__float__(timeout)
    elif isinstance(timeout, int):
        try:
            seconds = float(int.__index__(timeout))
        except OverflowError:
            raise ValueError("timeout does not fit in a float") from None
    else:
        raise ValueError("timeout must be an int or a float, got %s" % type(timeout).__name__)
    if math.isnan(seconds) or math.isinf(seconds) or seconds <= 0.0:
        raise ValueError("timeout must be positive and finite, got %r" % seconds)
    return seconds


# ---------------------------------------------------------------------------
# 1. frames
# ---------------------------------------------------------------------------

_LF = 0x0A
_CR = 0x0D
_SPACE = 0x20
_MINUS = 0x2D
_DIGIT_0 = 0x30
_DIGIT_9 = 0x39


class _FrameScanner:
    """Walks one frame body byte by byte; the final LF is excluded from ``end``."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data):
        self.data = data
        self.pos = 0
        self.end = len(data) - 1

    def fail(self, reason):
        raise ValueError("malformed frame (%s): %r" % (reason, self.data))

    def peek(self):
        return self.data[self.pos] if self.pos < self.end else None

    def expect(self, literal):
        for wanted in literal:
            if self.peek() != wanted:
                self.fail("expected %r at offset %d" % (bytes((wanted,)), self.pos))
            self.pos += 1

    def number(self, signed):
        negative = False
        if signed and self.peek() == _MINUS:
            negative = True
            self.pos += 1
        start = self.pos
        value = 0
        while True:
            byte = self.peek()
            if byte is None or not _DIGIT_0 <= byte <= _DIGIT_9:
                break
            value = value * 10 + (byte - _DIGIT_0)
            self.pos += 1
        width = self.pos - start
        if width == 0:
            self.fail("digits expected at offset %d" % start)
        if self.data[start] == _DIGIT_0 and (width > 1 or negative):
            self.fail("leading zero or -0")
        return -value if negative else value

    def finish(self):
        if self.pos != self.end:
            self.fail("unexpected byte at offset %d" % self.pos)


def _check_single_line(data):
    """One complete ASCII line: LF last, nowhere else, no CR, no byte above 0x7F."""
    if not data:
        raise ValueError("empty frame")
    if len(data) > _Limits.FRAME_BYTES:
        raise ValueError("frame longer than %d bytes" % _Limits.FRAME_BYTES)
    if data[len(data) - 1] != _LF:
        raise ValueError("frame is not terminated by LF (cut off?): %r" % data)
    for index in range(len(data) - 1):
        byte = data[index]
        if byte == _LF:
            raise ValueError("more than one line in a frame")
        if byte == _CR:
            raise ValueError("CR is not allowed in a frame")
        if byte > 0x7F:
            raise ValueError("non-ASCII byte in a frame")


def parse_line(line):
    """``b"EVENT <seq> <delta>\\n"`` -> ``(seq, delta)``; anything else is ValueError."""
    if not isinstance(line, bytes):
        raise ValueError("parse_line takes bytes, got %s" % type(line).__name__)
    data = bytes.__getitem__(line, slice(None))     # exact bytes, even for a subclass
    _check_single_line(data)                         # whole frame first, then its parts
    scanner = _FrameScanner(data)
    scanner.expect(b"EVENT ")
    seq = scanner.number(signed=False)
    scanner.expect(b" ")
    delta = scanner.number(signed=True)
    scanner.finish()
    if not _Limits.SEQ[0] <= seq <= _Limits.SEQ[1]:
        raise ValueError("seq out of range: %d" % seq)
    if not _Limits.DELTA[0] <= delta <= _Limits.DELTA[1]:
        raise ValueError("delta out of range: %d" % delta)
    return (seq, delta)


# ---------------------------------------------------------------------------
# 2. store
# ---------------------------------------------------------------------------

class _Schema:
    CHECKPOINT = ("CREATE TABLE IF NOT EXISTS checkpoint(id INTEGER PRIMARY KEY CHECK(id=1), "
                  "last INTEGER NOT NULL, total INTEGER NOT NULL)")
    LEDGER = "CREATE TABLE IF NOT EXISTS ledger(seq INTEGER PRIMARY KEY, delta INTEGER NOT NULL)"
    SEED = "INSERT OR IGNORE INTO checkpoint(id, last, total) VALUES (1, -1, 0)"

    @staticmethod
    def complete(conn):
        """True when both tables and the checkpoint row already exist (read only)."""
        found = {
            name for (name,) in conn.execute(
                "SELECT lower(name) FROM sqlite_master "
                "WHERE type = 'table' AND lower(name) IN ('checkpoint', 'ledger')")
        }
        if found != {"checkpoint", "ledger"}:
            return False
        return conn.execute("SELECT 1 FROM checkpoint WHERE id = 1").fetchone() is not None

    @classmethod
    def install(cls, conn):
        """Create what is missing, keeping whatever is already there, atomically."""
        with _WriteTransaction(conn):
            conn.execute(cls.CHECKPOINT)
            conn.execute(cls.LEDGER)
            conn.execute(cls.SEED)


def open_store(path):
    """A new connection to the store at ``path``, initialised if need be."""
    conn = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        # An ACK must survive a power cut.  In DELETE journal mode a commit
        # becomes durable when the journal's unlink is on disk; FULL does not
        # fsync the directory afterwards, EXTRA does.  Per connection, so it
        # is set on every open, before the first write.
        conn.execute("PRAGMA synchronous = EXTRA")
        if not _Schema.complete(conn):
            _Schema.install(conn)
    except BaseException:
        try:
            conn.close()
        except Exception:
            pass
        raise
    return conn


def state(con):
    """``(last, total)`` as stored."""
    row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("store has no checkpoint row")
    last, total = row
    return (last, total)


# ---------------------------------------------------------------------------
# 3. atomic apply
# ---------------------------------------------------------------------------

class Gap(Exception):
    """An event beyond ``last + 1``: something in between was never applied."""


class Conflict(Exception):
    """A seq at or below ``last`` whose ledger content differs or is unknown."""


class _WriteTransaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; any BaseException rolls everything back.

    The exception object itself propagates unchanged (``__exit__`` returns
    False), and no transaction is left open on any path.
    """

    __slots__ = ("conn",)

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                self._undo()
                raise
        else:
            self._undo()
        return False

    def _undo(self):
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except Exception:
                pass


def _ledger_delta(conn, seq):
    row = conn.execute("SELECT delta FROM ledger WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else row[0]


def apply_event(con, seq, delta, fault=None):
    """Apply ``seq``/``delta`` once: True when newly applied, False for a true duplicate."""
    seq = _int_argument(seq, _Limits.SEQ, "seq")
    delta = _int_argument(delta, _Limits.DELTA, "delta")
    with _WriteTransaction(con):
        (last,) = con.execute("SELECT last FROM checkpoint WHERE id = 1").fetchone()
        if seq > last + 1:
            raise Gap("expected seq %d, got %d" % (last + 1, seq))
        if seq <= last:
            stored = _ledger_delta(con, seq)
            if stored is None:
                raise Conflict("seq %d is behind the cursor but has no ledger row" % seq)
            if stored != delta:
                raise Conflict("seq %d: ledger has %d, event has %d" % (seq, stored, delta))
            return False
        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        return True


# ---------------------------------------------------------------------------
# 4. replay
# ---------------------------------------------------------------------------

class ResyncRequired(Exception):
    """The log no longer reaches back to the cursor; a full resync is needed."""


def _checked_log(events):
    """Validate the whole log; return (items, first_seq, final_seq)."""
    if not isinstance(events, list):
        raise ValueError("events must be a list, got %s" % type(events).__name__)
    items = list.copy(events)
    low, high = _Limits.LOG_ITEMS
    if not low <= len(items) <= high:
        raise ValueError("events must hold %d to %d items, got %d" % (low, high, len(items)))
    first = expected = None
    for position, item in enumerate(items):
        if not isinstance(item, tuple) or tuple.__len__(item) != 2:
            raise ValueError("events[%d] must be a (seq, delta) tuple" % position)
        seq = _int_argument(tuple.__getitem__(item, 0), _Limits.SEQ, "events[%d] seq" % position)
        _int_argument(tuple.__getitem__(item, 1), _Limits.DELTA, "events[%d] delta" % position)
        if expected is not None and seq != expected:
            raise ValueError("events[%d] has seq %d, expected %d" % (position, seq, expected))
        if first is None:
            first = seq
        expected = seq + 1
    return items, first, expected - 1


def replay(events, last, limit):
    """Up to ``limit`` events after cursor ``last``, or ResyncRequired if the log is too short."""
    items, first, final = _checked_log(events)
    cursor = _int_argument(last, _Limits.CURSOR, "last")
    size = _int_argument(limit, _Limits.REPLAY_LIMIT, "limit")
    if cursor > final:
        raise ValueError("cursor %d is past the end of the log (%d)" % (cursor, final))
    if cursor + 1 < first:
        raise ResyncRequired("log begins at %d but the cursor needs %d" % (first, cursor + 1))
    offset = cursor + 1 - first
    return items[offset:offset + size]


# ---------------------------------------------------------------------------
# 5. one line
# ---------------------------------------------------------------------------

def consume_line(con, line, fault=None):
    """Commit one frame, then hand back its ACK (also for a same-content duplicate)."""
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault=fault)
    return b"ACK " + str(seq).encode("ascii") + b"\n"


# ---------------------------------------------------------------------------
# 6-7. sessions over asyncio streams
# ---------------------------------------------------------------------------

class _CancelWatch:
    """Detects a cancellation request that asyncio.wait_for swallowed (gh-86296)."""

    __slots__ = ("task", "mark")

    def __init__(self):
        self.task = asyncio.current_task()
        self.mark = self.task.cancelling() if self.task is not None else 0

    def enforce(self, cause=None):
        """Raise CancelledError if the task was asked to cancel since construction."""
        if self.task is not None and self.task.cancelling() > self.mark:
            raise asyncio.CancelledError() from cause


class _Deadline:
    """``asyncio.wait_for`` with a fixed bound and the cancellation guard."""

    __slots__ = ("seconds",)

    def __init__(self, seconds):
        self.seconds = seconds

    async def unguarded(self, awaitable, watch):
        """Wait; re-surface a swallowed cancellation only if the wait itself failed.

        On success the caller gets the result and must call ``watch.enforce()``
        itself once the result is safely owned (e.g. a freshly opened socket).
        """
        try:
            return await asyncio.wait_for(awaitable, self.seconds)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            watch.enforce(error)
            raise

    async def wait(self, awaitable):
        watch = _CancelWatch()
        result = await self.unguarded(awaitable, watch)
        watch.enforce()
        return result


class _Peer:
    """The socket side of a session: ACK writing and reclaiming."""

    __slots__ = ("writer",)

    def __init__(self, writer):
        self.writer = writer

    async def send(self, payload, deadline):
        self.writer.write(payload)
        await deadline.wait(self.writer.drain())

    def _abort(self):
        try:
            self.writer.transport.abort()
        except Exception:
            pass

    async def reclaim(self, seconds, pending_error):
        """close(), wait_closed() bounded by ``seconds``, abort() if that fails.

        With ``pending_error`` set, the caller is already failing with it and
        every closing problem is absorbed.  Otherwise TimeoutError and
        ConnectionError are absorbed and anything else is re-raised.
        """
        try:
            self.writer.close()
            await _Deadline(seconds).wait(self.writer.wait_closed())
        except (TimeoutError, ConnectionError):
            self._abort()
        except BaseException:
            self._abort()
            if pending_error is None:
                raise


async def _call_hook(hook, seq):
    """Run ``before_ack``: a plain callable, or one returning an awaitable (unbounded)."""
    outcome = hook(seq)
    if inspect.isawaitable(outcome):
        await outcome


async def _pump(reader, peer, con, deadline, before_ack):
    """Read frames until EOF; commit each, then (hook and) ACK it."""
    while True:
        line = await deadline.wait(reader.readline())
        if not line:
            return state(con)
        ack = consume_line(con, line)
        if before_ack is not None:
            seq, _ = parse_line(line)
            await _call_hook(before_ack, seq)
        await peer.send(ack, deadline)


async def consume_session(reader, writer, con, timeout, before_ack=None):
    """Serve one connection to EOF and return ``state(con)``; the socket is always reclaimed."""
    peer = _Peer(writer)
    try:
        seconds = _timeout_seconds(timeout)
    except ValueError as bad_timeout:
        await peer.reclaim(_Limits.FALLBACK_CLOSE, bad_timeout)
        raise
    try:
        result = await _pump(reader, peer, con, _Deadline(seconds), before_ack)
    except BaseException as failure:
        await peer.reclaim(seconds, failure)
        raise
    await peer.reclaim(seconds, None)
    return result


async def _resume_over(host, port, con, seconds, timeout, before_ack):
    deadline = _Deadline(seconds)
    watch = _CancelWatch()
    reader, writer = await deadline.unguarded(
        asyncio.open_connection(host, port, limit=_Limits.READER_LIMIT), watch)
    peer = _Peer(writer)
    try:
        watch.enforce()          # a cancellation swallowed as the connect completed
        last, _ = state(con)
        await peer.send(b"RESUME %d\n" % last, deadline)
    except BaseException as failure:
        await peer.reclaim(seconds, failure)
        raise
    return await consume_session(reader, writer, con, timeout, before_ack)


async def run_client(host, port, path, timeout, before_ack=None):
    """Open the store, connect, send RESUME <last>, run the session; return ``(last, total)``."""
    seconds = _timeout_seconds(timeout)
    con = open_store(path)
    try:
        return await _resume_over(host, port, con, seconds, timeout, before_ack)
    finally:
        con.close()
