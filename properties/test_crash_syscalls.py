"""Crash anywhere: a receiver killed at every system call of a short session, and sick disks.

The session: a fresh store on a real disk folder, the real publisher sending
events 0, 1 and 2, then event 1 again (a duplicate, after the log). A dry run
under strace counts its crash points (resume/testing/drivers/crash.py): every
``pwrite64`` and ``fdatasync`` on the store, every ``sendto`` (RESUME, ACKs)
and ``recvfrom`` (a kill there is a kill just after the previous ACK left).
Then, for each point, a new receiver is killed with SIGKILL on entering that
call; the store must be fully old or fully new (``total == SUM(ledger)``, the
ledger exactly ``0..last``, nothing published otherwise, every ACK the
publisher got is committed); then a new receiver (in the test's own process:
the killed one was the real process) resumes to the end of the log,
recognising the resent duplicate, and the store must hold each event exactly
once.

I/O faults: the same session with ``EIO`` or ``ENOSPC`` injected at one
``pwrite64`` or ``fdatasync``: the receiver must fail with SQLite's error
(its process exits non-zero, no traceback swallowed), must not ACK the event
whose commit failed, must leave the store consistent, and a later clean
session must finish exactly once. A fault that never reaches the receiver as
an error (SQLite retried the call, or the failed statement was one whose
outcome SPEC.md leaves open, such as a journal-mode change, and sqlite3 never
reported it) is no breach if that session finishes exactly as without it.

Every point under ``ci`` and ``fuzz``; under ``dev`` a sample: the middle
store call of open_store, and the point of the first event's commit where
the store file is half written (a few seconds).
Without a working strace the tests skip, naming the install command; with
``CI`` set a missing strace is an error.
"""

import asyncio
import os

import pytest
import pytest_asyncio
from hypothesis import settings

from resume.publisher import Publisher
from resume.testing.drivers import crash, receiver
from resume.testing import model

LOG = [(0, 5), (1, 7), (2, -3)]
DUPLICATE = b"EVENT 1 7\n"  # sent again after the log: the receiver must ACK it and change nothing
ACKS = [0, 1, 2, 1]  # a whole session's ACKs: the log's, then the duplicate's
FINAL = f"last={LOG[-1][0]} total={sum(delta for _, delta in LOG)}"  # what a receiver prints at the end
SESSION = ("run_client(host, port, path, timeout) in a receiver process, the publisher sending EVENT 0 5, "
           "EVENT 1 7, EVENT 2 -3, then EVENT 1 7 again")
# ci (100 examples) and fuzz (2000; the fuzz job caps its rounds lower): every point; dev (25): a sample.
EXHAUSTIVE = settings.default.max_examples >= 100 or settings.get_current_profile_name() in ("ci", "fuzz")


async def session(impl, db, point=None, *, then_resume=False):
    """The short session under strace with ``point`` injected, then (if asked) a clean
    receiver resuming from the same store with the same publisher (whose own ACK cursor
    goes on), in this process: ``(run, publisher, after_crash, resumed)``.

    ``after_crash`` is what was wrong with the store right after the first
    process ended; ``resumed`` is ``(returncode, stderr, the publisher's ACK cursor and
    the store's cursor before it started)``.
    """
    async with Publisher(LOG) as publisher:
        publisher.plan(raw=DUPLICATE)
        run = await crash.run(impl.__file__, publisher.port, db, point)
        await publisher.idle()
        after_crash = crash.consistency(db, dict(LOG), publisher.acks)
        resumed = None
        if then_resume and not after_crash:
            acked, stored = publisher.acked, crash.read_store(db)[0]
            code, _, err = await receiver.run_here(impl, publisher.port, db)
            await publisher.idle()
            resumed = code, err, acked, stored
    return run, publisher, after_crash, resumed


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dry_run(impl):
    """The session with nothing injected: its trace names every crash point."""
    crash.require_strace()
    with crash.disk_folder() as folder:
        run, publisher, _, _ = await session(impl, os.path.join(folder, "store.db"))
    assert run.returncode == 0, run.err
    assert publisher.acks == ACKS, publisher.sessions
    # A sweep over nothing would pass: every kind must show up in the trace.
    missing = [kind for kind in crash.KINDS if not run.count(kind)]
    assert not missing, f"no {missing} calls read from strace's trace: {run.calls[:5]}"
    return run


