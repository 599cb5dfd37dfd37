"""The protocol as a state machine: apply, fault, crash and reconnect, for real.

One machine run owns a store file in a temporary folder, a real publisher
(``resume.publisher``) on a loopback port with a log that the run grows, one
connection of its own from ``open_store``, and a model (``stateful.model``)
of what a correct store holds. Its rules interleave:

* publishing events; delivering them through real ``run_client`` sessions
  (in this process, or in a new process); applying them directly;
* faults injected at ``apply_event``'s fault point (Exception,
  KeyboardInterrupt, SystemExit, CancelledError): nothing may change;
* a receiver process SIGKILLed between commit and ACK, after which the
  publisher's ACK cursor lags the store by one and resends a real duplicate;
* sessions that break: the publisher resets the connection, sends a truncated
  frame then EOF, or an over-long line; the client task is cancelled;
* duplicates, conflicting redeliveries (Conflict), gaps (Gap) and a
  retention that moved past the cursor (the publisher resyncs, nothing
  applied); reopening the store with a new connection.

Claims, checked after EVERY step through a read-only connection of the
test's own: ``total == SUM(ledger.delta)``; the ledger holds exactly seqs
``0..last``; ``last`` never goes back and moves by at most one per event
the receiver was given; the store equals the model (so no seq was applied
twice); every RESUME the publisher saw carried the store's cursor of that
moment; no connection the machine holds is left in a transaction.

The implementation is ``resume.loader.chosen()`` (``--impl``), and
subprocesses load ``resume.loader.chosen_path()``.
"""

import asyncio
import pathlib
import tempfile

from hypothesis import Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from resume.testing.strategies import DELTA_MAX, FRAME_MAX, deltas
from resume.testing import loader, receiver
from resume.publisher import HOST, Publisher
from resume.testing import store
from stateful.driver import AsyncDriver
from stateful.model import Model

CLIENT_TIMEOUT = 3.0  # every wait of the receiver
# Shorter than the receiver's: a receiver that never ACKs makes the publisher
# end the session first, so the failure shows as missing ACKs, not a hang.
PUBLISHER_TIMEOUT = 1.0
SESSION_LIMIT = 15.0  # a guard around a whole session; reaching it is a failure

