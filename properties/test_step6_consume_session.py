"""Step 6, ``consume_session``: ACK only what is committed, and reclaim the connection on every path.

Over real loopback sockets: the real publisher (or a ``peers.Peer`` with odd
behaviour) on one side; on the other a reader and writer made by
``asyncio.open_connection(..., limit=64)``, as run_client makes them, after
the test has sent ``RESUME -1``; a fresh store file per example. Claims, on
every path (EOF; a malformed, cut-off or over-long line; a gap; a conflict;
before_ack raising; a read or drain timeout; cancellation at any await
point; a closing wait that hangs or fails):

* at EOF ``state(con)`` is returned; otherwise the error that ended the
  session propagates (the very object, where the test raised it), and a
  closing error never replaces it (decision 11);
* nothing is ACKed that is not committed: the ACKs the publisher read are
  the model's, in order (all of them when the session ended at EOF, a prefix
  otherwise), and the store (read through a connection of the test's own)
  holds exactly the model's rows;
* ``before_ack(seq)`` is called after every commit, duplicates included, and
  an awaitable it returns is awaited before the ACK is written (decision 8);
* the connection is reclaimed within the bounds: the client's socket is
  closed (by ``abort()`` when the closing wait hangs or fails) and the peer
  sees the end; the DB connection stays open, with no transaction;
* an invalid timeout raises ValueError, after a close bounded by 1 s
  (decision 10).

The tests are ``async def``, run by pytest-asyncio (``@given`` on the async
test: all examples of one test share its event loop), and every example is
checked by ``resume.testing.hygiene.each_example_clean``: one that leaves a
task running or a descriptor open (a socket, a store file) fails.
"""

import asyncio
import dataclasses
import errno

import pytest
from hypothesis import event, example, given, note, settings
from hypothesis import strategies as st

from resume.testing import domains, leaks, model, peers, store, tasks
from resume.testing import strategies as sts
from resume.testing.hygiene import each_example_clean
from resume.testing.tasks import CANCELLED, HUNG, RAISED, RETURNED, cancel_after, model_outcome, outcome_of, outcome_within, until
from resume.publisher import Publisher

HOST = peers.HOST
LIMIT = model.READER_LIMIT  # the reader's limit, as run_client sets it
RESUME = b"RESUME -1\n"
TIMEOUT = 5.0  # where no timeout is the point: nothing should ever wait this long
SHORT = 0.1  # where a timeout is the point (each such test waits it out once or twice)
SLACK = 1.0  # added to every upper bound: the machine is shared and loaded
PEER_ENDS_WITHIN = 1.0  # the peer must see the end of the connection this soon


class HookFailure(Exception):
    """Raised by a test's before_ack; the session must let this very object through."""


# ------------------------------------------------------------------ helpers


async def connect(port):
    """A client connection as run_client makes it, with ``RESUME -1`` already sent."""
    reader, writer = await asyncio.open_connection(HOST, port, limit=LIMIT)
    writer.write(RESUME)
    await writer.drain()
    return reader, writer


async def settle(writer):
    """Close ``writer``'s socket if the implementation left it open (so that no
    ResourceWarning from this test lands in another); True if it had been closed."""
    sock = writer.get_extra_info("socket")
    closed = await leaks.socket_closed(sock, within=0.2)
    if not closed:
        writer.transport.abort()
        await asyncio.sleep(0)
    return closed


def assert_db_open(con):
    """The session left the DB connection open and no transaction behind."""
    con.execute("SELECT 1")  # sqlite3.ProgrammingError if it was closed
    assert not con.in_transaction


def acks_text(acks):
    """ACK lines as the peer read them: ``ACK 0, ACK 1``, or ``no ACK``."""
    return ", ".join(ack.decode("ascii", "replace").strip() for ack in acks) or "no ACK"


def assert_is_prefix(seen, expected):
    if seen != expected[: len(seen)]:
        model.differs("the ACKs the client wrote", f"{acks_text(expected)} at most, in order", acks_text(seen))


# ------------------------------------------------- the stream, as a scenario

