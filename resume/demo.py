"""``resume demo``: the lab's crash between commit and ACK, for real, with every claim checked.

A publisher on loopback serves four events. Receiver 1, a real process
(``resume consume``), commits event 1 and is killed with SIGKILL before it
sends ``ACK 1``. Receiver 2, a new process on the same store file, resumes:
the publisher sends event 1 again (delivery is at least once), receiver 2
ACKs it as a duplicate without applying it twice, and takes the rest.

Each sentence the demo prints about what happened is checked against what
the publisher recorded and what the store holds, and marked ``ok`` or
``FAIL``; the exit code is 0 only if every one held (1: the recovery failed).
The store is read through the harness's read-only reader
(``resume.testing.drivers.store_files``), never through the implementation.
"""

import os
import sqlite3
import tempfile

from resume.publisher import Plan, Publisher, Session
from resume.testing.drivers import receiver, store_files

LOG = [(0, 5), (1, 7), (2, -3), (3, 10)]
CRASH_AT = 1


def _seq(line):
    return int(line.split()[1])


def _show_session(session, cursor_before):
    """Print one session line by line; events at or below the store's cursor are duplicates."""
    print(f"  receiver -> RESUME {session.cursor}"
          + ("   (-1: an empty store, nothing applied yet)" if session.cursor == -1 else
             f"   (its store's cursor: event {session.cursor} is the last one applied)"))
    for index, line in enumerate(session.sent):
        seq = _seq(line)
        acked = f"ACK {seq}" if seq in session.acks[index:index + 1] else "no ACK"
        note = ""
        if seq <= cursor_before:
            note = "   duplicate: already in the store, ACKed again, not applied again"
        print(f"  publisher -> {line.decode().strip():<14} receiver -> {acked}{note}")
    print(f"  publisher ends the session: {session.end}")


async def run(impl_path, keep=False):
    """Run the demo against the file ``impl_path``; return the exit code (0 or 1)."""
    folder = tempfile.mkdtemp(prefix="resume-demo-")
    db = os.path.join(folder, "store.db")
    try:
        checks = await _scenario(impl_path, db, keep)
    finally:
        if not keep:
            _remove(folder)
    print()
    for text, ok in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {text}")
    held = all(ok for _, ok in checks)
    print("\nrecovery held: nothing was lost, nothing was applied twice." if held
          else "\nrecovery did NOT hold: see the FAIL lines above.")
    if keep:
        print(f"\nthe store is kept: {db}\n"
              f"  look inside: sqlite3 {db} 'SELECT * FROM checkpoint; SELECT * FROM ledger'")
    return 0 if held else 1


def _read(db):
    """The store as a Snapshot; an empty one if there is no readable store (a receiver failed)."""
    try:
        found = store_files.read(db)
        if found.state is not None:
            return found
    except (sqlite3.Error, store_files.busy.LockLeft):
        pass
    return store_files.Snapshot((None, None), {})


def _last_session(publisher, count):
    """The session the receiver just had; an empty one if it never got that far."""
    return publisher.sessions[-1] if len(publisher.sessions) == count else Session(Plan(), end="none")


def _remove(folder):
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    os.rmdir(folder)


async def _scenario(impl_path, db, keep):
    total = sum(delta for _, delta in LOG)
    async with Publisher(LOG) as publisher:
        print(f"publisher on 127.0.0.1:{publisher.port}, log (seq, delta) {LOG}")
        print(f"store {db} ({'kept afterwards' if keep else 'removed at the end; --keep keeps it'})")
        print(f"implementation {impl_path}\n")

        print(f"receiver 1: to be killed with SIGKILL after committing event {CRASH_AT}, "
              "before sending its ACK")
        code1, _, err1 = await receiver.run(impl_path, publisher.port, db, crash_before_ack=CRASH_AT)
        await publisher.idle()
        first = _last_session(publisher, 1)
        _show_session(first, -1)
        after_crash = _read(db)
        how = "killed by SIGKILL" if code1 == receiver.KILLED else f"exit {code1}: {err1.strip()}"
        print(f"  receiver 1: {how}; the store holds (last, total) = "
              f"({after_crash.last}, {after_crash.total}), ledger {after_crash.ledger}\n")

        print("receiver 2: a new process on the same store")
        code2, out2, err2 = await receiver.run(impl_path, publisher.port, db)
        await publisher.idle()
        second = _last_session(publisher, 2)
        _show_session(second, -1 if after_crash.last is None else after_crash.last)
        print(f"  receiver 2: exit {code2}; {out2.strip() or err2.strip()}")

    final = _read(db)
    resent = [_seq(line) for line in second.sent]
    return [
        (f"receiver 1 was killed by SIGKILL (exit {code1})", code1 == receiver.KILLED),
        (f"it died after committing event {CRASH_AT}: the store's cursor was {after_crash.last}, "
         f"its ledger {after_crash.ledger}",
         after_crash.last == CRASH_AT and list(after_crash.ledger.items()) == LOG[:CRASH_AT + 1]),
        (f"and before ACK {CRASH_AT}: the publisher read the ACKs {first.acks}",
         first.acks == list(range(CRASH_AT))),
        (f"the RESUME lines were {publisher.resumes}: -1 from the empty store, then {CRASH_AT}",
         publisher.resumes == [-1, CRASH_AT]),
        (f"event {CRASH_AT} was sent again (delivery is at least once): session 2 sent {resent}",
         resent[:1] == [CRASH_AT]),
        (f"the duplicate was ACKed: session 2's ACKs {second.acks}",
         second.acks[:1] == [CRASH_AT]),
        (f"and not applied again: the ledger {final.ledger} holds each event once",
         list(final.ledger.items()) == LOG),
        (f"total {final.total} == the sum of the deltas {total}", final.total == total),
        (f"cursor {final.last} == the last seq {LOG[-1][0]}", final.last == LOG[-1][0]),
        (f"receiver 2 ended normally (exit {code2})", code2 == 0),
    ]
