"""A store as the tests see it: the ONE reader of a store file, temporary paths, a prefill.

The schema is SPEC.md's (``checkpoint`` and ``ledger``), so reading it
directly is fair: it is how the tests check what another connection sees,
independent of the implementation's ``state()``. Its connections wait at most
``busy.LOCK_WAIT`` for a lock; a lock still held is ``busy.LockLeft``.

* ``read(path)``: a ``Snapshot`` through a connection of the test's own,
  opened READ-ONLY (an SQLite ``mode=ro`` URI) and closed at once. It never
  creates a file: a missing store is ``sqlite3.OperationalError``.
* ``read_as_recovered(path)``: the store as the NEXT opener finds it, after
  SQLite's own recovery (of a hot journal, a WAL); read from a copy, so the
  file stays exactly as a crash left it, for the next receiver to recover.
* ``raw_bytes(path)``: one of a store's files read raw (not through SQLite),
  only while no connection of this process holds it (see there).
* ``files(path)``: the store's file and every file SQLite keeps beside it
  (whatever the journal mode: they are the files whose names start with the
  store's), so that a test never names a journal mode's side file.
* ``temp_store_path()``: a path for a new store in a fresh temporary folder.
  Each Hypothesis example needs its own store: use it inside the test body
  (function-scoped pytest fixtures are not reset between examples).
* ``expect(path, expected, what)``, ``expect_at_rest(impl, con, expected, what, path)``: the
  store (and a connection) as the model's ``Store`` says, or a plain ``model.Mismatch``;
* ``opened(impl, path)``: ``impl.open_store(path)``, closed on leaving.
* ``prefill(path, last, total, ledger)``: the one writer here, to start a
  test anywhere in the seq range (on an existing store only).
"""

import contextlib
import os
import pathlib
import sqlite3
import tempfile
import typing

from resume.testing.drivers import busy, leaks

# Store files go to a RAM-backed folder where there is one: still real SQLite
# files with real locking, but a commit then costs no fsync, which on a busy
# disk is most of an example's time. Nothing here tests durability across a
# power cut, which is the only thing such a folder would not show.
# ``resume check`` names a folder of its own there (``$RESUME_FAST_TMP``, grading.room), which it
# removes however the check ends.
FAST_TMP_VAR = "RESUME_FAST_TMP"
SHM = "/dev/shm"


def fast_tmp():
    """The RAM-backed folder for stores: ``$RESUME_FAST_TMP``, else ``/dev/shm`` where it can be
    written, else None (the default temporary folder)."""
    chosen = os.environ.get(FAST_TMP_VAR)
    if chosen:
        return chosen
    return SHM if os.path.isdir(SHM) and os.access(SHM, os.W_OK) else None


class Snapshot(typing.NamedTuple):
    """The store at one moment; compares equal to ``((last, total), {seq: delta})``."""

    state: tuple | None  # (last, total) of the checkpoint; None unless the table is exactly the row id 1
    ledger: dict  # seq -> delta, in seq order

    @property
    def last(self):
        return self.state[0]

    @property
    def total(self):
        return self.state[1]


def text(snapshot):
    """A store in plain words: ``last=3, total=12, ledger {0: 5, 1: 7, 2: -3, 3: 3}`` (a long ledger cut short)."""
    (last, total), ledger = snapshot
    rows = [f"{seq}: {delta}" for seq, delta in ledger.items()]
    count = len(rows)
    if count > 8:
        rows = rows[:4] + ["..."] + rows[-3:]
    rows = ", ".join(rows)
    items = range(count)
    return f"last={last}, total={total}, ledger {{{rows}}}" + (f" ({len(items)} rows)" if len(items) > 8 else "")


def expect(path, expected, what):
    """Read the store at ``path`` and fail with a plain ``model.Mismatch`` unless it is ``expected``,
    a ``model.Store``: the Mismatch names the clause of its last change (``Store.because``)."""
    from resume.testing import model

    try:
        found = read(path)
    except sqlite3.OperationalError as error:  # no store at the path at all
        model.differs(what, text(expected.snapshot()), f"no store there ({error})", expected.because)
    return expect_found(found, expected, what)


