"""A store as the tests see it: temporary files and a plain sqlite3 connection of the test's own.

The schema is SPEC.md's, so reading ``checkpoint`` and ``ledger`` directly is
fair; it is how the tests check what another connection sees, independent of
the implementation's ``state()``. Its connections wait at most
``busy.BUSY_TIMEOUT`` for a lock; a lock still held is ``busy.LockLeft``.

Each Hypothesis example needs its own store: use ``temp_store_path()`` inside
the test body (function-scoped pytest fixtures are not reset between
examples).
"""

import contextlib
import os
import sqlite3
import tempfile

from resume.testing import busy


# Store files go to a RAM-backed folder where there is one: still real SQLite
# files with real locking, but a commit then costs no fsync, which on a busy
# disk is most of an example's time. Nothing here tests durability across a
# power cut, which is the only thing such a folder would not show.
_FAST_TMP = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@contextlib.contextmanager
def temp_store_path():
    """A path for a new store file in a fresh temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="resume-store-", dir=_FAST_TMP) as folder:
        yield os.path.join(folder, "store.db")


@contextlib.contextmanager
def opened(impl, path):
    """``impl.open_store(path)``, closed on leaving the block."""
    con = impl.open_store(path)
    try:
        yield con
    finally:
        con.close()


def read(path):
    """``((last, total), {seq: delta})`` as a second connection sees the store now."""
    with busy.lock_is_a_finding(path), contextlib.closing(busy.connect(path)) as con:
        row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
        ledger = dict(con.execute("SELECT seq, delta FROM ledger"))
    return (tuple(row) if row is not None else None), ledger


def prefill(path, last, total, ledger=None):
    """Set the checkpoint to ``(last, total)`` and add ``ledger`` rows, in a store open_store created.

    Lets a test start anywhere in the seq range (near 2147483647 too) without
    applying two billion events, and make a ledger with rows missing.
    """
    with busy.lock_is_a_finding(path), contextlib.closing(busy.connect(path, isolation_level=None)) as con:
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE checkpoint SET last = ?, total = ? WHERE id = 1", (last, total))
        con.executemany("INSERT INTO ledger(seq, delta) VALUES (?, ?)", sorted((ledger or {}).items()))
        con.execute("COMMIT")