# Near-misses of a good frame: one line each, final LF, no other LF, under 64
# bytes. (Over-long and cut-off lines are endings of their own below.)
NEAR_MISSES = {
    "leading zero": lambda seq, delta: b"EVENT 0%d %d\n" % (seq, delta),
    "plus sign": lambda seq, delta: b"EVENT +%d %d\n" % (seq, delta),
    "minus zero": lambda seq, delta: b"EVENT %d -0\n" % seq,
    "CRLF": lambda seq, delta: b"EVENT %d %d\r\n" % (seq, delta),
    "lower case": lambda seq, delta: b"event %d %d\n" % (seq, delta),
    "double space": lambda seq, delta: b"EVENT  %d %d\n" % (seq, delta),
    "tab": lambda seq, delta: b"EVENT\t%d %d\n" % (seq, delta),
    "trailing space": lambda seq, delta: b"EVENT %d %d \n" % (seq, delta),
    "missing field": lambda seq, delta: b"EVENT %d\n" % seq,
    "delta out of range": lambda seq, delta: b"EVENT %d 1001\n" % seq,
    "non-ASCII digit": lambda seq, delta: b"EVENT %d \xd9\xa1\n" % seq,
    "NUL": lambda seq, delta: b"EVENT %d %d\0\n" % (seq, delta),
    "empty line": lambda seq, delta: b"\n",
}

ENDINGS = ["EOF", "malformed", "cut off", "over-long", "gap", "conflict"]  # what the stream ends with


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One session: good lines, then an ending; a before_ack; how the closing wait behaves."""

    events: tuple  # (seq, delta) of each good line: the next new event, or a duplicate
    ending: str  # one of ENDINGS
    last_line: bytes  # the bad line the ending sends (b"" for EOF)
    hook: str | None  # None (no before_ack), "plain" or "awaitable"
    hook_fails_at: int | None  # the before_ack call (0-based) that raises HookFailure
    close: str  # "real", "ConnectionError" or "other error" (a FAKE closing wait)

    def exchange(self):
        """The session as lines, as a learner would write it down: the call, what the server sends, the hooks."""
        hook = {None: "", "plain": ", before_ack", "awaitable": ", before_ack"}[self.hook]
        lines = [f"consume_session(reader, writer, con, {TIMEOUT}{hook}) on a new store, where"]
        lines += [f"  server: EVENT {seq} {delta}" for seq, delta in self.events]
        if self.ending == "over-long":
            lines.append(f"  server: {len(self.last_line)} bytes without a LF in the first {LIMIT} "
                         f"({self.last_line[:16]!r}...)")
        elif self.ending == "cut off":
            lines.append(f"  server: {self.last_line!r} (no LF), then EOF")
        elif self.last_line:
            lines.append(f"  server: {self.last_line.decode('ascii', 'backslashreplace').rstrip(chr(10))!r}"
                         if self.ending == "malformed" else f"  server: {self.last_line.decode().strip()}")
        if self.ending != "cut off":
            lines.append("  server: EOF")
        if self.hook is not None:
            kind = "returns an awaitable" if self.hook == "awaitable" else "is a plain function"
            fails = "" if self.hook_fails_at is None else (
                f"; its call number {self.hook_fails_at + 1} raises HookFailure")
            lines.append(f"  before_ack {kind}{fails}")
        if self.close != "real":
            error = "ConnectionResetError" if self.close == "ConnectionError" else "OSError(EIO)"
            lines.append(f"  the closing wait (writer.wait_closed()) raises {error}")
        return lines

    def waited(self):
        """How many leading events the publisher sends stop-and-wait (the rest goes raw)."""
        count = 0
        while count < len(self.events) and self.events[count][0] == count:
            count += 1
        return count


@st.composite
def scenarios(draw):
    events, applied = [], []  # applied: the delta of each new seq, in order
    for _ in range(draw(st.integers(0, 5))):
        if applied and draw(st.booleans()):  # a duplicate, with the same content
            seq = draw(st.integers(0, len(applied) - 1))
            events.append((seq, applied[seq]))
        else:
            delta = draw(sts.deltas())
            events.append((len(applied), delta))
            applied.append(delta)
    next_seq, delta = len(applied), draw(sts.deltas())
    good = sts.frame(next_seq, delta)
    ending = draw(st.sampled_from([k for k in ENDINGS if applied or k != "conflict"]))
    if ending == "malformed":
        last_line = NEAR_MISSES[draw(st.sampled_from(sorted(NEAR_MISSES)))](next_seq, delta)
    elif ending == "cut off":  # EOF in the middle of a frame (decision 9)
        last_line = good[: draw(st.integers(1, len(good) - 1))]
    elif ending == "over-long":  # 65 bytes or more with the LF: past the reader's limit
        body = good[:-1]
        last_line = body + b" " * draw(st.integers(LIMIT - len(body), 200)) + b"\n"
    elif ending == "gap":
        last_line = sts.frame(next_seq + draw(st.integers(1, 3)), delta)
    elif ending == "conflict":
        seq = draw(st.integers(0, len(applied) - 1))
        last_line = sts.frame(seq, draw(sts.deltas().filter(lambda d: d != applied[seq])))
    else:
        last_line = b""
    hook = draw(st.sampled_from([None, "plain", "awaitable"]))
    fails_at = None
    if hook is not None and events:
        fails_at = draw(st.none() | st.integers(0, len(events) - 1))
    close = draw(st.sampled_from(["real", "ConnectionError", "other error"]))
    return Scenario(tuple(events), ending, last_line, hook, fails_at, close)


def hook_of(scenario, error):
    """The scenario's before_ack (None, plain or awaitable; raising ``error`` at one call), and its records."""
    calls, awaited = [], []

    async def acknowledge_later(seq, fail):
        await asyncio.sleep(0)
        awaited.append(seq)
        if fail:
            raise error

    def before_ack(seq):
        calls.append(seq)
        fail = len(calls) - 1 == scenario.hook_fails_at
        if scenario.hook == "awaitable":
            return acknowledge_later(seq, fail)
        if fail:
            raise error
        return None

    return (None if scenario.hook is None else before_ack), calls, awaited


