"""Step 2, ``open_store`` and ``state``: a store that remembers across restarts.

Claims:
* a fresh store reads ``(-1, 0)``, with the one checkpoint row ``(1, -1, 0)``
  and an empty ledger;
* reopening any number of times keeps ``(last, total)`` and the ledger;
* the tables have SPEC's columns, types, keys and constraints (checked with
  PRAGMA table_info and by behaviour, never by comparing SQL text);
* the connection has ``isolation_level`` None, a busy timeout of 1000 ms and
  no transaction left open; a new store that another connection holds the
  write lock on raises within that 1 s (it bounds the connect's initialisation);
* every form of path (``arguments.paths``: a file that is not a database, a
  database whose ``checkpoint`` table cannot hold SPEC's row among them)
  opens the store the model predicts, or raises its error and leaves no
  connection open.
* a statement of open_store that fails (a FAKE, ``resume.testing.drivers.statements``)
  makes it raise that very error and leave no connection open, at a new path
  or on a store holding events; the next open finds the store as it was.
"""

import contextlib
import os
import sqlite3
import tempfile
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resume.testing.drivers import busy, leaks, statements, store_files
from resume.testing.strategies import arguments
from resume.testing import model
from resume.testing.plugin.first_look import first_look, searching
from resume.testing.strategies import values as sts
from resume.testing.drivers.store_files import opened, prefill, read, temp_store_path


@given(window=sts.windows(max_size=8), extra_total=st.integers(-(10**6), 10**6), reopens=st.integers(1, 4))
def test_reopening_keeps_the_cursor_the_total_and_the_ledger(impl, window, extra_total, reopens):
    # The saved state is written by the test's own connection, anywhere in the
    # seq range; total need not be the ledger's sum (open_store must not care).
    last = window[-1][0]
    total = sum(d for _, d in window) + extra_total
    with temp_store_path() as path:
        with opened(impl, path):
            pass
        prefill(path, last, total, dict(window))
        saved = model.Store(last, total, dict(window))
        for number in range(1, reopens + 1):
            with opened(impl, path) as con:
                model.expect(model.outcome_of(impl, impl.state, con), model.open_store(path, saved),
                             f"open_store(path) on a store at last={last}, total={total}, reopened {number} time(s), "
                             "then state(con)")
            store_files.expect(path, saved, f"the store, reopened {number} time(s)")


def refuses(con, sql):
    """``"refused"`` if the statement fails on a constraint (and so changes nothing), else ``"accepted"``."""
    try:
        con.execute(sql)
    except sqlite3.IntegrityError:
        return "refused"
    return "accepted"


# Rows that probe each table's keys and constraints, in order, in one transaction: another
# checkpoint id, a second row id 1, a NULL cursor or total; a ledger row, then its seq again, a NULL delta.
PROBES = [("checkpoint", "INSERT INTO checkpoint(id, last, total) VALUES (2, 0, 0)"),
          ("checkpoint", "INSERT INTO checkpoint(id, last, total) VALUES (1, 0, 0)"),
          ("checkpoint", "UPDATE checkpoint SET last = NULL WHERE id = 1"),
          ("checkpoint", "UPDATE checkpoint SET total = NULL WHERE id = 1"),
          ("ledger", "INSERT INTO ledger(seq, delta) VALUES (5, 1)"),
          ("ledger", "INSERT INTO ledger(seq, delta) VALUES (5, 2)"),
          ("ledger", "INSERT INTO ledger(seq, delta) VALUES (6, NULL)")]


def test_the_tables_have_specs_columns_keys_and_constraints(impl, tmp_path):
    """The tables open_store makes are SPEC.md's: the columns, types and keys that SPEC's own schema
    gives (``model.spec_store``), and the same rows refused. Never by comparing SQL text."""
    path = str(tmp_path / "store.db")
    with opened(impl, path):
        pass
    with contextlib.closing(busy.connect(path, isolation_level=None)) as own, \
            contextlib.closing(model.spec_store()) as specs:
        for table, clause in model.TABLE_CLAUSES.items():
            if model.columns(own, table) != model.columns(specs, table):
                model.differs(f"PRAGMA table_info({table}) on a new store (name, type, NOT NULL, key)",
                              model.columns(specs, table), model.columns(own, table), clause)
        own.execute("BEGIN")
        specs.execute("BEGIN")
        for table, sql in PROBES:
            expected, got = refuses(specs, sql), refuses(own, sql)
            if got != expected:
                model.differs(f"{sql} on a new store", expected, got, model.TABLE_CLAUSES[table])
        own.execute("ROLLBACK")


