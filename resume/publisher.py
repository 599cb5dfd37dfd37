"""A real asyncio publisher: the server side of the wire protocol, on loopback.

It holds a retained log of consecutive ``(seq, delta)`` events (which may
start above 0) and serves each connection as one *session*:

1. read ``RESUME <n>`` and record it;
2. choose what to send from its retained log, starting from its OWN ACK cursor
   (the highest seq ACKed in order), not from the client's word: delivery is
   at least once, so an event the client committed but never ACKed is sent
   again as a real duplicate;
3. stop and wait: write one ``EVENT`` line, read its ``ACK`` line, advance the
   cursor, and so on until the log is exhausted;
4. end with EOF (a half-close), then read whatever ACKs still arrive until
   the client closes.

Resync: when the retained log no longer holds the event right after the ACK
cursor, the publisher sends nothing, marks
the session ``resync=True`` and ends it with EOF. A caller learns of it from
``publisher.sessions[-1].resync``; the client just sees an empty session.

Knobs for tests are per session: queue a ``Plan`` with ``publisher.plan(...)``
and the next connection follows it (drop after k events, drop before reading
an ACK, resend ACKed events, send raw bytes, stay silent, reset instead of EOF,
hold the connection open after the events).
Everything seen is recorded in ``publisher.sessions``.
"""

import asyncio
import collections
import dataclasses
import re

HOST = "127.0.0.1"
_RESUME = re.compile(rb"RESUME (-1|0|[1-9][0-9]*)\n")
_ACK = re.compile(rb"ACK (0|[1-9][0-9]*)\n")


@dataclasses.dataclass
class Plan:
    """How the publisher behaves in one session."""

    stop_after: int | None = None  # send at most this many events, then end the session
    read_last_ack: bool = True  # False: end without reading the last sent event's ACK
    resend: int = 0  # start this many events before the ACK cursor (resend ACKed events)
    raw: bytes = b""  # bytes written after the events: a bad or truncated frame, say
    silent: bool = False  # send nothing at all and wait for the client to go away
    reset: bool = False  # end with a TCP reset (abort) instead of EOF
    hold: bool = False  # after the events and raw bytes, send no EOF: wait for the client to go away


@dataclasses.dataclass
class Session:
    """What the publisher saw and did in one session."""

    plan: Plan
    resume: bytes | None = None  # the RESUME line exactly as received
    cursor: int | None = None  # its number, when it was a valid RESUME line
    sent: list = dataclasses.field(default_factory=list)  # every line written
    acks: list = dataclasses.field(default_factory=list)  # seq of every ACK read
    resync: bool = False  # the retained log no longer reaches the ACK cursor
    held: bool = False  # the plan's hold began: all sent, waiting for the client to go away
    end: str = ""  # why the session ended