async def expected(scenario, hook_error):
    """The model's session for the scenario's stream: ``(Session, the store after it)``."""
    store_after = model.Store()
    lines = [model.frame(*e) for e in scenario.events]
    ending = "ValueError" if scenario.ending == "over-long" else None  # past the reader's limit (decision 9)
    if scenario.ending not in ("EOF", "over-long"):
        lines.append(scenario.last_line)
    hook, _, _ = hook_of(scenario, hook_error)
    return await store_after.session(lines, ending, TIMEOUT, hook), store_after


def plan_of(scenario):
    """The publisher's log and Plan knobs for the scenario."""
    waited = scenario.waited()
    log = list(scenario.events[:waited])
    raw = b"".join(sts.frame(*e) for e in scenario.events[waited:]) + scenario.last_line
    return log, (dict(stop_after=waited, raw=raw) if raw else {})


# ------------------------------------------------- the property over scenarios

CLOSE_ERRORS = {
    "ConnectionError": lambda: ConnectionResetError(errno.ECONNRESET, "closing wait: reset (fake)"),
    "other error": lambda: OSError(errno.EIO, "closing wait: I/O error (fake)"),
}


@pytest.mark.asyncio
@given(scenarios())
@example(Scenario(((0, 5), (1, 7)), "EOF", b"", "plain", None, "real"))
@example(Scenario(((0, 5), (0, 5)), "EOF", b"", "awaitable", None, "real"))  # a duplicate is ACKed
@example(Scenario(((0, 5),), "malformed", b"EVENT 01 5\n", None, None, "real"))
@example(Scenario(((0, 5),), "cut off", b"EVENT 1", None, None, "real"))
@example(Scenario(((0, 5),), "over-long", b"EVENT 1 5" + b" " * 200 + b"\n", None, None, "real"))
@example(Scenario(((0, 5),), "gap", b"EVENT 2 5\n", None, None, "real"))
@example(Scenario(((0, 5),), "conflict", b"EVENT 0 6\n", None, None, "real"))
@example(Scenario(((0, 5), (1, 7)), "EOF", b"", "plain", 1, "real"))  # committed, never ACKed
@example(Scenario(((0, 5), (1, 7)), "EOF", b"", "awaitable", 1, "real"))
@example(Scenario(((0, 5), (1, 7), (1, 7)), "EOF", b"", "awaitable", 2, "real"))  # a duplicate's hook
@example(Scenario(((0, 5),), "EOF", b"", None, None, "ConnectionError"))
@example(Scenario(((0, 5),), "EOF", b"", None, None, "other error"))
@example(Scenario(((0, 5),), "gap", b"EVENT 2 5\n", None, None, "other error"))
@each_example_clean
async def test_a_session_acks_only_commits_and_reclaims_the_connection_on_every_path(impl, scenario):
    event(f"ending: {scenario.ending}")
    event(f"before_ack: {scenario.hook}, fails: {scenario.hook_fails_at is not None}")
    event(f"closing wait: {scenario.close}")
    hook_error = HookFailure("before_ack failed (test)")
    close_error = CLOSE_ERRORS[scenario.close]() if scenario.close != "real" else None
    predicted, store_after = await expected(scenario, hook_error)
    for line in scenario.exchange():
        note(line)
    note(f"  expected of the client: {acks_text(predicted.acks)}, then it {predicted.after_closing(close_error)}")
    with store.temp_store_path() as path:
        con = impl.open_store(path)
        try:
            seen = await play(impl, con, scenario, hook_error, close_error)
            assert_db_open(con)
            stored = store.read(path)
        finally:
            con.close()

    model.expect(seen["outcome"], predicted.after_closing(close_error), scenario.exchange()[0].split(" on a new")[0])
    if stored != store_after.snapshot():
        model.differs("the store after the session (read from another connection)",
                      f"last={store_after.last}, ledger={store_after.ledger}: exactly what was committed",
                      f"last={stored[0][0]}, ledger={stored[1]}")
    if seen["calls"] != predicted.calls:
        model.differs("the seqs before_ack was called with (after each commit, duplicates too)",
                      predicted.calls, seen["calls"])
    if scenario.hook == "awaitable" and seen["awaited"] != seen["calls"]:
        model.differs("the awaitables before_ack returned", f"all awaited: {seen['calls']}",
                      f"awaited: {seen['awaited']}")
    acks = [model.ack(seq) for seq in seen["acks"]]
    if isinstance(predicted.outcome, model.Returned):
        if acks != predicted.acks:
            model.differs("the ACKs the client wrote", acks_text(predicted.acks), acks_text(acks))
    else:
        assert_is_prefix(acks, predicted.acks)
    if not set(seen["acks"]) <= set(stored[1]):
        model.differs("the ACKs the client wrote", "an ACK only for an event in the store",
                      f"{acks_text(acks)} with the store holding seqs {sorted(stored[1])}")
    if not seen["socket closed"]:
        model.differs("the client's socket after consume_session", "closed", "never closed")
    if not seen["peer saw the end"]:
        model.differs("the server's side of the connection", "the connection ends",
                      "the server never saw it end")
    if predicted.aborts(close_error) and seen["aborts"] < 1:
        model.differs("after the closing wait failed", "writer.transport.abort() called", "no abort()")