def test_the_connection_is_autocommit_with_a_one_second_busy_timeout(impl, tmp_path):
    path = str(tmp_path / "store.db")
    for store in ("a new store", "the store it made before"):  # creating the store, and reopening it
        with opened(impl, path) as con:
            for what, expected, got in model.connection_settings(con):
                if got != expected:
                    model.differs(f"open_store(path) on {store}, then {what}", expected, got,
                                  model.CONNECTION_CLAUSES[what])


def test_a_new_store_another_connection_holds_locked_raises_within_the_busy_timeout(impl, tmp_path):
    """Decision 3's 1 s timeout is the connect's, so it bounds initialisation too: creating a new
    store's tables under another connection's write lock raises OperationalError within that
    1 s, not after sqlite3's default 5 s (a busy timeout set only once the tables are made);
    at once is allowed (SQLite gives up at once where waiting could deadlock: a reader that
    wants to write, as a change of journal mode does). The connection is closed before the
    error propagates. One example: it may wait 1 s."""
    path = str(tmp_path / "store.db")
    what = "open_store(path) at a new path while another connection holds the write lock"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        own = leaks.descriptors_on(path)
        started = time.monotonic()
        got = model.outcome_of(impl, impl.open_store, path)
        waited = time.monotonic() - started
        model.expect(got, model.open_store(path, locked=True), what)
        if waited >= 2 * model.BUSY_TIMEOUT:
            model.differs(f"{what}, its busy timeout {model.BUSY_TIMEOUT:g} s",
                          f"raises within {model.BUSY_TIMEOUT:g} s", f"raises after {waited:.2f} s",
                          model.OBSERVED["busy wait of open_store"])
        # SQLite closes a closed connection's descriptor only once no connection of the
        # process holds a lock on the file (POSIX locks are per process): the lock first.
        other.execute("ROLLBACK")
        if leaks.descriptors_on(path) != own:  # while ``got`` holds the error and its frames
            model.differs(what, "the connection closed first", "the store file still open: the connection was never closed",
                          "S2.close-on-failure")


_ERRORS = {kind: st.sampled_from(errors) for kind, errors in statements.ERRORS.items()}


@pytest.mark.parametrize("kind", sorted(statements.ERRORS))
@given(start=arguments.store_states(), new=st.booleans(), n=st.integers(1, 12), data=st.data())
def test_a_failure_at_any_statement_of_open_store_propagates_and_changes_nothing(impl, kind, start, new, n, data):
    """"If initialisation fails, close the connection and let the error propagate": the n-th
    statement of open_store raises an error of each class (``resume.testing.drivers.statements``, a
    FAKE), at a new path or on a store that may hold events; the error propagates, no
    descriptor is left on the file, and the next open_store finds the store as it was (a
    new one, whatever a failed first open left)."""
    error = model.drawn_error(data.draw(_ERRORS[kind], label="error"), "a FAKE failure of a statement")
    new = new and start.last == model.LAST_MIN
    with temp_store_path() as path:
        if not new:
            impl.open_store(path).close()
            prefill(path, start.last, start.total, start.ledger)
        with statements.failing_connections(n, error) as fired:
            got = model.outcome_of(impl, impl.open_store, path)
        what = "open_store(path) at a new path" if new else \
            f"open_store(path) on a store at last={start.last}, total={start.total}"
        if fired:
            what += f", where its statement number {n} raises {error!r}"
        if isinstance(got, model.Returned):  # a connection: its state is what the model predicts
            with contextlib.closing(got.value) as con:
                got = model.outcome_of(impl, impl.state, con)
        predicted = model.open_store(path, start, fired[0] if fired else None)
        model.expect(got, predicted, what)
        if isinstance(got, model.Raised) and leaks.descriptors_on(path):  # while ``got`` holds its frames
            model.differs(f"{what}: the connection", "closed before the error propagates",
                          "the store file still open: the connection was never closed", predicted.clause)
        del got
        with opened(impl, path) as con:
            model.expect(model.outcome_of(impl, impl.state, con), model.open_store(path, start),
                         f"{what}; then open_store(path) again, and state(con)")
        store_files.expect(path, start, f"{what}: the store, read by another connection")


