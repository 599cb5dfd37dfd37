"""What a test can see of a resource left open: a client socket, a store file.

* ``socket_closed(sock, within)``: the real socket behind a StreamWriter
  (``writer.get_extra_info("socket")``) has been closed: its file descriptor
  is gone. A graceful close still flushing a buffer does not count; an
  ``abort()`` does.
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


async def socket_closed(sock, within=1.0):
    """True once ``sock`` has no file descriptor any more, polled for up to ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while sock.fileno() != -1:
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


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