async def play(impl, con, scenario, hook_error, close_error):
    """Run one session of the scenario against the real publisher; return what was seen."""
    hook, calls, awaited = hook_of(scenario, hook_error)
    seen = {"calls": calls, "awaited": awaited}
    log, knobs = plan_of(scenario)
    async with Publisher(log) as publisher:
        if knobs:
            publisher.plan(**knobs)
        reader, writer = await connect(publisher.port)
        session_writer = writer
        if close_error is not None:
            session_writer = peers.CloseFault(writer, close_error)
        seen["outcome"] = await model_outcome(
            impl, impl.consume_session(reader, session_writer, con, TIMEOUT, hook), TIMEOUT + SLACK)
        seen["socket closed"] = await settle(writer)
        seen["peer saw the end"] = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
        seen["acks"] = publisher.acks
        if close_error is not None:
            seen["aborts"] = session_writer.transport.aborts
    return seen


# ------------------------------------------------- cancellation anywhere


@pytest.mark.asyncio
@given(
    log=st.lists(sts.deltas(), min_size=1, max_size=4),
    hook=st.sampled_from([None, "plain", "awaitable"]),
    iterations=st.integers(1, 60),  # 0 would cancel a task that never started
)
@each_example_clean
async def test_a_session_cancelled_at_any_point_reclaims_and_leaves_a_consistent_store(impl, log, hook, iterations):
    """Cancel after ``iterations`` turns of the loop: at readline, in before_ack's
    awaitable, at a drain, in the closing wait, or after the end."""
    with store.temp_store_path() as path:
        con = impl.open_store(path)
        try:
            seen = await cancel_a_session(impl, con, log, hook, iterations)
            assert_db_open(con)
            (last, total), ledger = store.read(path)
        finally:
            con.close()
    kind, value = seen["outcome"]
    event(f"outcome: {kind}" + ("" if seen["accepted"] else " (cancelled after the end)"))

    assert kind in (CANCELLED, RETURNED), f"{kind} {value!r}"
    committed = len(ledger)
    assert ledger == dict(enumerate(log[:committed])), "the store must hold a prefix of the log"
    assert (last, total) == (committed - 1, sum(log[:committed]))
    if seen["accepted"]:
        # The cancel arrived before the end: it must propagate, even when it lands
        # as a wait completes (asyncio.wait_for on 3.11 drops it: gh-86296).
        if kind != CANCELLED:
            model.differs(f"consume_session(reader, writer, con, timeout{', before_ack' if hook else ''}) over "
                          + ", ".join(f"EVENT {seq} {delta}" for seq, delta in enumerate(log))
                          + f", its task cancelled after {iterations} turns of the event loop",
                          "the cancellation propagates (CancelledError)", tasks.describe((kind, value)))
    else:
        assert value == (len(log) - 1, sum(log)) and committed == len(log)
    acks = seen["acks"]
    assert acks == list(range(len(acks))) and len(acks) <= committed, f"ACKs {acks}, {committed} committed"
    if hook is not None:
        assert len(acks) <= len(seen["calls"]) <= committed, "before_ack goes between commit and ACK"
    assert seen["socket closed"], "the client's socket was not closed"
    assert seen["peer saw the end"], "the publisher never saw the connection end"