class Publisher:
    """An at-least-once publisher serving ``log`` on ``127.0.0.1:<port>``.

    Use as ``async with Publisher(log) as pub:``; ``pub.port`` is the port.
    """

    def __init__(self, log=(), *, start=0, acked=None, batch=16, timeout=5.0, resume_within=None):
        self.log = [tuple(event) for event in log]
        for before, after in zip(self.log, self.log[1:]):
            if after[0] != before[0] + 1:
                raise ValueError(f"log seqs must be consecutive: {before} then {after}")
        self.next_seq = self.log[-1][0] + 1 if self.log else start
        first = self.log[0][0] if self.log else start
        self.acked = first - 1 if acked is None else acked  # the publisher's own ACK cursor
        self.batch = batch
        self.timeout = timeout
        # How long a new connection may stay silent before its RESUME line: the client writes it
        # first thing, so a publisher may hang up sooner than its other waits (default: ``timeout``).
        self.resume_within = timeout if resume_within is None else resume_within
        self.sessions = []
        self.port = None
        self._plans = collections.deque()
        self._server = None
        self._tasks = set()

    # -------------------------------------------------------- the log

    def publish(self, *deltas):
        """Append events with the next seqs; return the new ``(seq, delta)`` pairs."""
        new = [(self.next_seq + i, delta) for i, delta in enumerate(deltas)]
        self.log.extend(new)
        self.next_seq += len(new)
        return new

    def retain_from(self, seq):
        """Forget every event below ``seq`` (retention moving on)."""
        self.log = [event for event in self.log if event[0] >= seq]

    def plan(self, **knobs):
        """Queue a Plan for the next session that has none yet; return it."""
        plan = Plan(**knobs)
        self._plans.append(plan)
        return plan

    @property
    def resumes(self):
        """The cursor of every RESUME line seen, in order (None for a bad line)."""
        return [session.cursor for session in self.sessions]

    @property
    def acks(self):
        """The seq of every ACK read, over all sessions, in order."""
        return [seq for session in self.sessions for seq in session.acks]

    # -------------------------------------------------------- serving

    async def start(self, port=0):
        """Listen on ``HOST:port`` (0: any free port; ``self.port`` says which)."""
        self._server = await asyncio.start_server(self._serve, HOST, port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        """Stop listening, end every live session, and wait for all of it."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await self.idle()
        if self._server is not None:
            await self._server.wait_closed()

    async def idle(self):
        """Wait until no session is being served."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc_info):
        await self.close()

    async def _serve(self, reader, writer):
        task = asyncio.current_task()
        self._tasks.add(task)
        session = Session(self._plans.popleft() if self._plans else Plan())
        self.sessions.append(session)
        try:
            session.end = await self._converse(reader, writer, session)
        except OSError as error:  # a reset, a timeout, write_eof() on a socket already gone
            session.end = f"{type(error).__name__}"
        except asyncio.CancelledError:
            session.end = "publisher closed"
        finally:
            await self._close(writer, abort=session.plan.reset)
            self._tasks.discard(task)

    async def _converse(self, reader, writer, session):
        plan = session.plan
        try:
            session.resume = await asyncio.wait_for(reader.readline(), self.resume_within)
        except TimeoutError:
            return "no RESUME line"
        match = _RESUME.fullmatch(session.resume)
        if match is None:
            return "bad RESUME line"
        session.cursor = int(match[1])
        if plan.silent:
            await reader.read()  # until the client gives up and closes
            return "silent"
        problem = await self._send_events(reader, writer, session)
        if problem:
            return problem
        if plan.raw:
            await self._write(writer, session, plan.raw)
        if plan.hold:
            session.held = True
            await reader.read()  # no timeout: the client is meant to be cancelled here
            return "held until the client went away"
        if plan.reset:
            return "reset"
        writer.write_eof()
        # The client may still ACK what it read (a raw frame, the unread last
        # event); record those until it closes.
        while await self._read_ack(reader, session) is not None:
            pass
        return "eof"

    async def _send_events(self, reader, writer, session):
        """Stop and wait through the log; return a reason if the client misbehaved."""
        plan = session.plan
        cursor = self.acked - plan.resend
        if self.log and plan.resend:
            # Resend no further back than the log goes; a cursor already
            # behind the log is left alone, so that the session resyncs.
            cursor = max(cursor, min(self.acked, self.log[0][0] - 1))
        sent = 0
        if self.log and cursor < self.log[0][0] - 1:  # the log no longer holds cursor + 1
            session.resync = True
            return None
        while True:
            batch = self._next_batch(cursor)
            if not batch:
                return None
            for seq, delta in batch:
                if sent == plan.stop_after:
                    return None
                await self._write(writer, session, b"EVENT %d %d\n" % (seq, delta))
                sent += 1
                if sent == plan.stop_after and not plan.read_last_ack:
                    return None
                ack = await self._read_ack(reader, session)
                if ack is None:
                    return f"the receiver went away before ACK {seq}"
                if ack != seq:
                    return f"expected ACK {seq}, got ACK {ack}"
                cursor = seq

    def _next_batch(self, cursor):
        """The next at most ``batch`` events after ``cursor`` (which the log reaches).

        The publisher's own retention window, on purpose not the product's
        ``replay()``: the harness must not run code under test (a mutant of
        ``replay`` would otherwise change the test's peer; docs/MUTATION.md).
        The log's seqs are consecutive, so the event after ``cursor`` sits at
        index ``cursor + 1 - first``.
        """
        start = cursor + 1 - self.log[0][0] if self.log else 0
        return self.log[start:start + self.batch]

    async def _write(self, writer, session, data):
        writer.write(data)
        session.sent.append(data)
        await asyncio.wait_for(writer.drain(), self.timeout)

    async def _read_ack(self, reader, session):
        """Read one ACK line; return its seq, or None at EOF or on a bad line."""
        try:
            line = await asyncio.wait_for(reader.readline(), self.timeout)
        except ValueError:  # over the reader's limit
            return None
        match = _ACK.fullmatch(line)
        if match is None:
            return None
        seq = int(match[1])
        session.acks.append(seq)
        if seq == self.acked + 1:
            self.acked = seq
        return seq

    @staticmethod
    async def _close(writer, abort):
        if abort:
            writer.transport.abort()
            return
        writer.close()
        try:
            await asyncio.wait_for(writer.wait_closed(), 1.0)
        except (TimeoutError, ConnectionError):
            writer.transport.abort()
