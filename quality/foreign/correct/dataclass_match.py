"""A resumable event consumer: persistent cursor, atomic apply, replay range.

Stdlib only; needs Python 3.11 or newer.

The public API is the lab's seven steps:

    parse_line(line)                                  -> (seq, delta)
    open_store(path)                                  -> sqlite3.Connection
    state(con)                                        -> (last, total)
    apply_event(con, seq, delta, fault=None)          -> True | False
    replay(events, last, limit)                       -> list
    consume_line(con, line, fault=None)               -> b"ACK <seq>\\n"
    consume_session(reader, writer, con, timeout, before_ack=None)  (async)
    run_client(host, port, path, timeout, before_ack=None)          (async)

plus the exceptions Gap, Conflict and ResyncRequired.

Durability: the store runs in WAL mode with synchronous=FULL, so every
commit is fsync'ed to the write-ahead log (and the log's directory entry on
its first sync) before apply_event returns, hence before any ACK is sent.
"""

import asyncio
import inspect
import math
import operator
import sqlite3
import sys
from dataclasses import dataclass

if sys.version_info < (3, 11):  # asyncio.timeout; asyncio.TimeoutError is TimeoutError
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

SEQ_MIN, SEQ_MAX = 0, 2_147_483_647
DELTA_MIN, DELTA_MAX = -1000, 1000
LAST_MIN = -1
FRAME_MAX_BYTES = 64          # the final LF included
REPLAY_MAX_EVENTS = 128
REPLAY_MAX_LIMIT = 16
CLOSE_FALLBACK_SECONDS = 1.0  # closing wait when the caller's timeout is invalid

_ASCII_DIGITS = frozenset(b"0123456789")


class Gap(Exception):
    """The event is beyond last + 1: something in between is missing."""


class Conflict(Exception):
    """The event is at or below last but cannot be shown to be the one applied."""


class ResyncRequired(Exception):
    """The retained log starts after the cursor: replay cannot close the hole."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One event as it travels: a sequence number and a signed amount."""

    seq: int
    delta: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The store's single checkpoint row."""

    last: int
    total: int


# --------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------

def _checked_int(value: object, low: int, high: int, name: str) -> int:
    """Return value as a plain int if it is an int (never a bool) in [low, high]."""
    match value:
        case bool():
            raise ValueError(f"{name} must be an int, not bool")
        case int():
            number = operator.index(value)  # exact int, even for subclasses
        case _:
            raise ValueError(f"{name} must be an int, not {type(value).__name__}")
    if not low <= number <= high:
        raise ValueError(f"{name} must be in {low}..{high}, got {number}")
    return number


def _timeout_seconds(timeout: object) -> float | None:
    """The timeout as a float if it is valid (0 < t < inf, int or float, not
    bool), otherwise None."""
    match timeout:
        case bool():
            return None
        case int() | float():
            try:
                seconds = float(timeout)
            except OverflowError:  # an int too large to become a float
                return None
            if 0.0 < seconds < math.inf:  # NaN fails both comparisons
                return seconds
    return None


# --------------------------------------------------------------------------
# step 1: parse_line
# --------------------------------------------------------------------------

def _unsigned_field(field: bytes, high: int, name: str) -> int:
    if not field or not _ASCII_DIGITS.issuperset(field):
        raise ValueError(f"{name} must be ASCII digits 0-9, got {field!r}")
    if len(field) > 1 and field[0] == ord("0"):
        raise ValueError(f"{name} has a leading zero: {field!r}")
    number = int(field)
    if number > high:
        raise ValueError(f"{name} out of range: {number}")
    return number


def _signed_field(field: bytes, low: int, high: int, name: str) -> int:
    match field[:1], field[1:]:
        case b"-", magnitude:
            number = _unsigned_field(magnitude, -low, name)
            if number == 0:
                raise ValueError(f"{name} must not be -0")
            return -number
        case _:
            return _unsigned_field(field, high, name)


def parse_line(line: bytes) -> tuple[int, int]:
    """Parse one complete frame b"EVENT <seq> <delta>\\n" into (seq, delta)."""
    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes, not {type(line).__name__}")
    if len(line) > FRAME_MAX_BYTES:
        raise ValueError(f"a frame is at most {FRAME_MAX_BYTES} bytes")
    if not line.isascii():
        raise ValueError("a frame must be ASCII")
    # One complete frame first: exactly one LF, and it is the last byte.
    if not line.endswith(b"\n"):
        raise ValueError("a frame must end with LF (cut-off line?)")
    if line.count(b"\n") != 1:
        raise ValueError("a frame must be exactly one line")
    if b"\r" in line:
        raise ValueError("a frame must not contain CR")
    body = line[:-1]

    match body.split(b" "):
        case [b"EVENT", seq_field, delta_field]:
            frame = Frame(
                seq=_unsigned_field(seq_field, SEQ_MAX, "seq"),
                delta=_signed_field(delta_field, DELTA_MIN, DELTA_MAX, "delta"),
            )
        case _:
            raise ValueError(f"not an EVENT frame: {line!r}")
    return frame.seq, frame.delta