async def cancel_a_session(impl, con, log, hook, iterations):
    seen = {"calls": []}

    def before_ack(seq):
        seen["calls"].append(seq)
        return asyncio.sleep(0) if hook == "awaitable" else None

    async with Publisher(list(enumerate(log))) as publisher:
        reader, writer = await connect(publisher.port)
        task = asyncio.create_task(
            impl.consume_session(reader, writer, con, TIMEOUT, None if hook is None else before_ack)
        )
        seen["accepted"] = await cancel_after(task, iterations)
        seen["outcome"] = await outcome_of(task, TIMEOUT + SLACK)
        seen["socket closed"] = await settle(writer)
        seen["peer saw the end"] = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
        seen["acks"] = publisher.acks
    return seen


# ------------------------------------------------- each await point, for sure


async def run_with_store(impl, scenario_coroutine):
    """Await ``scenario_coroutine(con)`` with a fresh store; return (its result, the store as read after)."""
    with store.temp_store_path() as path:
        con = impl.open_store(path)
        try:
            result = await scenario_coroutine(con)
            assert_db_open(con)
            return result, store.read(path)
        finally:
            con.close()


@pytest.mark.asyncio
@each_example_clean
async def test_a_silent_publisher_ends_the_session_with_TimeoutError_within_the_timeout(impl):
    async def scenario(con):
        async with Publisher([(0, 5)]) as publisher:
            publisher.plan(silent=True)
            reader, writer = await connect(publisher.port)
            start = asyncio.get_running_loop().time()
            outcome = await outcome_within(impl.consume_session(reader, writer, con, SHORT), SHORT + SLACK)
            elapsed = asyncio.get_running_loop().time() - start
            closed = await settle(writer)
            ended = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
        return outcome, elapsed, closed, ended

    (outcome, elapsed, closed, ended), stored = await run_with_store(impl, scenario)
    tasks.expect_raised(outcome, TimeoutError, f"consume_session(reader, writer, con, {SHORT}) with a server that sends nothing")
    assert SHORT * 0.9 <= elapsed < SHORT + SLACK, f"{elapsed:.2f} s for a {SHORT} s timeout"
    assert closed and ended, "the connection was not reclaimed"
    assert stored == ((-1, 0), {})


@pytest.mark.asyncio
@each_example_clean
async def test_a_session_cancelled_while_reading_propagates_the_cancellation_and_reclaims(impl):
    async def scenario(con):
        async with Publisher([(0, 5)]) as publisher:
            publisher.plan(silent=True)
            reader, writer = await connect(publisher.port)
            task = asyncio.create_task(impl.consume_session(reader, writer, con, TIMEOUT))
            await asyncio.sleep(0.05)  # the session is waiting for a line that never comes
            task.cancel()
            outcome = await outcome_of(task, SLACK)
            closed = await settle(writer)
            ended = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
        return outcome, closed, ended

    (outcome, closed, ended), stored = await run_with_store(impl, scenario)
    assert outcome == (CANCELLED, None)
    assert closed and ended, "the connection was not reclaimed"
    assert stored == ((-1, 0), {})


@pytest.mark.asyncio
@each_example_clean
async def test_a_session_cancelled_in_before_acks_awaitable_commits_but_never_acks(impl):
    async def scenario(con):
        loop = asyncio.get_running_loop()
        blocker, called = loop.create_future(), asyncio.Event()

        def before_ack(seq):
            called.set()
            return blocker  # never completes: the session waits here until cancelled

        async with Publisher([(0, 5), (1, 7)]) as publisher:
            reader, writer = await connect(publisher.port)
            task = asyncio.create_task(impl.consume_session(reader, writer, con, TIMEOUT, before_ack))
            await until(called.is_set, task, TIMEOUT)
            await asyncio.sleep(0.05)  # an ACK written too early would reach the publisher now
            task.cancel()
            outcome = await outcome_of(task, SLACK)
            closed = await settle(writer)
            ended = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
        return outcome, blocker.cancelled(), closed and ended, publisher.acks

    (outcome, awaited, closed, acks), stored = await run_with_store(impl, scenario)
    assert outcome == (CANCELLED, None)
    assert awaited, "the awaitable before_ack returned was not awaited (its cancellation never reached it)"
    assert acks == [], "ACK written before before_ack's awaitable completed"
    assert stored == ((0, 5), {0: 5})
    assert closed