# Receiver processes cost 0.1-1 s each (Python's start-up, on a loaded
# machine), other rules a few ms. So a run kills at most this many receiver
# processes between commit and ACK (dev 1, ci 3, fuzz 6), and starts a new
# process to take over only after such a crash, once per crash.
CRASH_BUDGET = max(1, settings.default.stateful_step_count // 10)


class InjectedFault(Exception):
    """Raised by the fault hook in the 'Exception' case."""


FAULTS = {
    "Exception": lambda: InjectedFault("injected"),
    "KeyboardInterrupt": KeyboardInterrupt,
    "SystemExit": lambda: SystemExit(3),
    "CancelledError": asyncio.CancelledError,
}

# Errors the receiver may end a session with, by the rule's own design.
BROKEN_CONNECTION = (ConnectionError,)


def frame(seq, delta):
    return b"EVENT %d %d\n" % (seq, delta)


def parse_event(line):
    """(seq, delta) of an EVENT line the publisher wrote (the publisher's own lines)."""
    _, seq, delta = line.split()
    return int(seq), int(delta)


def changed(delta):
    """Another valid delta, close to ``delta``."""
    return delta + 1 if delta < DELTA_MAX else delta - 1


def names(expect):
    """'Gap', 'None or ConnectionError': what a rule expects, for a message."""
    expect = expect if isinstance(expect, tuple) else (expect,)
    return " or ".join("a normal return" if e is None else e.__name__ for e in expect)


def describe(session, index, expected_cursor):
    sent = b"".join(session.sent).decode("ascii", "backslashreplace").replace("\n", "|")
    return (f"session {index}: RESUME {session.cursor} (store cursor {expected_cursor}); "
            f"sent {sent or '-'}; ACKs {session.acks}; resync {session.resync}; "
            f"end: {session.end or 'still open'}")


class ProtocolMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.impl = loader.chosen()
        self.model = Model()
        self.expected_resumes = []  # the store's cursor when each session began
        self.seen_last = -1  # the store's last at the previous check
        self.offered = 0  # events the receiver was given since the previous check
        self.crashes = 0  # receiver processes killed between commit and ACK
        self.takeovers = 0  # new receiver processes started after a crash
        self.tmp = tempfile.TemporaryDirectory(prefix="resume-stateful-")
        self.path = str(pathlib.Path(self.tmp.name) / "store.db")
        self.driver = AsyncDriver()
        self.publisher = Publisher(timeout=PUBLISHER_TIMEOUT)
        self.con = None
        try:
            self.driver.run(self.publisher.start())
            self.con = self.impl.open_store(self.path)
        except BaseException:
            self.teardown()
            raise

    def teardown(self):
        try:
            self.driver.run(self.publisher.close())
        finally:
            if self.con is not None:
                self.con.close()
            self.driver.close()
            self.tmp.cleanup()

    # ------------------------------------------------------------ helpers

    def unapplied(self):
        return self.model.final > self.model.last

    def to_send(self):
        """How many events the publisher would send now (from its own ACK cursor)."""
        return self.model.final - self.publisher.acked

    async def _client(self, cancel_when_held):
        """Run ``run_client`` in this process; return (result, error)."""
        index = len(self.publisher.sessions)
        client = asyncio.ensure_future(
            self.impl.run_client(HOST, self.publisher.port, self.path, CLIENT_TIMEOUT))
        try:
            if cancel_when_held:
                async with asyncio.timeout(SESSION_LIMIT):
                    while not client.done() and not (
                            len(self.publisher.sessions) > index and self.publisher.sessions[index].held):
                        await asyncio.sleep(0.001)
                client.cancel()
            async with asyncio.timeout(SESSION_LIMIT):
                return await client, None
        except (Exception, asyncio.CancelledError) as error:
            if not client.done():
                client.cancel()
            return None, error
        finally:
            async with asyncio.timeout(SESSION_LIMIT):
                await self.publisher.idle()

    async def _process(self, crash_before_ack):
        """Run ``run_client`` in a new process; return (returncode, stdout, stderr)."""
        try:
            async with asyncio.timeout(SESSION_LIMIT):
                return await receiver.run(loader.chosen_path(), self.publisher.port, self.path,
                                          timeout=CLIENT_TIMEOUT, crash_before_ack=crash_before_ack)
        finally:
            async with asyncio.timeout(SESSION_LIMIT):
                await self.publisher.idle()

    def session(self, *, expect=None, crashed=False, process=False, crash_before_ack=None,
                cancel_when_held=False, **plan):
        """One session with ``plan``: run it, note it, check it, and move the model.

        ``expect`` is the error class(es) the receiver must end with, or None
        for a normal return; a normal return is accepted too when ``expect``
        includes None. Returns the publisher's Session.
        """
        index = len(self.publisher.sessions)
        cursor = self.model.last
        self.expected_resumes.append(cursor)
        self.publisher.plan(**plan)
        if process:
            code, out, err = self.driver.run(self._process(crash_before_ack))
            outcome = f"process exit {code}; stdout {out.strip()!r}; stderr {err.strip()[-300:]!r}"
        else:
            result, error = self.driver.run(self._client(cancel_when_held))
            outcome = f"raised {error!r}" if error is not None else f"returned {result}"
        sessions = self.publisher.sessions[index:]
        for i, s in enumerate(sessions, start=index):
            note(describe(s, i, cursor))
        note(f"receiver: {outcome}")
        assert len(sessions) == 1, f"expected one session, the publisher saw {len(sessions)}: {outcome}"
        session = sessions[0]

        # What a correct receiver did with the events (the raw bytes apart).
        raw_sent = bool(plan.get("raw")) and session.sent[-1:] == [plan["raw"]]
        lines = session.sent[:-1] if raw_sent else session.sent
        events = [parse_event(line) for line in lines]
        for seq, delta in events:
            verdict = self.model.receive(seq, delta)
            assert verdict in ("applied", "duplicate"), f"the publisher sent {verdict} {seq} {delta}"
        self.offered += len(events) + raw_sent
        acked = [seq for seq, _ in events]

        if process:
            if crashed:
                assert code == receiver.KILLED, f"the receiver was not killed at ACK {crash_before_ack}: {outcome}"
                assert acked and acked[-1] == crash_before_ack, f"killed before ACK {crash_before_ack}? {outcome}"
                acked = acked[:-1]  # killed between commit and ACK
            else:
                assert code == 0, f"the receiver failed: {outcome}"
                assert out.strip() == f"last={self.model.last} total={self.model.total}", (
                    f"the receiver process printed {out.strip()!r}, "
                    f"the store should be last={self.model.last} total={self.model.total}")
        else:
            allowed = expect if isinstance(expect, tuple) else (expect,)
            if error is None:
                assert None in allowed, f"the receiver returned {result}, expected {names(expect)}"
                assert result == (self.model.last, self.model.total), (
                    f"run_client returned {result}, the store should be {(self.model.last, self.model.total)}")
            else:
                ok = tuple(e for e in allowed if e is not None)
                if not (ok and isinstance(error, ok)):
                    raise AssertionError(f"the receiver raised {error!r}, expected {names(expect)}") from error
        assert session.acks == acked, f"ACKs {session.acks}, expected {acked} (one per event taken)"
        return session

    def direct(self, call, expect=None):
        """Call the implementation directly; return (result, error) with ``expect`` checked."""
        try:
            result = call()
        except BaseException as error:
            if expect is not None and isinstance(error, expect):
                return None, error
            raise AssertionError(f"unexpected {error!r}, expected {names(expect)}") from error
        assert expect is None, f"returned {result!r}, expected it to raise {names(expect)}"
        return result, None

    # -------------------------------------------------------------- rules

    # Every run starts with a few events: swarm testing switches whole rules
    # off per run, and a run whose `publish` is off would test nothing.
    @initialize(new=st.lists(deltas(), max_size=4))
    def publish_first_events(self, new):
        self.publish(new)

    @rule(new=st.lists(deltas(), min_size=1, max_size=3))
    def publish(self, new):
        self.publisher.publish(*new)
        self.model.deltas.extend(new)

    # Hypothesis orders rules by their number of arguments, then by name, and
    # shrinks towards the first: this one, the cheapest session, with none.
    @rule()
    def deliver_the_whole_log(self):
        """A real run_client session over loopback, to the end of the log."""
        self.session()
        assert self.model.last == self.model.final, "a whole session left events unapplied"

    @rule(after=st.integers(1, 3))
    def deliver_then_stop(self, after):
        """A real session in which the publisher ends (EOF) after ``after`` events."""
        self.session(stop_after=after)

    @precondition(lambda self: self.publisher.acked >= 0)
    @rule()
    def redeliver_the_last_acked_event(self):
        """The publisher resends its last ACKed event and ends at once (EOF), reading the ACK after.

        A receiver that does not ACK a duplicate shows here without a
        timeout: the publisher does not wait for that ACK before its EOF.
        """
        self.session(resend=1, stop_after=1, read_last_ack=False)

    @precondition(lambda self: self.model.last >= 0)
    @rule(resend=st.integers(1, 3))
    def redeliver_acked_events(self, resend):
        """The publisher starts ``resend`` events before its ACK cursor: real duplicates."""
        self.session(resend=resend)

    @precondition(lambda self: self.unapplied())
    @rule(via=st.sampled_from(["apply_event", "consume_line"]))
    def apply_next_event(self, via):
        seq = self.model.last + 1
        delta = self.model.deltas[seq]
        self.offered += 1
        if via == "apply_event":
            result, _ = self.direct(lambda: self.impl.apply_event(self.con, seq, delta))
            assert result is True, f"apply_event of the next event returned {result!r}"
        else:
            result, _ = self.direct(lambda: self.impl.consume_line(self.con, frame(seq, delta)))
            assert result == b"ACK %d\n" % seq, f"consume_line returned {result!r}"
        self.model.receive(seq, delta)

    @precondition(lambda self: self.model.last >= 0)
    @rule(back=st.integers(0, 3), via=st.sampled_from(["apply_event", "consume_line"]))
    def reapply_a_committed_event(self, back, via):
        """A duplicate with the same content: False from apply_event, an ACK from consume_line."""
        seq = max(0, self.model.last - back)
        delta = self.model.deltas[seq]
        self.offered += 1
        if via == "apply_event":
            result, _ = self.direct(lambda: self.impl.apply_event(self.con, seq, delta))
            assert result is False, f"apply_event of a duplicate returned {result!r}"
        else:
            result, _ = self.direct(lambda: self.impl.consume_line(self.con, frame(seq, delta)))
            assert result == b"ACK %d\n" % seq, f"consume_line of a duplicate returned {result!r}"

    @precondition(lambda self: self.unapplied())
    @rule(fault=st.sampled_from(sorted(FAULTS)), via=st.sampled_from(["apply_event", "consume_line"]))
    def apply_with_fault(self, fault, via):
        """The fault fires between the total and the cursor: nothing may change."""
        seq = self.model.last + 1
        delta = self.model.deltas[seq]
        raised = []

        def hook():
            raised.append(FAULTS[fault]())
            raise raised[-1]

        self.offered += 1
        if via == "apply_event":
            call = lambda: self.impl.apply_event(self.con, seq, delta, hook)  # noqa: E731
        else:
            call = lambda: self.impl.consume_line(self.con, frame(seq, delta), hook)  # noqa: E731
        _, error = self.direct(call, expect=BaseException)
        assert len(raised) == 1, f"the fault hook ran {len(raised)} times; {error!r} propagated"
        assert error is raised[0], f"{error!r} propagated instead of the fault {raised[0]!r}"

    @precondition(lambda self: self.model.last >= 0)
    @rule(back=st.integers(0, 3), via=st.sampled_from(["a session", "consume_line", "apply_event"]))
    def conflicting_redelivery(self, back, via):
        """A committed seq comes again with another delta: Conflict, nothing changes."""
        seq = max(0, self.model.last - back)
        line = frame(seq, changed(self.model.deltas[seq]))
        self.offered += 1
        if via == "a session":
            self.session(expect=self.impl.Conflict, stop_after=0, raw=line)
        elif via == "consume_line":
            self.direct(lambda: self.impl.consume_line(self.con, line), expect=self.impl.Conflict)
        else:
            self.direct(lambda: self.impl.apply_event(self.con, *parse_event(line)),
                        expect=self.impl.Conflict)

    @rule(ahead=st.integers(2, 3), via=st.sampled_from(["a session", "consume_line", "apply_event"]))
    def deliver_a_gap(self, ahead, via):
        """An event past ``last + 1``: Gap, nothing changes."""
        seq = self.model.last + ahead
        line = frame(seq, self.model.delta_of(seq))
        self.offered += 1
        if via == "a session":
            self.session(expect=self.impl.Gap, stop_after=0, raw=line)
        elif via == "consume_line":
            self.direct(lambda: self.impl.consume_line(self.con, line), expect=self.impl.Gap)
        else:
            self.direct(lambda: self.impl.apply_event(self.con, *parse_event(line)),
                        expect=self.impl.Gap)

    @precondition(lambda self: self.model.final >= self.publisher.acked + 2)
    @rule()
    def retention_moved_past_the_cursor(self):
        """The retained log starts two past the ACK cursor: the publisher resyncs, nothing applies."""
        self.publisher.retain_from(self.publisher.acked + 2)
        try:
            session = self.session()
        finally:
            # Put the whole log back, so that later steps can deliver again.
            self.publisher.log = self.model.log()
        assert session.resync and not session.sent, "the publisher should have resynced"

    @rule(after=st.integers(0, 3))
    def publisher_resets_the_connection(self, after):
        """The publisher sends ``after`` events and ACKs them, then aborts (TCP reset)."""
        self.session(expect=(None,) + BROKEN_CONNECTION, stop_after=after, reset=True)

    @rule(after=st.integers(0, 2), cut=st.integers(1, 8))
    def truncated_frame_then_eof(self, after, cut):
        """After ``after`` events, the first ``cut`` bytes of the next frame, then EOF: ValueError."""
        seq = self.publisher.acked + 1 + after
        whole = frame(seq, self.model.delta_of(seq))
        self.session(expect=ValueError, stop_after=after, raw=whole[: min(cut, len(whole) - 1)])

    @rule(after=st.integers(0, 2), extra=st.integers(1, 8))
    def over_long_line(self, after, extra):
        """After ``after`` events, a line ``extra`` bytes over the 64-byte limit: ValueError."""
        seq = self.publisher.acked + 1 + after
        whole = frame(seq, self.model.delta_of(seq))
        padding = b" " * (FRAME_MAX + extra - len(whole))
        self.session(expect=ValueError, stop_after=after, raw=whole[:-1] + padding + b"\n")

    @rule(after=st.integers(0, 3))
    def cancel_the_client_mid_session(self, after):
        """The publisher sends ``after`` events then holds the line; the client task is cancelled."""
        self.session(expect=asyncio.CancelledError, cancel_when_held=True, stop_after=after, hold=True)

    @precondition(lambda self: self.crashes < CRASH_BUDGET and self.to_send() >= 1)
    @rule(offset=st.integers(0, 2))
    def crash_between_commit_and_ack(self, offset):
        """A receiver process SIGKILLs itself after committing event seq, before its ACK."""
        seq = min(self.publisher.acked + 1 + offset, self.model.final)
        self.crashes += 1
        self.session(process=True, crashed=True, crash_before_ack=seq)
        assert self.publisher.acked == seq - 1, (
            f"the publisher's ACK cursor is {self.publisher.acked}, expected {seq - 1}")

    @precondition(lambda self: self.takeovers < self.crashes)
    @rule()
    def reconnect_from_a_new_process(self):
        """After a crash, a new receiver process takes over the same store file, to the end."""
        self.takeovers += 1
        self.session(process=True)
        assert self.model.last == self.model.final, "a whole session left events unapplied"

    @rule()
    def restart_store(self):
        """Close the machine's store connection and open a new one."""
        self.con.close()
        self.con = None
        self.con = self.impl.open_store(self.path)
        stored = self.impl.state(self.con)
        assert stored == (self.model.last, self.model.total), f"state() after reopening: {stored}"

    # --------------------------------------------------------- invariants

    @invariant()
    def store_publisher_and_connection_agree_with_the_model(self):
        # One invariant calling three checks: a counterexample then shows one
        # line per step for them, not three.
        self.check_store()
        self.check_resumes()
        assert self.con is None or not self.con.in_transaction, "the machine's connection is in a transaction"

    def check_store(self):
        snap = store.read(self.path)
        assert snap.state is not None, "the checkpoint table must hold exactly the row id 1"
        ledger_sum = sum(snap.ledger.values())
        assert snap.total == ledger_sum, f"total {snap.total} != SUM(ledger.delta) {ledger_sum}"
        seqs = list(snap.ledger)
        assert seqs == list(range(snap.last + 1)), f"ledger seqs {seqs} with last {snap.last}"
        assert snap.last >= self.seen_last, f"last went back from {self.seen_last} to {snap.last}"
        assert snap.last - self.seen_last <= self.offered, (
            f"last moved from {self.seen_last} to {snap.last} on {self.offered} event(s)")
        expected = (self.model.last, self.model.total, self.model.ledger())
        assert (snap.last, snap.total, snap.ledger) == expected, (
            f"store (last, total, ledger) {(snap.last, snap.total, snap.ledger)}, model {expected}")
        self.seen_last, self.offered = snap.last, 0

    def check_resumes(self):
        seen = self.publisher.resumes
        assert seen == self.expected_resumes, (
            f"RESUME cursors seen {seen}, the store's cursors were {self.expected_resumes}")


TestProtocol = ProtocolMachine.TestCase
# The profile's settings, but one bug at a time: shrinking every distinct
# failure of a broken implementation (they come in several kinds) would take
# minutes and print pages; the first one, shrunk, is the counterexample.
# And no explain phase: its "lines always and only run by failing test cases"
# re-runs the failing steps (receiver processes included) to say little here.
TestProtocol.settings = settings(
    TestProtocol.settings,
    report_multiple_bugs=False,
    phases=[phase for phase in TestProtocol.settings.phases if phase is not Phase.explain],
)
