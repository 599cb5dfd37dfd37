"""Exactly-once effect over an at-least-once TCP feed (stdlib only, 3.11+).

Small predicates composed into validators; SQL in one immediate
transaction per event; the ACK leaves only after the commit.

Durability: rollback-journal (DELETE) mode with ``synchronous=EXTRA``:
the commit point -- the journal's unlink -- is followed by an fsync of the
directory, so a written ACK survives a power cut.

Bounded waits use ``asyncio.wait_for``.  On 3.11 it can return a result
while swallowing a cancellation that arrived as the inner awaitable
finished (gh-86296); ``_bounded`` notices that from ``Task.cancelling()``
and re-raises ``CancelledError``.
"""

import asyncio
import inspect
import itertools
import math
import sqlite3

__all__ = (
    "parse_line", "open_store", "state", "Gap", "Conflict", "apply_event",
    "ResyncRequired", "replay", "consume_line", "consume_session", "run_client",
)


class Gap(Exception):
    pass


class Conflict(Exception):
    pass


class ResyncRequired(Exception):
    pass


# ---------------------------------------------------------------- predicates

_DIGITS = frozenset("0123456789")  # ASCII only; str.isdigit is not


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def between(lo, hi):
    return lambda v: is_int(v) and lo <= v <= hi  # no `in range(...)`: slow for int subclasses


is_seq = between(0, 2_147_483_647)
is_delta = between(-1000, 1000)
is_cursor = between(-1, 2_147_483_647)
is_limit = between(1, 16)


def is_event(item):
    return isinstance(item, tuple) and len(item) == 2 and is_seq(item[0]) and is_delta(item[1])


def is_consecutive(events):
    return all(b[0] == a[0] + 1 for a, b in itertools.pairwise(events))


def is_log(events):
    return (isinstance(events, list)
            and 1 <= len(events) <= 128
            and all(map(is_event, events))
            and is_consecutive(events))


def is_digits(s):
    return s != "" and all(c in _DIGITS for c in s)


def is_natural(s):
    """Canonical unsigned decimal: ``0`` or no leading zero."""
    return is_digits(s) and (s == "0" or s[0] != "0")


def is_signed(s):
    """Canonical decimal with an optional ``-``, which ``0`` may not take."""
    return (s != "-0" and is_natural(s[1:])) if s.startswith("-") else is_natural(s)


def is_eof(line):
    return isinstance(line, bytes) and not line  # readline() gives b"" at EOF