async def blocked_drain_session(impl, con, cancel_in_before_ack):
    """A stalled peer sends two events and never reads: the first ACK's drain blocks
    (so event 1 is never even read: a session that skipped the drain would commit it)."""
    async with peers.Peer(b"EVENT 0 5\nEVENT 1 7\n", eof=False, stall=True) as peer:
        reader, writer = await asyncio.open_connection(HOST, peer.port, limit=LIMIT)
        writer.write(RESUME)
        await peers.stuff_write_buffer(writer)
        task = None

        def before_ack(seq):
            if cancel_in_before_ack:
                task.cancel()  # arrives at the session's next await: the blocked drain

        start = asyncio.get_running_loop().time()
        task = asyncio.create_task(impl.consume_session(reader, writer, con, SHORT, before_ack))
        outcome = await outcome_of(task, 2 * SHORT + SLACK)
        elapsed = asyncio.get_running_loop().time() - start
        # The buffer never empties, so only abort() closes the socket now.
        closed = await leaks.socket_closed(writer.get_extra_info("socket"), within=0.1)
        await settle(writer)
    return outcome, elapsed, closed


@pytest.mark.asyncio
@each_example_clean
async def test_a_blocked_drain_times_out_and_the_hanging_close_is_aborted(impl):
    (outcome, elapsed, closed), stored = await run_with_store(
        impl, lambda con: blocked_drain_session(impl, con, cancel_in_before_ack=False)
    )
    tasks.expect_raised(outcome, TimeoutError, "consume_session with a drain that never ends")
    assert elapsed < 2 * SHORT + SLACK, f"{elapsed:.2f} s: the drain and the closing wait are each bounded"
    assert closed, "a closing wait that timed out must be followed by abort()"
    assert stored == ((0, 5), {0: 5})


@pytest.mark.asyncio
@each_example_clean
async def test_a_session_cancelled_at_a_blocked_drain_propagates_and_aborts(impl):
    (outcome, elapsed, closed), stored = await run_with_store(
        impl, lambda con: blocked_drain_session(impl, con, cancel_in_before_ack=True)
    )
    assert outcome == (CANCELLED, None)
    assert elapsed < SHORT + SLACK
    assert closed, "a closing wait that timed out must be followed by abort()"
    assert stored == ((0, 5), {0: 5})


@pytest.mark.asyncio
@each_example_clean
async def test_a_closing_wait_that_hangs_on_a_real_socket_is_aborted_and_the_state_returned(impl):
    async def scenario(con):
        async with peers.Peer(b"", eof=True, stall=True) as peer:  # EOF at once, never reads
            reader, writer = await asyncio.open_connection(HOST, peer.port, limit=LIMIT)
            writer.write(RESUME)
            await peers.stuff_write_buffer(writer)
            start = asyncio.get_running_loop().time()
            outcome = await outcome_within(impl.consume_session(reader, writer, con, SHORT), SHORT + SLACK)
            elapsed = asyncio.get_running_loop().time() - start
            closed = await leaks.socket_closed(writer.get_extra_info("socket"), within=0.1)
            await settle(writer)
        return outcome, elapsed, closed

    (outcome, elapsed, closed), _ = await run_with_store(impl, scenario)
    assert outcome == (RETURNED, (-1, 0))
    assert elapsed < SHORT + SLACK
    assert closed, "a closing wait that timed out must be followed by abort()"


