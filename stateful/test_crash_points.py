"""A state machine that kills the receiver at a crash point Hypothesis draws, and resumes.

Real parts: a store file on a real disk folder, the real publisher on a
loopback port, receiver processes (resume/testing/drivers/receiver.py) run under
strace (resume/testing/drivers/crash.py). Rules publish events, and crash a receiver
at a point drawn as (syscall kind, index): SIGKILL on entering the
``index``-th ``pwrite64``, ``fdatasync``, ``sendto`` or ``recvfrom`` of its
session; then a new receiver takes over the same store, to the end of the log
(in the test's own process: the killed one was the real process).
A failure shrinks toward the first kind and the smallest index, and the note
says where the receiver died, read from its own trace ("killed at fdatasync
#2, during event 1's commit").

After every step: the store is fully old or fully new for every event
(``total == SUM(ledger)``, the ledger exactly ``0..last`` as published), and
every ACK the publisher received is for a committed event. After each
takeover: the new receiver ends cleanly at the end of the log, having sent
the RESUME line and the ACKs that the model's ``run_client`` predicts on the
store the crash left, for the lines the publisher sent.

Each crash costs a process under strace (about a second here), so runs are
few and short under ``dev`` (a crash budget of one per run); ``ci`` and
``fuzz`` go further. Skipped without a working strace (an error with ``CI`` set).
"""

import os
import tempfile

import pytest
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule, run_state_machine_as_test

from resume.publisher import Publisher
from resume.testing.drivers import crash, receiver
from resume.testing import model
from resume.testing.plugin.async_machine import AsyncRuleBasedStateMachine

_DEEP = settings.default.max_examples >= 100 or settings.get_current_profile_name() in ("ci", "fuzz")
CRASH_BUDGET = 1 if not _DEEP else max(3, settings.default.stateful_step_count // 10)
EXAMPLES = 1 if not _DEEP else min(100, settings.default.max_examples // 5)
MAX_INDEX = 40  # two or three commits' store calls; past the session's end, no kill


class CrashPoints(AsyncRuleBasedStateMachine):
    """The machine, handed the implementation (the module; each killed receiver is a process of
    its own, loading its file)."""

    def __init__(self, impl):
        super().__init__()
        self.impl = impl

    # Every run crashes once from the start: Hypothesis's first runs of a
    # machine are its simplest, and under dev a run that never drew the
    # crash rule cost its set-up and tested nothing (seed 0: no crash at all).
    @initialize(deltas=st.lists(st.integers(model.DELTA_MIN, model.DELTA_MAX), min_size=1, max_size=3),
                kind=st.sampled_from(crash.KINDS), index=st.integers(1, 8) | st.integers(1, MAX_INDEX))
    async def start_and_crash(self, deltas, kind, index):
        self.folder = tempfile.TemporaryDirectory(prefix="resume-crash-points-")  # the real disk
        self.db = os.path.join(self.folder.name, "store.db")
        self.publisher = await Publisher(list(enumerate(deltas))).start()
        self.crashes = 0
        await self.crash_then_resume(kind, index)

    async def aclose(self):
        await self.publisher.close()
        self.folder.cleanup()

    def final_seq(self):
        return self.publisher.next_seq - 1

    @rule(deltas=st.lists(st.integers(model.DELTA_MIN, model.DELTA_MAX), min_size=1, max_size=3))
    def publish(self, deltas):
        self.publisher.publish(*deltas)

    @precondition(lambda self: self.crashes < CRASH_BUDGET and self.publisher.acked < self.final_seq())
    # Half the draws among the first few calls (open_store, the first commit),
    # half anywhere up to MAX_INDEX.
    @rule(kind=st.sampled_from(crash.KINDS), index=st.integers(1, 8) | st.integers(1, MAX_INDEX))
    async def crash_then_resume(self, kind, index):
        self.crashes += 1
        point = crash.Point(kind, index)
        run = await crash.run(self.impl.__file__, self.publisher.port, self.db, point)
        await self.publisher.idle()
        killed = run.returncode == receiver.KILLED
        note(run.describe(point) + ("" if killed else f"; not killed: exit {run.returncode}"))
        assert killed or run.phase(point) is None, f"reached {point} but was not killed: {run.err[-500:]}"
        assert run.returncode in (0, receiver.KILLED), run.err[-500:]
        self.check()  # fully old or fully new, before anyone repairs anything

        left = model.Store(*crash.read_store(self.db))  # as the crash left it
        code, _, err = await receiver.run_here(self.impl, self.publisher.port, self.db)
        await self.publisher.idle()
        session = self.publisher.sessions[-1]
        last_line = (err.strip().splitlines() or [""])[-1]
        note(f"takeover: exit {code} {last_line}; publisher saw {session.resume!r}, ACKs {session.acks}")
        if code != 0:
            model.differs("run_client on the store the crash left", "it runs to the end",
                          f"exit code {code}: {last_line}", model.OBSERVED["applied once"])
        # The model's run_client on the store the crash left, given the lines the publisher sent.
        predicted = await left.run_client(receiver.TIMEOUT, b"".join(session.sent).splitlines(keepends=True))
        sent = session.resume + b"".join(model.ack(seq) for seq in session.acks)
        if sent != predicted.resume + b"".join(predicted.acks):
            model.differs("the takeover's RESUME line and ACKs", predicted.resume + b"".join(predicted.acks), sent,
                          predicted.sent_clause([sent]))

    def check(self):
        problems = crash.consistency(self.db, dict(self.publisher.log), self.publisher.acks)
        if problems:  # a store torn by the kill: the killed transaction was not rolled back
            model.differs("the store the killed receiver left", "all or nothing of each event, every ACKed one in it",
                          "; ".join(problems), "S3.rollback" if problems[0].clause == "S3.one-transaction"
                          else problems[0].clause)

    @invariant()
    def the_store_is_consistent_and_every_ack_is_committed(self):
        self.check()


@pytest.fixture(autouse=True)
def _strace():
    crash.require_strace()


def test_a_receiver_killed_at_any_store_call_is_taken_over_exactly_once(impl):
    run_state_machine_as_test(lambda: CrashPoints(impl), settings=settings(
        max_examples=EXAMPLES,
        stateful_step_count=max(4, settings.default.stateful_step_count // 3),
    ))
