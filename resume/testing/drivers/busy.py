"""Bounded waits for the harness's own SQLite connections, and a lock left held as a finding.

Every sqlite3 connection the harness opens on a store waits at most
``LOCK_WAIT`` (0.1 s) for a lock, not sqlite3's default 5 s: the test
reads a store only after the implementation's call returned, so a lock still
held then is the implementation's (an open transaction, a connection never
closed) and it is reported at once, by ``LockLeft``, instead of every shrink
step waiting out 5 seconds. A test that takes a lock on purpose (to see the
implementation's own 1 s busy timeout at work) uses its own connection and
says so.
"""

import contextlib
import sqlite3

LOCK_WAIT = 0.1  # seconds; the implementation's own is 1 s (SPEC.md decision 3)

_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


class LockLeft(AssertionError):
    """The store was still locked when the harness read it, after the implementation's call returned."""


def connect(path, *, readonly=False, **options):
    """A harness connection to the store at ``path`` with the bounded busy timeout."""
    if readonly:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=LOCK_WAIT, **options)
    return sqlite3.connect(path, timeout=LOCK_WAIT, **options)


@contextlib.contextmanager
def lock_is_a_finding(path):
    """Turn a busy/locked store met inside the block into ``LockLeft`` naming ``path``."""
    try:
        yield
    except sqlite3.OperationalError as error:
        # sqlite_errorcode is Python 3.11+; the primary code is the low byte.
        if getattr(error, "sqlite_errorcode", 0) & 0xFF in _BUSY_CODES:
            raise LockLeft(
                f"the store {path} is still locked {LOCK_WAIT} s after the implementation's "
                f"call returned: a transaction left open, or a connection not closed"
            ) from error
        raise


class ReaderFor:
    """A read transaction another connection holds on ``path`` from ``start()`` for ``seconds``, then
    ends (a thread's timer): a reader that arrives during a write and lets go later. In a rollback
    journal its SHARED lock keeps the writer's COMMIT from writing until it lets go; in WAL it blocks
    nothing. ``stop()`` ends it at once (and waits for the timer)."""

    def __init__(self, path, seconds):
        import threading

        self.con = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=LOCK_WAIT)
        self.timer = threading.Timer(seconds, self._end)
        self.lock = threading.Lock()

    def start(self):
        self.con.execute("BEGIN")
        self.con.execute("SELECT count(*) FROM checkpoint").fetchone()  # the read: SHARED taken
        self.timer.start()

    def _end(self):
        with self.lock:
            if self.con.in_transaction:
                self.con.execute("COMMIT")

    def stop(self):
        self.timer.cancel()
        self._end()
        self.con.close()
