"""Stores that other writers made: laid down with raw sqlite3, or left by a writer killed mid-commit.

Every other test's store is created by the implementation's own
``open_store``. A store may as well come from another implementation, an
older version, or a tool that trimmed the ledger; the contract (SPEC.md
step 2) is that ``open_store`` creates the tables and the checkpoint row
ONLY when they do not exist, so it must keep whatever such a store holds.

* ``foreign_stores()``: a ``Foreign`` description: any valid checkpoint
  (``last`` from -1 to the top of the seq range, a total far
  from the ledger's sum if the ledger was trimmed), the ledger rows another
  writer kept (a suffix ``kept_from..last`` of ``0..last``: the older rows
  trimmed, or none kept at all), the two tables created in either order, the
  checkpoint row inserted before or after the ledger rows, SPEC.md's exact
  column definitions in upper or lower case keywords, and the journal mode
  that writer left the file in (rollback ``delete``, ``truncate``,
  ``persist``, or ``wal``, which stays with the file);
* ``lay_down(path, foreign)``: writes it with the harness's own connection;
* ``killed_mid_commit(path, rows)``: the REAL leftovers of a process killed
  inside a transaction: a child Python process opens the store, begins a
  write transaction, writes ``rows`` new ledger rows and the checkpoint with
  a one-page cache (so that SQLite spills changed pages into the database
  file before the commit), and SIGKILLs itself before COMMIT. What remains
  depends on the store's journal mode (a hot rollback journal beside a
  database file holding uncommitted pages; uncommitted WAL frames); SQLite's
  own recovery (the next connection that reads) must undo it. Nothing is
  forged, and no side file is named: the harness is journal-neutral.
"""

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys

from hypothesis import strategies as st

from resume.testing.drivers import busy, store_files
from resume.testing import model
from resume.testing.strategies import values as sts

CHECKPOINT, LEDGER = model.SCHEMA  # SPEC.md's own words
# SPEC.md's tables as other writers spell them (decision 17 leaves the SQL text
# to each implementation): the same tables, whatever the text SQLite keeps.
SPELLINGS = {
    "SPEC.md's": (CHECKPOINT, LEDGER),
    "lower case": (CHECKPOINT.lower(), LEDGER.lower()),
    "over several lines": ("CREATE TABLE checkpoint (\n    id    INTEGER PRIMARY KEY CHECK (id = 1),\n"
                           "    last  INTEGER NOT NULL,\n    total INTEGER NOT NULL\n)",
                           "CREATE TABLE ledger (\n    seq   INTEGER PRIMARY KEY,\n    delta INTEGER NOT NULL\n)"),
    "quoted names": ('CREATE TABLE "checkpoint"("id" INTEGER PRIMARY KEY CHECK("id"=1), "last" INTEGER NOT NULL, '
                     '"total" INTEGER NOT NULL)', 'CREATE TABLE "ledger"("seq" INTEGER PRIMARY KEY, "delta" INTEGER NOT NULL)'),
}
JOURNAL_MODES = ["delete", "truncate", "persist", "wal"]
MAX_KEPT = 300  # ledger rows laid down at most (the rest trimmed)


@dataclasses.dataclass(frozen=True)
class Foreign:
    """A store another writer made, as the test lays it down."""

    last: int
    total: int
    kept: tuple  # ((seq, delta), ...): the ledger rows kept, a suffix of 0..last
    tables_first: str  # "checkpoint" or "ledger": the table created first
    row_first: bool  # the checkpoint row inserted before the ledger rows
    spelling: str  # a key of SPELLINGS
    journal_mode: str

    @property
    def trimmed(self):
        """The seqs at or below the cursor with no ledger row (another writer trimmed them)."""
        return (self.kept[0][0] if self.kept else self.last + 1)

    def ledger(self):
        return dict(self.kept)


