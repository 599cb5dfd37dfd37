"""The power-cut tools of resume/testing/drivers/power.py: the persistence model and strace's lines, without strace.

A hand-made trace (the ops a rollback-journal commit makes) is rebuilt at
each cut: what an fsync makes durable stays in every state, what it does not
may be lost, a prefix per file and per folder; the pessimistic state loses
all of it. strace's ``-y -xx`` lines are read into the same ops.
"""

import os

from resume.testing.drivers import power

J, D = "store.db-journal", "store.db"


def _commit_trace(folder_synced_after_unlink):
    """A journal commit: journal created, written, synced, folder synced; store written, synced; journal unlinked."""
    ops = [
        power.Op("create", 1, J, 1),
        power.Op("write", 1, J, 1, 0, b"old page"),
        power.Op("fsync", 1, J, 1),
        power.Op("fsync", 1),  # the folder: the journal's entry is durable
        power.Op("write", 1, D, ("initial", D), 0, b"new page"),
        power.Op("fsync", 1, D, ("initial", D)),
        power.Op("unlink", 1, J, 1),
    ]
    if folder_synced_after_unlink:
        ops.append(power.Op("fsync", 1))
    ops.append(power.Op("ack", 1, offset=0))
    return power.Trace(ops, {D: b"old page"}, [], [(0, 1)])


def test_an_unlink_not_followed_by_a_folder_sync_may_be_undone():
    trace = _commit_trace(folder_synced_after_unlink=False)
    cut = len(trace.ops)
    assert trace.choices(cut) == {power.FOLDER: 1, 1: 0, ("initial", D): 0}
    assert trace.rebuild(cut) == {D: b"new page", J: b"old page"}  # the hot journal is back
    assert trace.rebuild(cut, {power.FOLDER: 1}) == {D: b"new page"}
    assert [str(op) for op in trace.lost(cut)] == [f"the unlink of {J}"]
    assert list(trace.states(cut)) == [{power.FOLDER: 0}, {power.FOLDER: 1}]
    assert trace.bound(cut) == 0 and trace.acks() == [(cut, 0)]


def test_a_folder_sync_after_the_unlink_leaves_one_state():
    trace = _commit_trace(folder_synced_after_unlink=True)
    cut = len(trace.ops)
    assert set(trace.choices(cut).values()) == {0}
    assert trace.rebuild(cut) == {D: b"new page"}


def test_writes_not_synced_are_kept_as_a_prefix_and_a_truncation_extends_with_zeros():
    ops = [power.Op("create", 1, "f", 1), power.Op("write", 1, "f", 1, 0, b"ab"), power.Op("fsync", 1, "f", 1),
           power.Op("fsync", 1), power.Op("write", 1, "f", 1, 4, b"cd"), power.Op("truncate", 1, "f", 1, 3)]
    trace = power.Trace(ops, {}, [], [])
    assert trace.choices(6)[1] == 2
    assert [trace.rebuild(6, {1: keep})["f"] for keep in range(3)] == [b"ab", b"ab\0\0cd", b"ab\0"]
    assert trace.rebuild(1) == {}  # the file's entry is not durable before the folder's fsync


def test_strace_lines_become_ops(tmp_path):
    folder = os.path.realpath(tmp_path)

    def hexed(text):
        return "".join(f"\\x{byte:02x}" for byte in text.encode())

    db, journal = f"{folder}/store.db", f"{folder}/store.db-journal"
    lines = [
        f'7 openat(AT_FDCWD<{hexed("/")}>, "{hexed(journal)}", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 4<{hexed(journal)}>',
        f'7 pwrite64(4<{hexed(journal)}>, "{hexed("page")}", 4, 512) = 4',
        f'7 fdatasync(4<{hexed(journal)}>) = 0',
        f'7 openat(AT_FDCWD<{hexed("/")}>, "{hexed(folder)}", O_RDONLY|O_CLOEXEC) = 5<{hexed(folder)}>',
        f'7 fdatasync(5<{hexed(folder)}>) = 0',
        f'7 unlink("{hexed(journal)}") = 0',
        f'7 sendto(6<{hexed("socket:[1]")}>, "{hexed("ACK 3" + chr(10))}", 6, 0, NULL, 0) = 6',
        f'7 openat(AT_FDCWD<{hexed("/")}>, "{hexed(db)}", O_RDWR|O_CREAT, 0644) = -1 EACCES (Permission denied)',
    ]
    ops = power._Reader(folder, {}).read(1, "\n".join(lines))
    assert [op.kind for op in ops] == ["create", "write", "fsync", "fsync", "unlink", "ack"]
    assert (ops[1].name, ops[1].offset, ops[1].data) == ("store.db-journal", 512, b"page")
    assert ops[3].inode is None and ops[5].offset == 3


def test_a_rename_not_followed_by_a_folder_sync_may_be_undone():
    ops = [power.Op("create", 1, "tmp", 1), power.Op("write", 1, "tmp", 1, 0, b"new"), power.Op("fsync", 1, "tmp", 1),
           power.Op("rename", 1, "tmp", 1, target="f")]
    trace = power.Trace(ops, {"f": b"old"}, [], [])
    assert [trace.rebuild(4, {power.FOLDER: keep}) for keep in range(3)] == [
        {"f": b"old"}, {"f": b"old", "tmp": b"new"}, {"f": b"new"}]