@pytest.mark.asyncio
@pytest.mark.parametrize("cancelled", [False, True], ids=["hangs", "cancelled-in-it"])
@pytest.mark.parametrize("path", ["EOF", "gap", "before_ack raises"])
@each_example_clean
async def test_a_closing_wait_that_hangs_is_aborted_and_the_sessions_outcome_kept(impl, path, cancelled):
    """FAKE closing wait (``peers.CloseFault``) that never ends: abort() within the
    timeout; a cancellation arriving in it does not replace the session's own error."""
    hook_error = HookFailure("before_ack failed (test)")

    def before_ack(seq):
        if path == "before_ack raises":
            raise hook_error

    async def scenario(con):
        async with Publisher([(0, 5)]) as publisher:
            if path == "gap":
                publisher.plan(raw=b"EVENT 2 5\n")
            reader, writer = await connect(publisher.port)
            fake = peers.CloseFault(writer, "hang")
            start = asyncio.get_running_loop().time()
            task = asyncio.create_task(impl.consume_session(reader, fake, con, SHORT, before_ack))
            if cancelled:
                await until(fake.entered.is_set, task, SHORT + SLACK)
                task.cancel()
            outcome = await outcome_of(task, SHORT + SLACK)
            elapsed = asyncio.get_running_loop().time() - start
            await settle(writer)
        return outcome, elapsed, fake.transport.aborts

    (outcome, elapsed, aborts), stored = await run_with_store(impl, scenario)
    kind, value = outcome
    if path == "EOF":
        assert outcome == ((CANCELLED, None) if cancelled else (RETURNED, (0, 5)))
    elif path == "gap":
        tasks.expect_raised((kind, value), impl.Gap, "consume_session whose closing wait hangs after a Gap (the session's Gap must win)")
    else:
        assert kind == RAISED and value is hook_error, f"before_ack's error must win: {outcome}"
    assert aborts >= 1, "a closing wait that hangs must be followed by abort()"
    assert elapsed < SHORT + SLACK, f"{elapsed:.2f} s"
    assert stored == ((0, 5), {0: 5})


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["EOF", "gap"])
@each_example_clean
async def test_a_slow_closing_wait_within_the_timeout_is_awaited_to_its_end(impl, path):
    """FAKE closing wait that takes SHORT seconds, well inside the timeout: the
    session waits for it to its end (a graceful close), not cut short by abort().
    Whether abort() also follows a wait that ended is left open (decision 17)."""

    async def scenario(con):
        async with Publisher([(0, 5)]) as publisher:
            if path == "gap":
                publisher.plan(raw=b"EVENT 2 5\n")
            reader, writer = await connect(publisher.port)
            fake = peers.CloseFault(writer, SHORT)
            start = asyncio.get_running_loop().time()
            outcome = await outcome_within(impl.consume_session(reader, fake, con, TIMEOUT), TIMEOUT + SLACK)
            elapsed = asyncio.get_running_loop().time() - start
            closed = await settle(writer)
        return outcome, elapsed, fake.finished, closed

    (outcome, elapsed, finished, closed), stored = await run_with_store(impl, scenario)
    kind, value = outcome
    if path == "EOF":
        assert outcome == (RETURNED, (0, 5)), outcome
    else:
        tasks.expect_raised((kind, value), impl.Gap, "consume_session ending with a Gap, its closing wait slow but within the timeout")
    if not finished:
        model.differs("consume_session whose closing wait ends within the timeout",
                      "the closing wait awaited to its end", "it was cut short (abort() before it ended)")
    assert elapsed >= SHORT * 0.9, f"{elapsed:.2f} s: the closing wait was not waited for"
    assert closed
    assert stored == ((0, 5), {0: 5})


