"""Loopback peers with unusual behaviour, and one fake, for the step 6 and 7 properties.

The real publisher (``resume/publisher.py``) serves the protocol. These cover
what it cannot do, all on 127.0.0.1:

* ``Listener``: a listening socket that never accepts, to tell whether
  anything connected at all; with ``full=True`` its accept queue is full, so
  the kernel drops a new connection's SYN: the attempt neither succeeds nor
  is refused (a connect that hangs, on loopback); with ``refusing=True`` it
  refuses every attempt until it is told to ``listen()``;
* ``Peer``: an asyncio server that writes a fixed script as soon as a client
  connects, and then reads (recording what it got and when the client went
  away), or stalls (never reads, with a tiny receive buffer, so the client's
  writes pile up), or resets the connection at once or on demand;
* ``CloseFault``: a FAKE writer whose ``wait_closed()`` hangs, raises or is
  slow on demand (a real socket does none of it when a test wants it to),
  and that calls a test's function as a wait is entered;
* ``ReadHook``: a FAKE reader that calls a test's function as its n-th
  ``readline()`` is entered (a cancellation, a reset, arriving in that read;
  or a read that waits though its line is there);
* ``faulty_first_drain()``: patches ``asyncio.open_connection`` so that the
  writer it returns is a FAKE whose first ``drain()`` hangs or raises, while
  the socket stays open: the only way to make run_client's RESUME drain fail
  (a real drain of 10 bytes never blocks, and when a real one raises, asyncio
  has already closed the socket itself);
* ``publisher_idle()``: whether a publisher (or any server with ``idle()``)
  saw every client go away within a bound;
* ``stuff_write_buffer()``: fills a real writer's buffer past its high-water
  mark, so that its next ``drain()`` and ``wait_closed()`` block (with a
  stalled ``Peer``).
"""

import asyncio
import contextlib
import dataclasses
import inspect
import select
import socket
import struct

from resume.testing import model
from resume.testing.drivers import leaks

HOST = "127.0.0.1"
ACCEPT_TURNS = 20  # turns of the loop that let a server accept a connection already made (5 do)
_TINY_BUFFER = 4096  # bytes: the kernel rounds it up a little; it only has to be small


class Listener:
    """A listening socket that never accepts: ``reached()`` tells whether a client connected.

    The kernel completes a loopback connection into the accept queue without
    any accept(), so a connection attempt that got anywhere is visible here.
    ``refusing=True``: bound but not listening, so every attempt is refused,
    until ``listen()``. Use as a context manager.
    """

    def __init__(self, full=False, refusing=False, host=HOST):
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._sock.bind((host, 0))
        if not refusing:
            self._sock.listen(0 if full else 8)
        self.port = self._sock.getsockname()[1]
        self._fillers = []
        self.hangs = False  # whether a new connection attempt hangs (full only)
        if full:
            self._fill()

    def _fill(self):
        # Linux queues one connection beyond a backlog of 0 and then drops
        # every SYN while the queue is full (tcp_conn_request); a dropped
        # SYN is retried after 1 s, 3 s, ... and dropped again. Two fillers
        # (the second one's SYN already dropped), then a probe that must
        # hang: if it connects, this kernel does not behave so, and the
        # caller is told (``hangs`` False), not misled.
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex((HOST, self.port))
            self._fillers.append(filler)
        _, writable, _ = select.select([], [self._fillers[-1]], [], 0.05)
        self.hangs = not writable

    def listen(self):
        self._sock.listen(8)

    def reached(self):
        readable, _, _ = select.select([self._sock], [], [], 0)
        return bool(readable)

    def close(self):
        for filler in self._fillers:
            filler.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