def expect_found(found, expected, what):
    """``found`` (a ``Snapshot`` read before) is the ``model.Store`` ``expected``'s, or a plain
    ``model.Mismatch`` naming the clause the difference breaks (``Store.blame``)."""
    from resume.testing import model

    if found != expected.snapshot():
        model.differs(what, text(expected.snapshot()), text(found) if found.state is not None
                      else f"no single checkpoint row (id 1); ledger {dict(found.ledger)}", expected.blame(found))
    return found


def expect_at_rest(impl, con, expected, what, path=None):
    """After a call on ``con``: no transaction left open, ``state(con)`` as ``expected`` (a
    ``model.Store``) says and, given ``path``, the store as another connection reads it."""
    from resume.testing import model

    if con.in_transaction:
        model.differs(what, "no transaction left open (con.in_transaction is False)", "con.in_transaction is True",
                      expected.because if expected.because in ("D4.locked", "D5") else "S3.rollback")
    if path is not None:  # first: the rows say more of what went wrong than the pair does
        expect(path, expected, f"{what}, then another connection reads the store")
    if (got := impl.state(con)) != expected.state():
        model.differs(f"{what}, then state(con)", repr(expected.state()), repr(got), expected.because)


def _uri(path, mode):
    """An SQLite URI for ``path`` that opens an existing file only (``mode`` 'ro' or 'rw')."""
    # as_uri() percent-encodes the path, so a '?' or '#' in it cannot end the file name.
    return f"{pathlib.Path(path).absolute().as_uri()}?mode={mode}"


def read(path):
    """A Snapshot of the store at ``path``, read through a read-only connection (never creates it)."""
    with busy.lock_is_a_finding(path), \
            contextlib.closing(sqlite3.connect(_uri(path, "ro"), uri=True, timeout=busy.LOCK_WAIT)) as con:
        checkpoints = con.execute("SELECT id, last, total FROM checkpoint ORDER BY id").fetchall()
        ledger = dict(con.execute("SELECT seq, delta FROM ledger ORDER BY seq"))
    state = tuple(checkpoints[0][1:]) if [row[0] for row in checkpoints] == [1] else None
    return Snapshot(state, ledger)


def in_wal(path):
    """Whether the store at ``path`` is in WAL mode (left to the implementation: decision 17)."""
    with contextlib.closing(sqlite3.connect(_uri(path, "ro"), uri=True, timeout=busy.LOCK_WAIT)) as con:
        return con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"


def missing_parts(path):
    """What of step 2's store the file at ``path`` lacks: ``{"checkpoint", "ledger", "row"}`` at most
    (``"row"``: the checkpoint table holds no row with id 1)."""
    if not os.path.isfile(path):
        return {"checkpoint", "ledger", "row"}
    with contextlib.closing(sqlite3.connect(_uri(path, "ro"), uri=True, timeout=busy.LOCK_WAIT)) as con:
        tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = {"checkpoint", "ledger"} - tables
        if "checkpoint" in missing or not con.execute("SELECT 1 FROM checkpoint WHERE id = 1").fetchone():
            missing.add("row")
    return missing


def ledger_on(con):
    """The ledger ``{seq: delta}`` as the connection ``con`` sees it now (inside its own transaction,
    if it has one), read with SPEC.md's schema."""
    return dict(con.execute("SELECT seq, delta FROM ledger ORDER BY seq"))


def ledger_rows(path):
    """The rows of the ledger table in the database file at ``path``: ``{}`` if there is no such file or table."""
    if not os.path.isfile(path) or not os.path.getsize(path):
        return {}
    with contextlib.closing(sqlite3.connect(_uri(path, "ro"), uri=True)) as con:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger'").fetchone():
            return {}
        return dict(con.execute("SELECT seq, delta FROM ledger"))


def files(path):
    """The store at ``path`` and the files beside it whose names start with its name, sorted.

    Whatever the journal mode, SQLite names every file it keeps for a store
    (a rollback journal, a WAL and its index) after the store's own; this is
    all of them, with no suffix named.
    """
    folder, name = os.path.split(os.path.abspath(path))
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(os.path.join(folder, other) for other in names
                  if other.startswith(name) and os.path.isfile(os.path.join(folder, other)))


