"""Stores other writers made: ``open_store`` keeps them, and the receiver carries on exactly once.

* A store laid down with raw sqlite3 in SPEC.md's schema
  (``resume.testing.strategies.foreign_stores.foreign_stores``: any valid checkpoint, up to the
  top of the seq range; a ledger with its older rows trimmed; the tables in
  either order, spelled as SPEC.md does or otherwise; any journal mode): ``open_store`` keeps the schema, the
  checkpoint and every ledger row; ``state`` reads them; then applying a run
  through ``apply_event`` and ``consume_line`` follows the model (``model.Store``)
  from that checkpoint: kept rows are duplicates, a trimmed seq at or below
  the cursor is Conflict (SPEC.md decision 6), the next seq applies once.
* The leftovers of a writer killed mid-commit (real ones, in the store's
  journal mode: a hot journal and uncommitted pages in the file, or
  uncommitted WAL frames; ``foreign_stores.killed_mid_commit``): after
  ``open_store`` the store is exactly what it was before that writer began
  (SQLite's own recovery undid it); the next event applies once, its
  duplicate does not.
"""

import contextlib

from hypothesis import given, note, settings
from hypothesis import strategies as st

from resume.testing import model
from resume.testing.strategies import runs, foreign_stores
from resume.testing.drivers import store_files


def _read_all(path):
    return store_files.read(path), foreign_stores.schema(path)


@given(foreign=foreign_stores.foreign_stores(), plan=runs.plans(max_size=4),
       via=st.sampled_from(["apply_event", "consume_line"]))
def test_a_store_another_writer_made_is_kept_and_continued_exactly_once(impl, foreign, plan, via):
    with store_files.temp_store_path() as path:
        foreign_stores.lay_down(path, foreign)
        before = _read_all(path)
        expected = model.Store(foreign.last, foreign.total, foreign.ledger())
        opened = model.outcome_of(impl, impl.open_store, path)
        if isinstance(opened, model.Raised):  # a store of SPEC's schema, spelled otherwise, is kept
            model.expect(opened, model.open_store(path, expected), "open_store on a store another writer made")
        with contextlib.closing(opened.value) as con:
            model.expect(model.outcome_of(impl, impl.state, con), model.open_store(path, expected),
                         "open_store on a store another writer made, then state(con)")
            if _read_all(path) != before:
                model.differs("open_store on a store another writer made: its tables and rows", "left as they were",
                              "changed", "S2.create-once")
            lines = []
            if foreign.trimmed > 0:
                # The newest trimmed seq: its content cannot be shown to be the same (decision 6).
                lines.append(runs.Line(model.frame(foreign.trimmed - 1, 0), foreign.trimmed - 1, 0))
            lines += runs.frames_of(plan, start=expected)
            if via == "apply_event":
                lines = [line for line in lines if line.seq is not None]
            note(f"{len(lines)} lines after the foreign store's cursor {foreign.last}")
            for index, line in enumerate(lines):
                got, predicted = runs.give(impl, con, expected, line, via)
                model.expect(got, predicted, f"line {index} {line.frame!r} through {via}")
                store_files.expect_at_rest(impl, con, expected, f"line {index} {line.frame!r} through {via}")
        store_files.expect(path, expected, f"the store another writer made, after {len(lines)} lines through {via}")
        with store_files.opened(impl, path) as con:  # and once more: reopening keeps it too
            model.expect(model.outcome_of(impl, impl.state, con), model.open_store(path, expected),
                         "then open_store on it once more, and state(con)")


# A child process per example (~0.1 s): fewer examples than the profile's.
@settings(max_examples=max(4, settings.default.max_examples // 5))
@given(foreign=foreign_stores.foreign_stores(max_kept=40, max_last=model.SEQ_MAX - 400),
       rows=st.integers(1, 300), by_impl=st.booleans())
def test_a_store_left_by_a_writer_killed_mid_commit_is_recovered_whole(impl, foreign, rows, by_impl):
    with store_files.temp_store_path() as path:
        if by_impl:  # the store made by the implementation itself, then a few events
            foreign = foreign_stores.Foreign(-1, 0, (), "checkpoint", True, "SPEC.md's", "delete")
            with store_files.opened(impl, path):
                pass
        else:
            foreign_stores.lay_down(path, foreign)
        before = store_files.read(path)
        note(f"the killed writer left {foreign_stores.killed_mid_commit(path, rows)} (bytes per file)")
        recovered = model.Store(*before.state, dict(before.ledger), because="S3.rollback")  # the kill: a failure
        what = "open_store on a store whose writer was killed mid-commit (the store as it was before that writer began)"
        with store_files.opened(impl, path) as con:
            store_files.expect_at_rest(impl, con, recovered, what, path)
            seq = foreign.last + 1
            for _ in range(2):  # the next event, then the same again: a duplicate
                model.expect(model.outcome_of(impl, impl.apply_event, con, seq, 5), recovered.apply_event(seq, 5),
                             f"{what}; apply_event(con, {seq}, 5)")
                store_files.expect_at_rest(impl, con, recovered, f"{what}; apply_event(con, {seq}, 5)", path)