# ------------------------------------------------- invalid timeouts


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", domains.INVALID_TIMEOUT_CLASSES)
@given(data=st.data())
@settings(max_examples=max(3, settings.default.max_examples // 5))  # most classes hold a few values
@each_example_clean
async def test_an_invalid_timeout_raises_ValueError_after_reclaiming_the_connection(impl, kind, data):
    timeout = data.draw(domains.timeouts(kind), label="timeout")

    async def scenario(con):
        async with Publisher([(0, 5)]) as publisher:
            reader, writer = await connect(publisher.port)
            outcome = await outcome_within(impl.consume_session(reader, writer, con, timeout), 1.0 + SLACK)
            closed = await settle(writer)
            ended = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
        return outcome, closed, ended, publisher.acks

    (outcome, closed, ended, acks), stored = await run_with_store(impl, scenario)
    tasks.expect_raised(outcome, ValueError, f"consume_session(reader, writer, con, {timeout!r})")
    assert closed and ended, "the connection must be reclaimed before ValueError"
    assert acks == [] and stored == ((-1, 0), {}), "nothing may be consumed with an invalid timeout"


@pytest.mark.asyncio
@each_example_clean
async def test_with_an_invalid_timeout_the_closing_wait_is_bounded_by_one_second(impl):
    """FAKE closing waits (``peers.CloseFault``), for every listed bad timeout at once
    (one second in all): one that never ends is aborted within the second; one
    that takes SHORT s, well inside it, is awaited to its end (a bound of
    nothing, then abort, would pass the first half alone)."""

    async def one(con, port, timeout, close):
        reader, writer = await connect(port)
        fake = peers.CloseFault(writer, close)
        start = asyncio.get_running_loop().time()
        outcome = await outcome_within(impl.consume_session(reader, fake, con, timeout), 1.0 + SLACK)
        elapsed = asyncio.get_running_loop().time() - start
        await settle(writer)
        return timeout, close, outcome, elapsed, fake.transport.aborts, fake.finished

    async def scenario(con):
        async with peers.Peer(b"", eof=False) as peer:
            return await asyncio.gather(*(one(con, peer.port, t, c) for t in domains.INVALID_TIMEOUTS for c in ("hang", SHORT)))

    results, stored = await run_with_store(impl, scenario)
    for timeout, close, (kind, value), elapsed, aborts, finished in results:
        where = f"timeout={timeout!r}, closing wait {'hangs' if close == 'hang' else f'takes {close} s'}"
        tasks.expect_raised((kind, value), ValueError, f"consume_session with {where}")
        if close == "hang":
            assert aborts >= 1, f"{where}: a closing wait that hangs must be followed by abort()"
        else:
            if not finished:
                model.differs(f"consume_session with {where}", "the closing wait, inside the one-second bound, "
                              "awaited to its end", "it was cut short (abort() before it ended)")
        assert elapsed < 1.0 + SLACK, f"{where}: {elapsed:.2f} s"
    assert stored == ((-1, 0), {})


# ------------------------------------------------- any timeout, any before_ack


# One run per class of each parameter (the other drawn from its whole domain),
# so that every class is reached in every run: Hypothesis draws the first
# choices of a long list far more often than the last.
CLASSES = [("timeout", kind) for kind in domains.TIMEOUT_CLASSES] + [("before_ack", kind) for kind in domains.HOOK_KINDS]


@pytest.mark.asyncio
@pytest.mark.parametrize("parameter,kind", CLASSES, ids=[f"{p}: {k}" for p, k in CLASSES])
@settings(max_examples=max(5, settings.default.max_examples // 3))  # 5 ms an example
@given(data=st.data(), log=st.lists(st.integers(model.DELTA_MIN, model.DELTA_MAX), max_size=3), duplicate=st.booleans())
@each_example_clean
async def test_any_timeout_and_any_before_ack_do_what_the_model_predicts(impl, parameter, kind, data, log, duplicate):
    """``timeout`` and ``before_ack`` from their whole domains (``resume.testing.domains``): an
    invalid timeout, a falsy or uncallable hook, one that raises any BaseException (directly or from
    its awaitable), one that returns something else. The call is awaited in the test's own task, so
    that a KeyboardInterrupt from the hook comes back here rather than out of the event loop."""
    timeout = data.draw(domains.timeouts(kind if parameter == "timeout" else "float"), label="timeout")
    before_ack = data.draw(domains.hooks(awaitable=True, kind=kind if parameter == "before_ack" else None),
                           label="before_ack")
    lines = [model.frame(seq, delta) for seq, delta in enumerate(log)]
    lines += lines[-1:] if duplicate else []
    store_after = model.Store()
    models = domains.fresh(before_ack)
    predicted = await store_after.session(lines, None, timeout, models)
    mine = domains.fresh(before_ack)
    note(f"consume_session(reader, writer, con, {timeout!r}, {before_ack!r}) on a new store; the server sends "
         + (", ".join(line.decode().strip() for line in lines) or "nothing") + ", then EOF"
         + (f"; expected of the client: {acks_text(predicted.acks)}, before_ack called for {predicted.calls}"
            if before_ack is not None else ""))
    with store.temp_store_path() as path:
        committed_at_hook = []  # inside before_ack: is its event already visible to another connection?
        if isinstance(mine, domains.Hook):
            mine.observer = lambda seq: committed_at_hook.append(seq in store.read(path).ledger)
        con = impl.open_store(path)
        try:
            async with peers.Peer(b"".join(lines)) as peer:
                reader, writer = await asyncio.open_connection(HOST, peer.port, limit=LIMIT)
                try:
                    async with asyncio.timeout(TIMEOUT + SLACK):  # a hang fails as TimeoutError
                        got = await model.async_outcome_of(impl, impl.consume_session(reader, writer, con, timeout, mine))
                finally:
                    closed = await settle(writer)
                await peer.all_ended(PEER_ENDS_WITHIN)
                received = peer.connections[0].received if peer.connections else b""
            assert_db_open(con)
            stored = store.read(path)
        finally:
            con.close()
    model.expect(got, predicted.outcome, f"consume_session(reader, writer, con, {timeout!r}, {before_ack!r})")
    assert stored == store_after.snapshot(), "the store must hold exactly what was committed"
    if received != b"".join(predicted.acks):
        model.differs("what the server read from the client", acks_text(predicted.acks),
                      received.decode("ascii", "backslashreplace").replace("\n", " ").strip() or "no ACK")
    if isinstance(mine, domains.Hook) and mine.calls != models.calls:
        model.differs("the calls of before_ack (once per commit, before its ACK)",
                      ", ".join(f"before_ack({seq})" for (seq,) in models.calls) or "no call",
                      ", ".join(f"before_ack({', '.join(map(repr, args))})" for args in mine.calls) or "no call")
    if isinstance(mine, domains.Hook):
        assert mine.awaited == models.awaited, "an awaitable before_ack returns must be awaited before the ACK"
        assert all(committed_at_hook), "before_ack was called before its event was committed"
    assert closed, "the client's socket was not closed"
