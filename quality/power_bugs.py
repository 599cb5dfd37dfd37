r"""Beyond the lab: known bugs and correct variants of the power-cut level (SPEC.md decision 18).

Same format as quality/bugs.py (``Bug``, ``apply``: exact text replacements
of resume/client.py, each old text found once, ``PatchError`` otherwise).
resume/client.py commits in WAL mode with ``synchronous=FULL`` (its
``open_store`` docstring says why); each entry below changes that.

``BUGS``: every one passes the lab (a killed process leaves the page cache
intact, so no lab test can tell), and ``pytest -m power_loss`` must fail
each, with a story. ``VARIANTS``: other settings that the traces show
durable at every ACK; ``pytest -m power_loss`` must pass each.
quality/test_power_loss_level.py is the meta-test of both sides.
"""

from quality.bugs import Bug, PatchError, apply  # noqa: F401 - the one format and its patcher

_MODE = '''        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
'''


def _setting(mode, sync):
    """The edit that sets ``journal_mode=mode`` and ``synchronous=sync`` instead (None: SQLite's default)."""
    lines = "".join(f'        con.execute("PRAGMA {name}={value}")\n'
                    for name, value in (("journal_mode", mode), ("synchronous", sync)) if value)
    return (_MODE, lines)


def _bug(id, what, *edits):
    return Bug(id, 18, what, tuple(edits))


BUGS = [
    _bug("sqlite-defaults",
         "SQLite's defaults (DELETE journal, synchronous=FULL): the commit point, the journal's unlink, "
         "is not synced; a power cut after the ACK brings the journal back and the event is rolled back",
         (_MODE, "")),
    _bug("wal-normal",
         "WAL with synchronous=NORMAL: the commit is appended to the WAL and ACKed before any sync",
         _setting("WAL", "NORMAL")),
    _bug("sync-off",
         "synchronous=OFF: nothing is ever synced, neither the store nor its folder",
         _setting("WAL", "OFF")),
    _bug("delete-normal",
         "DELETE journal with synchronous=NORMAL: as the defaults, and the journal is not synced either",
         _setting("DELETE", "NORMAL")),
    _bug("wal-only-for-a-new-store",
         "sets WAL and synchronous=FULL only on a store it creates (the journal mode is kept in the file): "
         "a store another program made in SQLite's default DELETE journal commits as the defaults do",
         ('''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")''', '''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        new = con.execute("PRAGMA page_count").fetchone()[0] == 0  # nothing in the file yet
        con.execute("BEGIN IMMEDIATE")'''),
         (_MODE, '''        if new:  # kept in the file: set once, when the store is made
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=FULL")
''')),
    # Not a PRAGMA setting: durability made by hand, on the wrong file.
    _bug("own-fsync-of-the-store-file",
         "turns SQLite's syncs off and fsyncs the store file itself after each commit (one sync instead "
         "of SQLite's): the commit is in the write-ahead log beside the store, which is never synced",
         _setting("WAL", "OFF"),
         ('''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True''', '''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        _sync_store(con)  # durable before the ACK
        return True'''),
         ('''def apply_event(con, seq, delta, fault=None):''', '''def _sync_store(con):
    import os
    path = con.execute("PRAGMA database_list").fetchone()[2]
    if path:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def apply_event(con, seq, delta, fault=None):''')),
]

VARIANTS = [
    _bug("delete-extra", "DELETE journal with synchronous=EXTRA: the folder is synced after the journal's unlink",
         _setting("DELETE", "EXTRA")),
    _bug("truncate-full", "TRUNCATE journal with synchronous=FULL: the commit point is the journal's "
         "truncation, which is synced", _setting("TRUNCATE", "FULL")),
    _bug("persist-full", "PERSIST journal with synchronous=FULL: the commit point is the zeroed journal "
         "header, which is synced", _setting("PERSIST", "FULL")),
    _bug("wal-extra", "WAL with synchronous=EXTRA", _setting("WAL", "EXTRA")),
    _bug("wal-default-sync", "WAL with SQLite's default synchronous level (FULL in this build)",
         _setting("WAL", None)),
]
