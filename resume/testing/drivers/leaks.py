"""What a test can see of a resource left open: a client socket, a store file.

* ``socket_closed(sock)``: the real socket behind a StreamWriter
  (``writer.get_extra_info("socket")``) has been closed: its file descriptor
  is gone. A graceful close still flushing a buffer does not count; an
  ``abort()`` does.
* ``left_open_to(port)``: this process's sockets still connected to ``port``
  (each descriptor of ``/proc/self/fd`` that is a socket, asked for its
  peer): a client here that has ended and still holds one left it open.

Both give their answer after ``CLOSE_TURNS`` turns of the event loop, not
after a wait: once a call has ended, its own close has either run or is a
callback already scheduled (``abort()`` closes the socket with
``call_soon``), so no time changes the answer, and a socket left open costs
a failing example nothing (a bound waited out costs every shrinking step).
* ``descriptors_on(path)``: this process's open file descriptors on the file
  ``path`` (read from ``/proc/self/fd``, so Linux only). An open sqlite3
  connection holds one on its database file, so a store that an
  implementation forgot to close shows up here as long as its connection
  object is alive (a traceback that holds the implementation's frame keeps
  it alive).
* ``open_descriptors()``: every file descriptor this process has open, as
  ``(fd, what it points to)`` pairs (a socket's target names its inode, so
  an fd number reused by another socket counts as a new pair).
"""

import asyncio
import os
import socket


# Turns of the loop a call's own close may still take once the call has ended (an abort()'s
# callback runs one turn after it is scheduled; 20 leaves room for a close that schedules another).
CLOSE_TURNS = 20


async def socket_closed(sock):
    """True once ``sock`` has no file descriptor any more, within ``CLOSE_TURNS`` turns of the loop."""
    for _ in range(CLOSE_TURNS):
        if sock.fileno() == -1:
            return True
        await asyncio.sleep(0)
    return sock.fileno() == -1


async def left_open_to(port):
    """The sockets of this process connected to ``port`` at the other end (their descriptors) that are
    still open after ``CLOSE_TURNS`` turns of the loop; empty once every one has closed."""
    for _ in range(CLOSE_TURNS):
        if not sockets_to(port):
            return set()
        await asyncio.sleep(0)
    return sockets_to(port)


def sockets_to(port):
    """The descriptors of this process's sockets whose other end is ``port`` (Linux ``/proc``):
    each socket is looked at through a duplicate of its descriptor, closed again at once."""
    found = set()
    for fd, target in open_descriptors():
        if not target.startswith("socket:["):
            continue
        try:
            look = socket.socket(fileno=os.dup(fd))
        except OSError:  # closed meanwhile
            continue
        with look:
            try:
                peer = look.getpeername()
            except OSError:  # not connected: a listener, or a socket already shut
                continue
        if isinstance(peer, tuple) and peer[1] == port:
            found.add(fd)
    return found
def descriptors_on(path):
    """The fds of this process open on ``path`` (an empty list if none)."""
    target = os.path.realpath(path)
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == target:
                found.append(int(name))
        except OSError:  # closed while listing (the listing's own fd, say)
            pass
    return found


def open_descriptors():
    """The set of ``(fd, target)`` open in this process now (Linux ``/proc/self/fd``)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            found.add((int(name), os.readlink(f"/proc/self/fd/{name}")))
        except OSError:  # closed while listing (the listing's own fd, say)
            pass
    return found