# --------------------------------------------------------------------------
# step 2: open_store / state
# --------------------------------------------------------------------------

_CREATE_CHECKPOINT = (
    "CREATE TABLE IF NOT EXISTS checkpoint("
    "id INTEGER PRIMARY KEY CHECK(id=1), "
    "last INTEGER NOT NULL, "
    "total INTEGER NOT NULL)"
)
_CREATE_LEDGER = (
    "CREATE TABLE IF NOT EXISTS ledger("
    "seq INTEGER PRIMARY KEY, "
    "delta INTEGER NOT NULL)"
)
_SEED_CHECKPOINT = "INSERT OR IGNORE INTO checkpoint(id, last, total) VALUES (1, -1, 0)"


def _roll_back_quietly(con: sqlite3.Connection) -> None:
    """End an open transaction without letting a rollback error mask the
    error that brought us here."""
    if con.in_transaction:
        try:
            con.rollback()
        except Exception:
            pass


def open_store(path) -> sqlite3.Connection:
    """Open (creating only what is missing) the checkpoint/ledger store."""
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        # Journal mode cannot change inside a transaction: set it first.
        (mode,) = con.execute("PRAGMA journal_mode=WAL").fetchone()
        # WAL + FULL syncs the log on every commit.  Should WAL be refused
        # (an exotic file system), a rollback journal needs EXTRA so that
        # the journal's unlink, its commit point, reaches the disk too.
        synchronous = "FULL" if str(mode).lower() == "wal" else "EXTRA"
        con.execute(f"PRAGMA synchronous={synchronous}")
        con.execute("BEGIN IMMEDIATE")
        con.execute(_CREATE_CHECKPOINT)
        con.execute(_CREATE_LEDGER)
        con.execute(_SEED_CHECKPOINT)
        con.execute("COMMIT")
    except BaseException:
        try:
            _roll_back_quietly(con)
        finally:
            con.close()
        raise
    return con


def _read_checkpoint(con: sqlite3.Connection) -> Checkpoint:
    (last, total) = con.execute(
        "SELECT last, total FROM checkpoint WHERE id = 1"
    ).fetchone()
    return Checkpoint(last=last, total=total)


def state(con: sqlite3.Connection) -> tuple[int, int]:
    """The store's (last, total)."""
    checkpoint = _read_checkpoint(con)
    return checkpoint.last, checkpoint.total


# --------------------------------------------------------------------------
# step 3: apply_event
# --------------------------------------------------------------------------

def _apply_in_transaction(con: sqlite3.Connection, event: Frame, fault) -> bool:
    """Decide and act inside the open IMMEDIATE transaction; commit on success."""
    checkpoint = _read_checkpoint(con)
    match event.seq - checkpoint.last:
        case 1:
            con.execute(
                "INSERT INTO ledger(seq, delta) VALUES (?, ?)",
                (event.seq, event.delta),
            )
            con.execute(
                "UPDATE checkpoint SET total = ? WHERE id = 1",
                (checkpoint.total + event.delta,),
            )
            if fault is not None:
                fault()
            con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (event.seq,))
            con.execute("COMMIT")
            return True
        case distance if distance > 1:
            raise Gap(f"seq {event.seq} after last {checkpoint.last}")
        case _:
            row = con.execute(
                "SELECT delta FROM ledger WHERE seq = ?", (event.seq,)
            ).fetchone()
            match row:
                case (recorded,) if recorded == event.delta:
                    con.execute("COMMIT")
                    return False
                case None:
                    raise Conflict(f"seq {event.seq} is at or below last but not in the ledger")
                case (recorded,):
                    raise Conflict(
                        f"seq {event.seq} was applied with delta {recorded}, not {event.delta}"
                    )


def apply_event(con: sqlite3.Connection, seq, delta, fault=None) -> bool:
    """Apply event seq once: True if newly applied, False if a faithful duplicate."""
    event = Frame(
        seq=_checked_int(seq, SEQ_MIN, SEQ_MAX, "seq"),
        delta=_checked_int(delta, DELTA_MIN, DELTA_MAX, "delta"),
    )
    try:
        # Read `last` under the write lock, so two connections cannot both
        # apply last + 1.
        con.execute("BEGIN IMMEDIATE")
        return _apply_in_transaction(con, event, fault)
    except BaseException:
        _roll_back_quietly(con)
        raise