async def connect_as_given(host, port, within):
    """What ``asyncio.open_connection(host, port)`` does here, as ``model.Store.run_client``'s
    ``connect`` takes it: None if it connects, else the kind of error it raises (decision 16)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), within)
    except Exception as error:  # noqa: BLE001 - the outcome is the point
        return model.kind_of_class(type(error))
    writer.transport.abort()
    return None


@dataclasses.dataclass
class Connection:
    """What a ``Peer`` saw of one client."""

    received: bytes = b""
    ended: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)  # EOF or reset seen


class Peer:
    """A loopback server that writes ``script`` to each client, then reads, stalls or resets.

    * default: write ``script``, then ``write_eof()`` if ``eof``; read until the
      client closes or resets, then set ``connection.ended``;
    * ``stall=True``: write ``script`` (and EOF if ``eof``) and never read; the
      receive buffer is tiny, so a client's writes soon stay in its own buffer;
    * ``reset=True``: reset the connection (RST) as soon as it is accepted, or,
      with a ``script``, once the client has sent as many lines as the script
      has (its RESUME line and an ACK for each: it is reading for more);
    * ``pace=seconds``: write ``script`` a byte at a time, pausing between bytes.

    ``host`` is 127.0.0.1 or ::1. Use as ``async with Peer(...) as peer``;
    ``peer.port``, ``peer.connections``.
    Leaving the block closes every connection it still holds.
    """

    def __init__(self, script=b"", *, eof=True, stall=False, reset=False, host=HOST, pace=0.0):
        self.host = host  # 127.0.0.1, or ::1 (an IPv6 listener)
        self.script = script
        self.pace = pace  # seconds between the script's bytes (0: all at once)
        self.eof = eof
        self.stall = stall
        self.reset = reset
        self.connections = []
        self.port = None
        self._server = None
        self._writers = []
        self._tasks = set()

    async def __aenter__(self):
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        if self.stall:
            # Before listen(), so that accepted sockets inherit it.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _TINY_BUFFER)
        sock.bind((self.host, 0))
        self._server = await asyncio.start_server(self._serve, sock=sock)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info):
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for writer in self._writers:
            writer.transport.abort()
        await self._server.wait_closed()
        await asyncio.sleep(0)  # let the aborted transports finish closing

    async def _serve(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.append(writer)
        connection = Connection()
        self.connections.append(connection)
        try:
            if self.reset:
                writer.write(self.script)
                while connection.received.count(b"\n") < self.script.count(b"\n") + bool(self.script):
                    if not (chunk := await reader.read(65536)):
                        break
                    connection.received += chunk
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                connection.ended.set()
                return
            if self.pace:  # a byte at a time, each after a pause
                for byte in self.script:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(self.pace)
            else:
                writer.write(self.script)
            if self.eof:
                writer.write_eof()
            if self.stall:
                await asyncio.Event().wait()  # until the peer is closed
            while chunk := await reader.read(65536):
                connection.received += chunk
            connection.ended.set()
        except ConnectionError:
            connection.ended.set()
        except asyncio.CancelledError:
            pass  # the peer is closing; start_server's callback would log a cancelled task
        finally:
            self._tasks.discard(asyncio.current_task())

    def reset_now(self):
        """Reset (RST) every connection at once; each counts as ended."""
        for writer, connection in zip(self._writers, self.connections):
            sock = writer.get_extra_info("socket")
            if sock is not None and sock.fileno() != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            connection.ended.set()

    async def all_ended(self, within):
        """True if every client so far has gone away (EOF or reset) within ``within`` seconds; False
        at once if a client in this process, which has ended, still holds its socket open
        (``leaks.left_open_to``: no wait would close it). Call it once the clients have ended."""
        if await leaks.left_open_to(self.port):
            return False
        try:
            async with asyncio.timeout(within):
                for connection in self.connections:
                    await connection.ended.wait()
        except TimeoutError:
            return False
        return True


class CloseFault:
    """FAKE writer: a real StreamWriter whose ``wait_closed()`` hangs, raises or is slow.

    Only for the paths a real socket cannot be made to take on demand: a
    closing wait that never ends, raises a ConnectionError, raises another
    error, is where a cancellation arrives, or takes a while but ends within
    the timeout (and so must be waited for, not aborted). Everything else (write, drain,
    close, get_extra_info, ...) goes to the real writer, so ``close()`` really
    closes the socket. ``transport.aborts`` counts ``transport.abort()`` calls
    (each passed on to the real transport); ``drains`` counts the drains
    entered; ``finished`` is set once a slow wait ran to
    its end (whether ``abort()`` also follows is left open: decision 17).
    ``on_wait`` and ``on_drain``, if given, are called as ``wait_closed()``
    and drain number ``drain_at`` (0-based) are entered (a test cancels the
    session's task there: the cancellation then arrives in that very wait;
    or ``on_drain`` raises, and that drain raises it: a reset the kernel
    reports at no drain a test can choose; an awaitable ``on_drain`` returns
    is awaited first: a slow drain, or one that never ends).
    """

    def __init__(self, writer, fault, *, on_wait=None, on_drain=None, drain_at=0):
        """``fault`` is None (the real wait_closed()), ``"hang"``, an exception
        instance to raise, or a number of seconds the wait takes (slow, then the
        real wait_closed())."""
        self._writer = writer
        self._fault = fault
        self._on_wait, self._on_drain, self._drain_at = on_wait, on_drain, drain_at
        self.transport = _AbortCounter(writer.transport)
        self.drains = 0
        self.finished = False

    def __getattr__(self, name):
        return getattr(self._writer, name)

    async def drain(self):
        self.drains += 1
        if self.drains - 1 == self._drain_at and self._on_drain is not None \
                and inspect.isawaitable(waiting := self._on_drain()):
            await waiting
        return await self._writer.drain()

    @staticmethod
    def was_closing(frames):
        """Whether a task suspended in ``frames`` (``tasks.suspended_at``) was in a closing wait of this
        wrapper: a call cut elsewhere hung in a read or a drain, not in the closing wait."""
        code = CloseFault.wait_closed.__code__
        lines = range(code.co_firstlineno, code.co_firstlineno + len(inspect.getsourcelines(code)[0]))
        return any(file == code.co_filename and line in lines for _, file, line in frames)

    async def wait_closed(self):
        if self._on_wait is not None:
            self._on_wait()
        if self._fault is None:
            return await self._writer.wait_closed()
        if self._fault == "hang":
            await asyncio.Event().wait()  # never set
        if isinstance(self._fault, (int, float)):
            await asyncio.sleep(self._fault)
            self.finished = True
            return await self._writer.wait_closed()
        raise self._fault


class ReadHook:
    """FAKE reader: a real StreamReader that calls ``act()`` as its ``nth`` ``readline()`` is entered.

    Then that read goes on as the real one: with nothing more to come (the
    peer sent its lines and stays silent) it waits, so what ``act()`` starts
    (a cancellation of the session's task, a reset by the peer) arrives in
    that very wait. An awaitable ``act()`` returns is awaited first: with
    ``asyncio.sleep(0)``, a read of a line already in the socket waits all
    the same, as a read over a network does. Everything else goes to the
    real reader.
    """

    def __init__(self, reader, nth, act):
        self._reader, self._nth, self._act = reader, nth, act
        self.reads = 0

    def __getattr__(self, name):
        return getattr(self._reader, name)

    async def readline(self):
        self.reads += 1
        if self.reads == self._nth and inspect.isawaitable(waiting := self._act()):
            await waiting
        return await self._reader.readline()


class _AbortCounter:
    """A transport that counts ``abort()`` calls and passes everything on."""

    def __init__(self, transport):
        self._transport = transport
        self.aborts = 0

    def abort(self):
        self.aborts += 1
        self._transport.abort()

    def __getattr__(self, name):
        return getattr(self._transport, name)


def _fails(fault):
    """``fault`` raised, or (``"hang"``) an awaitable that never ends."""
    if fault == "hang":
        return asyncio.Event().wait()
    raise fault


@contextlib.contextmanager
def faulty_first_drain(fault, closing=None):
    """Within the block, ``asyncio.open_connection`` returns a ``CloseFault`` writer whose first
    ``drain()`` hangs (``fault`` "hang") or raises ``fault``, and whose closing wait does what
    ``closing`` says (``CloseFault``'s ``fault``: None for the real one, "hang", an error).

    Yields the list of fakes made, so a test can see whether its code under
    test connected through ``asyncio.open_connection`` at all (SPEC.md step 7
    names it) and reach the real socket afterwards.
    """
    real = asyncio.open_connection
    made = []

    async def open_connection(*args, **kwargs):
        reader, writer = await real(*args, **kwargs)
        made.append(CloseFault(writer, closing, on_drain=lambda: _fails(fault)))
        return reader, made[-1]

    asyncio.open_connection = open_connection
    try:
        yield made
    finally:
        asyncio.open_connection = real


async def publisher_idle(publisher, within=1.0):
    """True if every session the publisher served ended (its client went away) within ``within`` s;
    False at once if a client in this process, which has ended, still holds its socket open."""
    # Let the server accept a connection still queued: turns of the loop, not time (its
    # session starts 5 turns after the connect, measured idle and with every core busy alike).
    for _ in range(ACCEPT_TURNS):
        await asyncio.sleep(0)
    if await leaks.left_open_to(publisher.port):
        return False
    try:
        await asyncio.wait_for(publisher.idle(), within)
    except TimeoutError:
        return False
    return True


async def stuff_write_buffer(writer):
    """Fill ``writer``'s buffer past its high-water mark (with a stalled ``Peer`` on the other end).

    The send buffer is made tiny first, so that a few hundred KiB are enough.
    Afterwards ``drain()`` blocks, and so does ``wait_closed()`` after
    ``close()`` (a graceful close waits for the buffer to empty).
    """
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _TINY_BUFFER)
    _, high = writer.transport.get_write_buffer_limits()
    while writer.transport.get_write_buffer_size() <= high:
        writer.write(b"\0" * (256 * 1024))
        await asyncio.sleep(0.01)