def sample(run, kinds):
    """Every point of ``kinds`` under ci/fuzz; under dev two store calls (see below)."""
    points = run.points(kinds)
    if EXHAUSTIVE:
        return points
    store_calls = [p for p in points if p.kind in crash.STORE_KINDS]
    # The middle call of open_store (between two statements, if it commits
    # several), and the point of event 0's commit where the store file itself
    # is half written (its last pwrite64: the pages before it are on the
    # file, so only the journal can undo them), else that commit's middle
    # call. Kills at sendto and recvfrom: the state machine's draws, and ci/fuzz.
    opening = [p for p in store_calls if run.phase(p) == "open_store"]
    commit = [p for p in store_calls if run.phase(p) == "event 0's commit"]
    in_place = [p for p in commit
                if p.kind == "pwrite64" and os.path.basename(run.call(p).path or "") == "store.db"]
    chosen = opening[len(opening) // 2:][:1]
    chosen += in_place[-1:] or commit[len(commit) // 2:][:1]
    return chosen


def last_line(text):
    """The last line of a receiver's stderr: the exception that ended it, if any."""
    return (text.strip().splitlines() or [""])[-1]


async def explore(impl, run, point):
    """Kill (or fault) the session at ``point``, check, resume, check again; return the problems."""
    log = dict(LOG)
    where = run.describe(point)
    with crash.disk_folder() as folder:
        db = os.path.join(folder, "store.db")
        hit, publisher, after_crash, resumed = await session(impl, db, point, then_resume=True)
        if point.fault == "KILL":
            if hit.returncode != receiver.KILLED:
                return [f"{where}: the receiver was not killed (exit {hit.returncode}): {hit.err[-500:]}"]
        elif hit.returncode == 0:
            # No error reached the receiver: the fault was absorbed below it (SQLite
            # retried the call, or the statement that failed was one whose outcome is
            # the implementation's choice, such as a journal-mode change, and sqlite3
            # never reported it). No breach if the session went exactly as with no
            # fault: every line ACKed, the log's final state returned, the store
            # consistent (checked below). An error swallowed by the implementation
            # shows as an ACK missing, an ACK for an event not stored, or a wrong state.
            if publisher.sessions[0].acks != ACKS or hit.out.strip() != FINAL:
                return [model.Problem(f"{where}: the receiver ended normally, yet its session got ACKs "
                                      f"{publisher.sessions[0].acks} (not {ACKS}) and printed {hit.out.strip()!r} "
                                      f"(not {FINAL!r}): an error was swallowed", "S7.propagate")]
        elif hit.returncode == receiver.KILLED or not last_line(hit.err).startswith("sqlite3."):
            return [model.Problem(f"{where}: the receiver did not fail with SQLite's error "
                                  f"(exit {hit.returncode}): {hit.err[-500:]}", "S7.propagate")]
        if after_crash:
            # Torn by the crash: the killed transaction was not rolled back (step 3's failure).
            return [model.Problem(f"{where}: {p}", "S3.rollback" if p.clause == "S3.one-transaction" else p.clause)
                    for p in after_crash]
        code, err, acked, stored = resumed
        if code != 0:
            return [f"{where}, the resuming receiver failed (exit {code}): {last_line(err)}"]
        problems = crash.consistency(db, log, publisher.acks)
        last, _, _ = crash.read_store(db)
        if last != LOG[-1][0]:
            problems.append(f"the resumed store ends at {last}, not {LOG[-1][0]}")
        again = publisher.sessions[-1]
        if again.cursor != stored:
            problems.append(f"the resuming receiver sent RESUME {again.cursor}, its store holds {stored}")
        # Every event from the publisher's own cursor on, the resent one first,
        # and the duplicate if the crashed receiver never connected to take it.
        expected = list(range(acked + 1, LOG[-1][0] + 1)) + ([1] if again.plan.raw else [])
        if again.acks != expected:
            problems.append(f"the resumed session (RESUME {again.cursor}) got ACKs {again.acks}, not {expected}")
        return [f"{where}: after resuming, {p}" for p in problems]


# Points explored at once: each is a few processes (strace, a receiver, another), whose start-up is
# most of a point's cost, so the cores share the sweep; the verdict is the same in any order.
AT_ONCE = os.cpu_count() or 1


async def sweep(impl, run, points, expected):
    """Explore each point, AT_ONCE at a time; the first (in the points' order) that breaks is the
    counterexample, reported as the learner reads it."""
    for start in range(0, len(points), AT_ONCE):
        chunk = points[start:start + AT_ONCE]
        found = await asyncio.gather(*(explore(impl, run, point) for point in chunk))
        for point, problems in zip(chunk, found):
            if not problems:
                continue
            where = run.describe(point)
            # A torn store names its clause (model.Problem); a resumed session that applied twice, the lab's.
            clause = next((p.clause for p in problems if isinstance(p, model.Problem)),
                          model.OBSERVED["applied once"])
            model.differs(f"{SESSION}, {where}; then the store, and a new receiver resuming", expected,
                          "; ".join(problem.removeprefix(where).lstrip(",: ") for problem in problems), clause)


def summary(run, points):
    kinds = ", ".join(f"{kind} {sum(p.kind == kind for p in points)}" for kind in crash.KINDS)
    return f"crash points: explored {len(points)} of {len(run.points())} ({kinds})"


@pytest.mark.asyncio(loop_scope="module")
async def test_every_crash_point_of_a_short_session_leaves_the_store_consistent_and_exactly_once(
        impl, dry_run, capsys):
    points = sample(dry_run, crash.KINDS)
    with capsys.disabled():
        print("\n" + summary(dry_run, points))
    await sweep(impl, dry_run, points, "all or nothing of each event (total = SUM(ledger), the ledger exactly "
                "seqs 0..last, every ACKed event in it), then the resumed session applying each event exactly once")


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("fault", crash.FAULTS)
async def test_an_io_error_at_any_store_call_fails_loudly_acks_nothing_uncommitted_and_a_new_session_finishes(
        impl, dry_run, fault, capsys):
    # SQLite ignores a failed sync of the store's FOLDER (made once, after it
    # creates the first journal) by design; faults go to the store's files.
    points = [crash.Point(p.kind, p.index, fault) for p in sample(dry_run, crash.STORE_KINDS)
              if os.path.basename(dry_run.call(p).path or "").startswith("store.db")]
    if not EXHAUSTIVE:
        points = points[:1]  # dev: one fault of each errno
    with capsys.disabled():
        print(f"\n{fault} injected: explored {len(points)} of {len(dry_run.points(crash.STORE_KINDS))} store calls")
    await sweep(impl, dry_run, points, "SQLite's error from the receiver, no ACK of an event not committed, the "
                "store consistent, then the resumed session applying each event exactly once")