# --------------------------------------------------------------------------
# step 4: replay
# --------------------------------------------------------------------------

def replay(events, last, limit) -> list:
    """The first `limit` retained events after cursor `last`."""
    if not isinstance(events, list):
        raise ValueError(f"events must be a list, not {type(events).__name__}")
    log = list(events)  # one snapshot; the caller's list is never touched
    if not 1 <= len(log) <= REPLAY_MAX_EVENTS:
        raise ValueError(f"events must hold 1..{REPLAY_MAX_EVENTS} items, got {len(log)}")

    seqs: list[int] = []
    for item in log:
        match item:
            case tuple([seq, delta]):
                seq = _checked_int(seq, SEQ_MIN, SEQ_MAX, "event seq")
                _checked_int(delta, DELTA_MIN, DELTA_MAX, "event delta")
            case _:
                raise ValueError(f"each event must be a (seq, delta) tuple, got {item!r}")
        match seqs:
            case [*_, previous] if seq != previous + 1:
                raise ValueError(f"seqs must be consecutive and ascending: {previous} then {seq}")
        seqs.append(seq)

    cursor = _checked_int(last, LAST_MIN, SEQ_MAX, "last")
    count = _checked_int(limit, 1, REPLAY_MAX_LIMIT, "limit")
    first, final = seqs[0], seqs[-1]
    if cursor > final:
        raise ValueError(f"last {cursor} is beyond the log's final seq {final}")

    # Every ValueError check is behind us; now the recovery decision.
    if cursor < first - 1:
        raise ResyncRequired(f"log starts at {first}; cursor {cursor} misses {cursor + 1}..{first - 1}")
    start = cursor + 1 - first
    return log[start:start + count]


# --------------------------------------------------------------------------
# step 5: consume_line
# --------------------------------------------------------------------------

def consume_line(con: sqlite3.Connection, line: bytes, fault=None) -> bytes:
    """Parse and apply one frame; the ACK to send once it is committed."""
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq


# --------------------------------------------------------------------------
# steps 6 and 7: the TCP session
# --------------------------------------------------------------------------

async def _reclaim(writer: asyncio.StreamWriter, seconds: float,
                   pending: BaseException | None) -> None:
    """close(), then wait_closed() bounded by `seconds`; abort() if that wait
    fails.  A closing error never replaces `pending`, the caller's own error;
    with nothing pending, only TimeoutError and ConnectionError are absorbed."""
    try:
        writer.close()
        async with asyncio.timeout(seconds):
            await writer.wait_closed()
    except (TimeoutError, ConnectionError):
        writer.transport.abort()
    except BaseException:
        writer.transport.abort()
        if pending is None:
            raise


async def _call_hook(hook, seq: int) -> None:
    outcome = hook(seq)
    if inspect.isawaitable(outcome):
        await outcome


async def consume_session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          con: sqlite3.Connection, timeout, before_ack=None):
    """Consume EVENT lines until EOF, ACKing each one only after its commit.

    Returns state(con) at EOF.  The connection (not the DB) is reclaimed on
    every path."""
    seconds = _timeout_seconds(timeout)
    try:
        if seconds is None:
            raise ValueError(f"timeout must be a positive finite int or float, got {timeout!r}")
        while True:
            async with asyncio.timeout(seconds):
                line = await reader.readline()
            match line:
                case b"":
                    result = state(con)
                    break
                case _:
                    ack = consume_line(con, line)
                    seq, _ = parse_line(line)
                    if before_ack is not None:
                        await _call_hook(before_ack, seq)
                    writer.write(ack)
                    async with asyncio.timeout(seconds):
                        await writer.drain()
    except GeneratorExit:
        # The coroutine is being closed: no awaiting is possible any more.
        writer.close()
        writer.transport.abort()
        raise
    except BaseException as failure:
        await _reclaim(writer, seconds or CLOSE_FALLBACK_SECONDS, failure)
        raise
    await _reclaim(writer, seconds, None)
    return result


async def run_client(host, port, path, timeout, before_ack=None):
    """Connect, RESUME from the store's cursor, and run one session."""
    seconds = _timeout_seconds(timeout)
    if seconds is None:
        raise ValueError(f"timeout must be a positive finite int or float, got {timeout!r}")
    con = open_store(path)
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_connection(host, port, limit=64)
        try:
            last, _ = state(con)
            writer.write(b"RESUME %d\n" % last)
            async with asyncio.timeout(seconds):
                await writer.drain()
        except GeneratorExit:
            writer.close()
            writer.transport.abort()
            raise
        except BaseException as failure:
            await _reclaim(writer, seconds, failure)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()