@st.composite
def foreign_stores(draw, max_kept=MAX_KEPT, max_last=sts.SEQ_MAX, journal_modes=JOURNAL_MODES):
    """Foreign store descriptions; ``max_last`` leaves room above the cursor, ``journal_modes`` limits the modes."""
    last = draw(st.sampled_from([-1, 0, max_last]) | st.integers(-1, 10**4) | st.integers(max_last - 10**4, max_last))
    n_kept = draw(st.integers(0, min(max_kept, last + 1)))
    # The kept deltas repeat a short drawn pattern: hundreds of rows, a few draws.
    pattern = draw(st.lists(sts.valid_deltas(), min_size=1, max_size=4))
    kept = tuple((seq, pattern[seq % len(pattern)]) for seq in range(last + 1 - n_kept, last + 1))
    if last == -1:
        total = 0
    elif n_kept == last + 1:
        total = sum(delta for _, delta in kept)  # nothing trimmed: the ledger's sum
    else:
        total = draw(st.integers(model.DELTA_MIN * (last + 1), model.DELTA_MAX * (last + 1)))  # what the trimmed rows summed to
    return Foreign(
        last=last,
        total=total,
        kept=kept,
        tables_first=draw(st.sampled_from(["checkpoint", "ledger"])),
        row_first=draw(st.booleans()),
        spelling=draw(st.sampled_from(list(SPELLINGS))),
        journal_mode=draw(st.sampled_from(journal_modes)),
    )


def lay_down(path, foreign):
    """Write ``foreign`` at ``path`` (a new file) with a raw sqlite3 connection of the harness's own."""
    with contextlib.closing(busy.connect(path, isolation_level=None)) as con:
        con.execute(f"PRAGMA journal_mode={foreign.journal_mode}")
        tables = dict(zip(["checkpoint", "ledger"], SPELLINGS[foreign.spelling]))
        order = ["checkpoint", "ledger"] if foreign.tables_first == "checkpoint" else ["ledger", "checkpoint"]
        con.execute("BEGIN IMMEDIATE")
        for name in order:
            con.execute(tables[name])
        row = ("INSERT INTO checkpoint(id, last, total) VALUES (1, ?, ?)", (foreign.last, foreign.total))
        if foreign.row_first:
            con.execute(*row)
        con.executemany("INSERT INTO ledger(seq, delta) VALUES (?, ?)", foreign.kept)
        if not foreign.row_first:
            con.execute(*row)
        con.execute("COMMIT")


def schema(path):
    """The store's schema as SQLite keeps it: ``{(type, name): sql}``."""
    with contextlib.closing(busy.connect(path)) as con, busy.lock_is_a_finding(path):
        return {(kind, name): sql for kind, name, sql in con.execute("SELECT type, name, sql FROM sqlite_master")}


_KILLED_WRITER = r"""
import os, signal, sqlite3, sys
path, rows = sys.argv[1], int(sys.argv[2])
con = sqlite3.connect(path, isolation_level=None, timeout=1.0)
con.execute("PRAGMA cache_size=1")  # spill changed pages into the database file before COMMIT
con.execute("BEGIN IMMEDIATE")
last, total = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
new = [(seq, 1) for seq in range(last + 1, last + 1 + rows)]
con.executemany("INSERT INTO ledger(seq, delta) VALUES (?, ?)", new)
con.execute("UPDATE checkpoint SET last = ?, total = ? WHERE id = 1", (last + rows, total + rows))
os.kill(os.getpid(), signal.SIGKILL)  # before COMMIT: no finally, no rollback, no unlock
"""


def _contents(path):
    """``{file name: bytes}`` of the store and every file beside it (``store_files.files``)."""
    contents = {}
    for found in store_files.files(path):
        contents[os.path.basename(found)] = store_files.raw_bytes(found)
    return contents


def killed_mid_commit(path, rows):
    """Run the killed writer on ``path``; return ``{file name: size}`` of the store's files it left.

    Journal-neutral: what the writer leaves (a hot rollback journal, WAL
    frames never committed, ...) is the journal mode's business; checked
    only that it died by SIGKILL and that it did write something before (else
    the test would have nothing to recover from).
    """
    before = _contents(path)
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITER, path, str(rows)],
                          capture_output=True, timeout=30)
    if done.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the writer was to die by SIGKILL, it ended {done.returncode}: {done.stderr[-2000:]!r}")
    after = _contents(path)
    if after == before:
        raise RuntimeError("the killed writer wrote nothing to the store's files: the test cannot do its job")
    return {name: len(data) for name, data in after.items()}
