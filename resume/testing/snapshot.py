"""Read a store file through a connection of the test's own: read-only, closed at once.

The connection waits at most ``busy.BUSY_TIMEOUT`` for a lock; a lock still
held is reported as ``busy.LockLeft``.

The schema is SPEC.md's (``checkpoint`` and ``ledger``), so reading it is
fair; nothing here goes through the implementation.
"""

import dataclasses
import sqlite3

from resume.testing import busy


@dataclasses.dataclass(frozen=True)
class Snapshot:
    checkpoints: list  # every (id, last, total) row: exactly one, (1, ...), is right
    ledger: list  # every (seq, delta) row, in seq order

    @property
    def last(self):
        return self.checkpoints[0][1]

    @property
    def total(self):
        return self.checkpoints[0][2]


def read(path):
    """A Snapshot of the store at ``path`` (which must exist)."""
    con = busy.connect(path, readonly=True)
    try:
        with busy.lock_is_a_finding(path):
            checkpoints = con.execute("SELECT id, last, total FROM checkpoint ORDER BY id").fetchall()
            ledger = con.execute("SELECT seq, delta FROM ledger ORDER BY seq").fetchall()
    finally:
        con.close()
    return Snapshot(checkpoints, ledger)