@pytest.mark.parametrize("form", arguments.PATH_FORMS)
@searching(max(5, settings.default.max_examples // 5))  # most forms draw nothing but delta
@given(data=st.data(), delta=st.integers(model.DELTA_MIN, model.DELTA_MAX))
def test_any_path_opens_the_store_the_model_predicts_and_keeps_it_where_it_says(impl, form, data, delta):
    """Every form of ``path`` (``arguments.paths``): the outcome is the model's (``model.open_store``);
    a store at a file is that very file and is there again on the next open; a store that forgets
    (``:memory:``, ``""``) starts new each time; an unusable path raises and leaves no connection."""
    _, make = data.draw(arguments.paths(form), label="path")
    with tempfile.TemporaryDirectory(prefix="resume-path-", dir=store_files.fast_tmp()) as folder, contextlib.chdir(folder):
        path = make(folder)
        kept = store_files.ledger_rows(os.fsdecode(path)) if model.path_kind(path) == model.PATH_FILE else {}
        predicted = model.open_store(path)  # the state of the store it opens, or the error
        got = model.outcome_of(impl, impl.open_store, path)
        what = f"open_store({path!r}) on {arguments.path_said(form)}, then state(con)"
        if isinstance(got, model.Raised) or isinstance(predicted, model.Raised):
            model.expect(got, predicted, what)
            if leaks.descriptors_on(os.fsdecode(path)):  # while ``got`` holds the error and its frames
                model.differs(f"open_store({path!r}) raised {got.kind}", "the connection closed first",
                              "the store file still open: the connection was never closed", "S2.close-on-failure")
            return
        con = got.value
        try:
            read_state = model.outcome_of(impl, impl.state, con)
            missing = store_files.missing_parts(os.fsdecode(path)) if model.path_kind(path) == model.PATH_FILE else set()
            if isinstance(read_state, model.Raised) and missing:  # it returned a store it left incomplete
                predicted = model.with_instead(predicted, raises=model.incomplete(missing))
            model.expect(read_state, predicted, what)
            applied = model.outcome_of(impl, store_files.commit_event, con, 0, delta)
            if isinstance(applied, model.Raised):  # the store it opened cannot be written: not the one at the path
                model.differs(f"{what}; event (0, {delta}) committed through con", "the event committed",
                              model.plain(applied), model.OBSERVED["path as given"])
        finally:
            con.close()
        expected = model.Store(ledger=kept, because=model.OBSERVED["path as given"])  # the rows it found are kept
        if model.path_kind(path) == model.PATH_FILE:
            expected.apply_event(0, delta)
            expected.because = model.OBSERVED["path as given"]  # the store is the file at that very path
            store_files.expect(os.fsdecode(path), expected, f"{what}; event (0, {delta}) committed through con: the file at the path itself")
        again = model.outcome_of(impl, impl.open_store, path)
        what += f"; event (0, {delta}) committed through con; then open_store({path!r}) again, and state(con)"
        if isinstance(again, model.Returned):
            with contextlib.closing(again.value) as con:
                again = model.outcome_of(impl, impl.state, con)
        if again != model.Returned(expected.state()):
            found = read(os.fsdecode(path)) if model.path_kind(path) == model.PATH_FILE else None
            model.differs(what, model.Returned(expected.state()), model.plain(again),
                          expected.blame(found) if found is not None else expected.because,
                          raised=getattr(again, "error", None))


test_any_path_opens_the_store_the_model_predicts_and_keeps_it_where_it_says_first_look = first_look(
    test_any_path_opens_the_store_the_model_predicts_and_keeps_it_where_it_says,
    data=st.data(), delta=st.integers(model.DELTA_MIN, model.DELTA_MAX))




@settings(max_examples=max(3, settings.default.max_examples // 5))
@given(last=st.sampled_from([model.LAST_MIN, model.SEQ_MAX - 1]) | st.integers(model.LAST_MIN, model.SEQ_MAX - 1),
       total=st.integers(-(10**6), 10**6), delta=st.integers(model.DELTA_MIN, model.DELTA_MAX).filter(bool))
def test_state_reads_one_snapshot_while_another_connection_commits(impl, last, total, delta):
    """"``state(con)`` returns the tuple ``(last, total)``": a pair the store held. At each of its
    first statements in turn (sqlite3's trace callback on the test's own connection, as step 3's
    race), a second connection applies ``last + 1``: the pair read is the store before that
    commit or after it, never the cursor of one with the total of the other."""
    for at in range(3):
        with temp_store_path() as path, opened(impl, path) as con, opened(impl, path) as other:
            prefill(path, last, total)
            other.execute("PRAGMA busy_timeout = 0")  # a read lock held by state: fail at once, not wait
            acted = []

            def on_statement(sql):
                if len(acted) < 1 and on_statement.seen == at:
                    acted.append(model.outcome_of(impl, store_files.commit_event, other, last + 1, delta))
                on_statement.seen += 1

            on_statement.seen = 0
            con.set_trace_callback(on_statement)
            try:
                got = model.outcome_of(impl, impl.state, con)
            finally:
                con.set_trace_callback(None)
            world = model.Store(last, total)
            snapshots = [model.Returned(world.state())]
            world.apply_event(last + 1, delta)
            snapshots.append(model.Returned(world.state()))
            if got not in snapshots:
                model.differs(f"state(con) on a store at last={last}, total={total}, while another connection "
                              f"commits event ({last + 1}, {delta}) as its statement #{at} starts",
                              f"{snapshots[0]} or {snapshots[1]}", model.plain(got), model.OBSERVED["state read"])