def raw_bytes(path):
    """The bytes of ``path``, a store's file or one beside it, read raw: not through SQLite.

    Only for a file no connection of this process holds open, and checked:
    closing the descriptor this read opens drops EVERY POSIX lock the process
    holds on the file, its connections' locks too (SQLite's "How To Corrupt",
    2.2); another process then takes itself for the store's last user and
    deletes its WAL at exit, under the connection, and an ACKed commit is lost
    at the next open: a false FAIL. (``model.path_kind`` once did exactly
    that.) Such a call is the suite's mistake, raised as one.
    """
    target = os.path.realpath(path)
    if any(found == target for _, found in leaks.open_descriptors()):
        raise RuntimeError(f"the suite read {path} raw while this process holds it open: "
                           "closing the read would drop the process's SQLite locks on it")
    with open(path, "rb") as file:
        return file.read()


def read_as_recovered(path):
    """A Snapshot of the store at ``path`` as the next opener finds it; None if there is no file.

    A read-only connection cannot recover a store (roll back the hot journal
    a writer killed mid-commit left, say), so this copies the store and every
    file beside it (``files()``: whatever the journal mode left) to a
    temporary folder and reads the copy through a read-write connection of its
    own, which, as SQLite does for any next opener, first recovers it. A table
    not created yet (a crash inside ``open_store``) reads as empty: ``state``
    None, ``ledger`` ``{}``.
    """
    if not os.path.exists(path):
        return None
    with tempfile.TemporaryDirectory(prefix="resume-store-copy-") as folder:
        copy = os.path.join(folder, "store.db")
        name = os.path.basename(path)
        for found in files(path):
            with open(copy + os.path.basename(found)[len(name):], "wb") as file:
                file.write(raw_bytes(found))
        with busy.lock_is_a_finding(copy), contextlib.closing(
                sqlite3.connect(_uri(copy, "rw"), uri=True, isolation_level=None, timeout=busy.LOCK_WAIT)) as con:
            tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            checkpoints = con.execute("SELECT id, last, total FROM checkpoint ORDER BY id").fetchall() \
                if "checkpoint" in tables else []
            ledger = dict(con.execute("SELECT seq, delta FROM ledger ORDER BY seq")) if "ledger" in tables else {}
    state = tuple(checkpoints[0][1:]) if [row[0] for row in checkpoints] == [1] else None
    return Snapshot(state, ledger)


@contextlib.contextmanager
def temp_store_path():
    """A path for a new store file in a fresh temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="resume-store-", dir=fast_tmp()) as folder:
        yield os.path.join(folder, "store.db")


@contextlib.contextmanager
def opened(impl, path):
    """``impl.open_store(path)``, closed on leaving the block."""
    con = impl.open_store(path)
    try:
        yield con
    finally:
        con.close()


def commit_event(con, seq, delta):
    """Commit event ``(seq, delta)`` through ``con`` (a connection ``open_store`` returned) with
    SPEC.md's schema and the harness's own SQL: step 2's tests write through the connection it
    returned without step 3's ``apply_event`` (a file half written is checked step by step)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET last = ?, total = total + ? WHERE id = 1", (seq, delta))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def prefill(path, last, total, ledger=None):
    """Set the checkpoint to ``(last, total)`` and add ``ledger`` rows, in a store open_store created.

    Lets a test start anywhere in the seq range (near its top too) without
    applying two billion events, and make a ledger with rows missing.
    """
    with busy.lock_is_a_finding(path), contextlib.closing(
            sqlite3.connect(_uri(path, "rw"), uri=True, isolation_level=None, timeout=busy.LOCK_WAIT)) as con:
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE checkpoint SET last = ?, total = ? WHERE id = 1", (last, total))
        con.executemany("INSERT INTO ledger(seq, delta) VALUES (?, ?)", sorted((ledger or {}).items()))
        con.execute("COMMIT")