def seconds_of(timeout):
    """A valid timeout as a float, or None."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        return None
    try:
        s = float(timeout)
    except OverflowError:
        return None
    return s if 0 < s < math.inf else None  # NaN fails both comparisons


def _require(ok, message):
    if not ok:
        raise ValueError(message)


# ------------------------------------------------------------------- step 1

def parse_line(line):
    _require(isinstance(line, bytes), "frame must be bytes")
    _require(len(line) <= 64, "frame longer than 64 bytes")
    # a complete frame before anything is stripped
    _require(line.endswith(b"\n"), "no final newline (cut-off frame)")
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        raise ValueError("frame is not ASCII") from None
    body = text[:-1]
    fields = body.split(" ")
    _require("\n" not in body, "more than one line")
    _require(len(fields) == 3 and fields[0] == "EVENT", "not an EVENT frame")
    _require(is_natural(fields[1]) and is_signed(fields[2]), "non-canonical number")
    seq, delta = int(fields[1]), int(fields[2])
    _require(is_seq(seq) and is_delta(delta), "number out of range")
    return seq, delta


# ------------------------------------------------------------------- step 2

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS checkpoint(id INTEGER PRIMARY KEY CHECK(id=1),"
    " last INTEGER NOT NULL, total INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger(seq INTEGER PRIMARY KEY, delta INTEGER NOT NULL)",
)


def _initialise(con):
    con.execute("PRAGMA synchronous=EXTRA")
    con.execute("PRAGMA journal_mode=DELETE").fetchall()
    for sql in _SCHEMA:
        con.execute(sql)
    if not con.execute("SELECT count(*) FROM checkpoint WHERE id=1").fetchone()[0]:
        con.execute("INSERT OR IGNORE INTO checkpoint(id, last, total) VALUES (1, -1, 0)")


def open_store(path):
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        _initialise(con)
    except BaseException:
        try:
            con.close()
        except Exception:
            pass  # the initialisation error is the one to report
        raise
    return con


def state(con):
    last, total = con.execute("SELECT last, total FROM checkpoint WHERE id=1").fetchone()
    return last, total


# ------------------------------------------------------------------- step 3

def _settle(con, seq, delta, fault):
    """Runs inside BEGIN IMMEDIATE; returns the outcome or raises."""
    (last,) = con.execute("SELECT last FROM checkpoint WHERE id=1").fetchone()
    if seq > last + 1:
        raise Gap(f"expected seq {last + 1}, got {seq}")
    if seq <= last:
        row = con.execute("SELECT delta FROM ledger WHERE seq=?", (seq,)).fetchone()
        if row is None or row[0] != delta:
            raise Conflict(f"seq {seq} differs from (or is absent in) the ledger")
        return False
    con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
    con.execute("UPDATE checkpoint SET total = total + ? WHERE id=1", (delta,))
    if fault is not None:
        fault()
    con.execute("UPDATE checkpoint SET last = ? WHERE id=1", (seq,))
    return True


def apply_event(con, seq, delta, fault=None):
    _require(is_seq(seq) and is_delta(delta), "seq/delta must be ints in range")
    seq, delta = int(seq), int(delta)
    try:
        con.execute("BEGIN IMMEDIATE")
        applied = _settle(con, seq, delta, fault)
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            try:
                con.execute("ROLLBACK")
            except Exception:
                pass  # the original error is what propagates
        raise
    return applied


# ------------------------------------------------------------------- step 4

def replay(events, last, limit):
    _require(is_log(events), "events must be a list of 1-128 consecutive (seq, delta) tuples")
    _require(is_cursor(last) and is_limit(limit), "bad last or limit")
    first, final = events[0][0], events[-1][0]
    _require(last <= final, "last is beyond the log")
    if last < first - 1:
        raise ResyncRequired(f"log starts at {first}; {last + 1} is gone")
    start = last - first + 1
    return list(itertools.islice(events, start, start + limit))


# ------------------------------------------------------------------- step 5

def consume_line(con, line, fault=None):
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq


# --------------------------------------------------------------- steps 6-7

async def _bounded(seconds, awaitable, salvage=None):
    """``wait_for`` that never loses a cancellation (gh-86296).

    If the task was cancelled while ``awaitable`` finished, 3.11's
    ``wait_for`` returns the result anyway.  Detect that, hand the result to
    ``salvage`` (so that nothing it holds leaks), and raise CancelledError.
    """
    task = asyncio.current_task()
    pending = task.cancelling()
    result = await asyncio.wait_for(awaitable, seconds)
    if task.cancelling() > pending:
        if salvage is not None:
            await salvage(result)
        raise asyncio.CancelledError()
    return result


def _abort(writer):
    try:
        writer.transport.abort()
    except Exception:
        pass


async def _reclaim(writer, seconds):
    """close() + bounded wait_closed(); the exception to surface, or None."""
    try:
        writer.close()
        await _bounded(seconds, writer.wait_closed())
        return None
    except (TimeoutError, ConnectionError):
        _abort(writer)
        return None
    except BaseException as exc:
        _abort(writer)
        return exc


async def _guarded(writer, seconds, work):
    """Run ``work()``; reclaim ``writer`` on every path.

    The work's own error always wins; a closing error surfaces only when the
    work itself succeeded (and TimeoutError/ConnectionError never do).
    """
    try:
        result = await work()
    except BaseException:
        await _reclaim(writer, seconds)
        raise
    trouble = await _reclaim(writer, seconds)
    if trouble is not None:
        raise trouble
    return result


async def _readline(reader, seconds):
    try:
        return await _bounded(seconds, reader.readline())
    except asyncio.LimitOverrunError as exc:  # real StreamReaders say ValueError already
        raise ValueError(str(exc)) from exc


async def _hook(before_ack, seq):
    if before_ack is not None:
        outcome = before_ack(seq)
        if inspect.isawaitable(outcome):
            await outcome


async def _pump(reader, writer, con, seconds, before_ack):
    while not is_eof(line := await _readline(reader, seconds)):
        ack = consume_line(con, line)           # raises: nothing written
        await _hook(before_ack, parse_line(line)[0])
        writer.write(ack)
        await _bounded(seconds, writer.drain())
    return state(con)


async def consume_session(reader, writer, con, timeout, before_ack=None):
    seconds = seconds_of(timeout)

    async def work():
        _require(seconds is not None, "timeout must be a positive finite int or float")
        return await _pump(reader, writer, con, seconds, before_ack)

    return await _guarded(writer, seconds or 1.0, work)


async def run_client(host, port, path, timeout, before_ack=None):
    seconds = seconds_of(timeout)
    _require(seconds is not None, "timeout must be a positive finite int or float")
    con = open_store(path)
    try:
        reader, writer = await _bounded(
            seconds,
            asyncio.open_connection(host, port, limit=64),
            salvage=lambda pair: _reclaim(pair[1], seconds),
        )
        try:
            writer.write(b"RESUME %d\n" % state(con)[0])
            await _bounded(seconds, writer.drain())
        except BaseException:
            await _reclaim(writer, seconds)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()
