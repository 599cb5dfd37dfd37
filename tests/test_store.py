"""The store reader of the harness (``resume.testing.drivers.store_files``): read-only, never creates a file.

The reader is the tests' witness of what another connection sees, so it must
neither change the store (a write through it fails) nor make one up (reading
a missing path is an error, and no file appears).
"""

import os
import sqlite3

import pytest

from resume.testing.drivers import store_files

SCHEMA = [
    "CREATE TABLE checkpoint(id INTEGER PRIMARY KEY CHECK(id=1), last INTEGER NOT NULL, total INTEGER NOT NULL)",
    "CREATE TABLE ledger(seq INTEGER PRIMARY KEY, delta INTEGER NOT NULL)",
    "INSERT INTO checkpoint VALUES (1, -1, 0)",
]


def make_store(path):
    """A store as SPEC.md describes it, made without any implementation."""
    with sqlite3.connect(path) as con:
        for statement in SCHEMA:
            con.execute(statement)
    con.close()


def test_reading_a_missing_store_is_an_error_and_creates_nothing(tmp_path):
    path = tmp_path / "odd?name#.db"
    with pytest.raises(sqlite3.OperationalError):
        store_files.read(path)
    with pytest.raises(sqlite3.OperationalError):
        store_files.prefill(path, 0, 0)
    assert os.listdir(tmp_path) == []


def test_a_snapshot_compares_as_state_and_ledger(tmp_path):
    path = tmp_path / "odd?name#.db"
    make_store(path)
    assert store_files.read(path) == ((-1, 0), {})
    store_files.prefill(path, 2, 12, {0: 5, 2: 7})
    snapshot = store_files.read(path)
    assert snapshot == ((2, 12), {0: 5, 2: 7}) and (snapshot.last, snapshot.total) == (2, 12)
    assert list(snapshot.ledger) == [0, 2]


def test_a_checkpoint_table_other_than_the_one_row_has_no_state(tmp_path):
    path = tmp_path / "store.db"
    make_store(path)
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM checkpoint")
    con.close()
    assert store_files.read(path).state is None


def test_the_reader_opens_read_only_and_closes_its_connection(tmp_path, monkeypatch):
    path = tmp_path / "store.db"
    make_store(path)
    opened = []
    real_connect = sqlite3.connect

    def spy(*args, **kwargs):
        opened.append((args, kwargs, real_connect(*args, **kwargs)))
        return opened[-1][2]

    # A spy on sqlite3.connect, only to reach the reader's own connection.
    monkeypatch.setattr(sqlite3, "connect", spy)
    store_files.read(path)
    monkeypatch.undo()
    [(args, kwargs, con)] = opened
    assert args[0].endswith("?mode=ro") and kwargs.get("uri") is True
    with pytest.raises(sqlite3.ProgrammingError):  # closed already
        con.execute("SELECT 1")


def test_a_raw_read_of_a_store_this_process_holds_open_is_refused(tmp_path):
    """Closing a raw read's descriptor would drop the connection's POSIX locks (SQLite's "How To
    Corrupt", 2.2): another process could then delete the WAL under it. Once closed, it reads."""
    path = tmp_path / "store.db"
    make_store(path)
    con = sqlite3.connect(path)
    con.execute("SELECT * FROM checkpoint").fetchall()
    with pytest.raises(RuntimeError, match="holds it open"):
        store_files.raw_bytes(path)
    con.close()
    assert store_files.raw_bytes(path) == path.read_bytes()
