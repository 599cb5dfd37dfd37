"""The protocol as a state machine: apply, fault, crash and reconnect, for real.

One machine run owns a store file in a temporary folder, a real publisher
(``resume.publisher``) on a loopback port with a log that the run grows, one
connection of its own from ``open_store``, and the model (``resume.testing.model``)
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

The implementation (``--impl``) is handed to the machine by the test (the
``impl`` fixture), and subprocesses load its file. The machine is an
``AsyncRuleBasedStateMachine`` (``resume.testing.plugin.async_machine``): its rules that
talk to the publisher are ``async def`` and run on one event loop per run;
``aclose()`` ends the publisher and the store connection at teardown, and a
task left running fails the run.
"""

import asyncio
import dataclasses
import pathlib
import tempfile

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule, run_state_machine_as_test

from resume.publisher import HOST, Publisher
from resume.testing import model
from resume.testing.drivers import leaks, receiver, store_files, tasks
from resume.testing.plugin.async_machine import AsyncRuleBasedStateMachine
from resume.testing.strategies.values import FRAME_MAX, frame, valid_deltas

CLIENT_TIMEOUT = 3.0  # every wait of the receiver
# Shorter than the receiver's: a receiver that never ACKs makes the publisher
# end the session first, so the failure shows as missing ACKs, not a hang.
PUBLISHER_TIMEOUT = 1.0
SESSION_LIMIT = 15.0  # a guard around a whole session; reaching it is a failure
CLOSED_WITHIN = 0.5  # the publisher (same event loop) sees the end of a connection whose run_client has ended

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



def describe(session, index, expected_cursor):
    sent = b"".join(session.sent).decode("ascii", "backslashreplace").replace("\n", "|")
    return (f"session {index}: RESUME {session.cursor} (store cursor {expected_cursor}); "
            f"sent {sent or '-'}; ACKs {session.acks}; resync {session.resync}; "
            f"end: {session.end or 'still open'}")



@dataclasses.dataclass
class Books:
    """The machine's books: every event published, the model's store, and what was offered since the last check.

    What a correct store holds, and what it does with each event, is the
    model's (``model.Store``); these books only count. Whatever an
    implementation does, its cursor never goes back and moves by at most one
    per event offered since the store was last checked (``model.cursor_moves``).
    """

    deltas: list = dataclasses.field(default_factory=list)  # deltas[seq]: every event ever published
    store: model.Store = dataclasses.field(default_factory=model.Store)
    offered: int = 0  # events or lines the receiver was given since the previous check
    checked_last: int = model.LAST_MIN  # the store's cursor at the previous check

    @property
    def last(self):
        return self.store.last

    @property
    def total(self):
        return self.store.total

    @property
    def final(self):
        """The last published seq (-1 before anything is published)."""
        return len(self.deltas) - 1

    def unapplied(self):
        return self.final > self.last

    def log(self):
        return list(enumerate(self.deltas))

    def delta_of(self, seq, default=1):
        """The published delta of ``seq``, or ``default`` for a seq not published yet."""
        return self.deltas[seq] if 0 <= seq < len(self.deltas) else default

    def receive(self, seq, delta):
        """Offer one event to the model's store: its decision ("applied", "duplicate", "gap", "conflict")."""
        self.offer()
        decision = self.store.decide(seq, delta)
        self.store.apply_event(seq, delta)
        return decision

    def offer(self, count=1):
        """Count lines given to the receiver that a correct one does not apply (a fault, a bad line)."""
        self.offered += count

    def checked(self, stored_last):
        """The store was checked and its cursor is ``stored_last``: start counting again."""
        self.checked_last, self.offered = stored_last, 0


class ProtocolMachine(AsyncRuleBasedStateMachine):
    """The machine, handed the implementation under test (a module; its file for subprocesses)."""

    def __init__(self, impl):
        super().__init__()
        self.impl = impl
        self.model = Books()
        self.expected_resumes = []  # the store's cursor when each session began
        self.crashes = 0  # receiver processes killed between commit and ACK
        self.takeovers = 0  # new receiver processes started after a crash
        self.tmp = tempfile.TemporaryDirectory(prefix="resume-stateful-")
        self.path = str(pathlib.Path(self.tmp.name) / "store.db")
        self.publisher = Publisher(timeout=PUBLISHER_TIMEOUT)
        self.con = None

    async def aclose(self):
        try:
            await self.publisher.close()
        finally:
            if self.con is not None:
                self.con.close()

    def teardown(self):
        try:
            super().teardown()
        finally:
            self.tmp.cleanup()

    # ------------------------------------------------- a session, in pieces
    #
    # A session rule tells its story in four steps: queue the publisher's
    # plan and run one receiver (``in_this_process`` / ``in_a_new_process``),
    # then ``the_session`` (exactly one, noted), ``take_events`` (what a
    # correct receiver did with what was sent: the model moves) and the
    # checks of the receiver's outcome and of the ACKs.

    def to_send(self):
        """How many events the publisher would send now (from its own ACK cursor)."""
        return self.model.final - self.publisher.acked

    def begin(self, plan):
        """Queue ``plan`` for the next session; return its index. The RESUME must carry the store's cursor."""
        self.expected_resumes.append(self.model.last)
        self.publisher.plan(**plan)
        return len(self.publisher.sessions)

    async def in_this_process(self, *, cancel_when_held=False, **plan):
        """A real ``run_client`` session in this process; return (session index, its outcome)."""
        index = self.begin(plan)
        client = asyncio.ensure_future(
            self.impl.run_client(HOST, self.publisher.port, self.path, CLIENT_TIMEOUT))
        if cancel_when_held:
            await self.until_held(index, client)
            tasks.cancel(client)
        got = await tasks.outcome_of(self.impl, client, SESSION_LIMIT)
        await self.the_connection_ends_with_the_client()
        return index, got

    async def the_connection_ends_with_the_client(self):
        """Steps 6 and 7 (decisions 11, 12): when run_client has ended, however, its connection has too.

        A socket of this process still connected to the publisher once the
        loop has turned a few times is one the receiver left open: said at
        once, with no wait (every shrinking step of such a bug would pay it).
        Otherwise the publisher sees the end at once; CLOSED_WITHIN bounds it.
        """
        if await leaks.left_open_to(self.publisher.port):
            model.differs("the connection, once run_client has ended", "closed: the publisher sees its end",
                          "still open after it ended (the socket was never closed)",
                          model.leak_clause("consume_session", ["socket:"]))
        try:
            async with asyncio.timeout(CLOSED_WITHIN):
                await self.publisher.idle()
        except TimeoutError:
            model.differs("the connection, once run_client has ended", "closed: the publisher sees its end",
                          f"still open {CLOSED_WITHIN:g} s later (the socket was never closed)",
                          model.leak_clause("consume_session", ["socket:"]))

    async def until_held(self, index, client):
        """Wait until session ``index`` has sent everything and holds the line (or the client ended)."""
        sessions = self.publisher.sessions
        async with asyncio.timeout(SESSION_LIMIT):
            while not client.done() and not (len(sessions) > index and sessions[index].held):
                await asyncio.sleep(0.001)

    async def in_a_new_process(self, crash_before_ack=None, **plan):
        """A receiver process runs ``run_client``; return (session index, returncode, stdout, stderr)."""
        index = self.begin(plan)
        try:
            async with asyncio.timeout(SESSION_LIMIT):
                code, out, err = await receiver.run(
                    pathlib.Path(self.impl.__file__), self.publisher.port, self.path,
                    timeout=CLIENT_TIMEOUT, crash_before_ack=crash_before_ack)
        finally:
            async with asyncio.timeout(SESSION_LIMIT):
                await self.publisher.idle()
        return index, code, out, err

    def the_session(self, index, outcome):
        """Note every session since ``index`` and the receiver's outcome; return the one session."""
        sessions = self.publisher.sessions[index:]
        for i, session in enumerate(sessions, start=index):
            note(describe(session, i, self.expected_resumes[index]))
        note(f"receiver: it {outcome}")
        if len(sessions) != 1:
            model.differs("the connections of the receiver's run_client", "one", f"{len(sessions)}: {outcome}",
                          model.OBSERVED["connection attempts"])
        return sessions[0]

    def take_events(self, session):
        """Move the model by the events the publisher sent; return their seqs (the ACKs a correct receiver writes)."""
        raw = session.plan.raw
        raw_sent = bool(raw) and session.sent[-1:] == [raw]
        events = [model.parse(line) for line in (session.sent[:-1] if raw_sent else session.sent)]
        for seq, delta in events:
            verdict = self.model.receive(seq, delta)
            assert verdict in ("applied", "duplicate"), f"the publisher sent {verdict} {seq} {delta}"
        self.model.offer(raw_sent)
        return [seq for seq, _ in events]

    @staticmethod
    def check_acks(session, acks):
        """The ACKs the publisher read are ``acks`` (seqs, or the ACK lines of a prediction)."""
        expected = [model.ack(seq) if isinstance(seq, int) else seq for seq in acks]
        if [model.ack(seq) for seq in session.acks] != expected:
            model.differs("the ACKs of the session (one per event taken)",
                          ", ".join(ack.decode().strip() for ack in expected) or "no ACK",
                          ", ".join(f"ACK {seq}" for seq in session.acks) or "no ACK", "S6.ack-after-commit")

    async def session(self, *, endings=(None,), cancel_when_held=False, **plan):
        """A session in this process with ``plan``; return the publisher's Session.

        The model's ``run_client`` predicts it from the lines the publisher
        sent and how the stream then ended (``endings``: what may end it, as
        ``model.Store.session`` takes it; a reset may be read as one). It
        moves the model's store as the real session moves the real one.
        """
        index, got = await self.in_this_process(cancel_when_held=cancel_when_held, **plan)
        session = self.the_session(index, got)
        self.model.offer(len(session.sent))
        start = self.model.store.copy()
        predictions = []
        for ending in endings:
            self.model.store = start.copy()
            predictions.append((await self.model.store.run_client(CLIENT_TIMEOUT, session.sent, ending),
                                self.model.store))
        predicted, self.model.store = next(((p, after) for p, after in predictions if got == p.outcome),
                                           predictions[0])
        model.expect(got, predicted.outcome, "run_client in the last session")
        self.check_acks(session, predicted.acks)
        return session

    async def process_session(self, crash_before_ack=None):
        """A session in a new receiver process, killed before ACK ``crash_before_ack`` if given."""
        index, code, out, err = await self.in_a_new_process(crash_before_ack)
        outcome = f"process exit {code}; stdout {out.strip()!r}; stderr {err.strip()[-300:]!r}"
        session = self.the_session(index, outcome)
        acked = self.take_events(session)
        if crash_before_ack is not None:
            if code != receiver.KILLED or not acked or acked[-1] != crash_before_ack:
                model.differs(f"a receiver whose before_ack({crash_before_ack}) kills it",
                              f"killed in before_ack({crash_before_ack}), after event {crash_before_ack} committed",
                              outcome, model.OBSERVED["before_ack calls"])
            acked = acked[:-1]  # killed between commit and ACK
        else:
            printed = f"last={self.model.last} total={self.model.total}"
            if code != 0 or out.strip() != printed:
                model.differs("run_client in a receiver process, to the end of the log", f"it prints {printed}",
                              outcome, "S7.handover")
        self.check_acks(session, acked)

    def direct(self, via, seq, delta, fault=None, model_fault=None):
        """Give event ``seq delta`` to ``apply_event``, or its frame to ``consume_line``, and to the
        model's store (with ``model_fault`` for ``fault``): the outcome must be the model's."""
        args = (seq, delta) if via == "apply_event" else (frame(seq, delta),)
        extra = () if fault is None else (fault,)
        what = model.call_text(via, model.CON, *args, on=self.model.store, kind=self.model.store.what_it_is(seq, delta),
                               fault=None if fault is None else model.Name("fault"))
        self.model.offer()
        got = model.outcome_of(self.impl, getattr(self.impl, via), self.con, *args, *extra)
        model.expect(got, getattr(self.model.store, via)(*args, model_fault), what)

    # -------------------------------------------------------------- rules

    # Every run starts with a few events: swarm testing switches whole rules
    # off per run, and a run whose `publish` is off would test nothing.
    @initialize(new=st.lists(valid_deltas(), max_size=4))
    async def start_the_publisher_and_open_the_store(self, new):
        await self.publisher.start()
        self.con = self.impl.open_store(self.path)
        self.publish(new)

    @rule(new=st.lists(valid_deltas(), min_size=1, max_size=3))
    def publish(self, new):
        self.publisher.publish(*new)
        self.model.deltas.extend(new)

    # Hypothesis orders rules by their number of arguments, then by name, and
    # shrinks towards the first: this one, the cheapest session, with none.
    @rule()
    async def deliver_the_whole_log(self):
        """A real run_client session over loopback, to the end of the log."""
        await self.session()
        assert self.model.last == self.model.final, "a whole session left events unapplied"

    @rule(after=st.integers(1, 3))
    async def deliver_then_stop(self, after):
        """A real session in which the publisher ends (EOF) after ``after`` events."""
        await self.session(stop_after=after)

    @precondition(lambda self: self.publisher.acked >= 0)
    @rule()
    async def redeliver_the_last_acked_event(self):
        """The publisher resends its last ACKed event and ends at once (EOF), reading the ACK after.

        A receiver that does not ACK a duplicate shows here without a
        timeout: the publisher does not wait for that ACK before its EOF.
        """
        await self.session(resend=1, stop_after=1, read_last_ack=False)

    @precondition(lambda self: self.model.last >= 0)
    @rule(resend=st.integers(1, 3))
    async def redeliver_acked_events(self, resend):
        """The publisher starts ``resend`` events before its ACK cursor: real duplicates."""
        await self.session(resend=resend)

    @precondition(lambda self: self.model.unapplied())
    @rule(via=st.sampled_from(["apply_event", "consume_line"]))
    def apply_next_event(self, via):
        seq = self.model.last + 1
        self.direct(via, seq, self.model.deltas[seq])

    @precondition(lambda self: self.model.last >= 0)
    @rule(back=st.integers(0, 3), via=st.sampled_from(["apply_event", "consume_line"]))
    def reapply_a_committed_event(self, back, via):
        """A duplicate with the same content: False from apply_event, an ACK from consume_line."""
        seq = max(0, self.model.last - back)
        self.direct(via, seq, self.model.deltas[seq])

    @precondition(lambda self: self.model.unapplied())
    @rule(fault=st.sampled_from(sorted(FAULTS)), via=st.sampled_from(["apply_event", "consume_line"]))
    def apply_with_fault(self, fault, via):
        """The fault fires between the total and the cursor: nothing may change."""
        seq = self.model.last + 1
        error, calls = FAULTS[fault](), []

        def hook():
            calls.append(seq)
            raise error

        def models_hook():  # the model's call of the fault: the same error, not counted
            raise error

        self.direct(via, seq, self.model.deltas[seq], hook, model_fault=models_hook)
        if len(calls) != 1:
            model.differs(f"{via}(con, {seq}, ..., fault): the calls of fault", "1 call", f"{len(calls)} call(s)",
                          model.OBSERVED["fault calls"])

    async def offer(self, seq, delta, via):
        """Offer ``seq delta`` by ``via``: in a session (its only line) or by a direct call."""
        if via == "a session":
            await self.session(stop_after=0, raw=frame(seq, delta))
        else:
            self.direct(via, seq, delta)

    @precondition(lambda self: self.model.last >= 0)
    @rule(back=st.integers(0, 3), via=st.sampled_from(["a session", "consume_line", "apply_event"]))
    async def conflicting_redelivery(self, back, via):
        """A committed seq comes again with another delta: Conflict, nothing changes."""
        seq = max(0, self.model.last - back)
        await self.offer(seq, model.other_delta(self.model.deltas[seq]), via)

    @rule(ahead=st.integers(2, 3), via=st.sampled_from(["a session", "consume_line", "apply_event"]))
    async def deliver_a_gap(self, ahead, via):
        """An event past ``last + 1``: Gap, nothing changes."""
        seq = self.model.last + ahead
        await self.offer(seq, self.model.delta_of(seq), via)

    @precondition(lambda self: self.model.final >= self.publisher.acked + 2)
    @rule()
    async def retention_moved_past_the_cursor(self):
        """The retained log starts two past the ACK cursor: the publisher resyncs, nothing applies."""
        self.publisher.retain_from(self.publisher.acked + 2)
        try:
            session = await self.session()
        finally:
            # Put the whole log back, so that later steps can deliver again.
            self.publisher.log = self.model.log()
        assert session.resync and not session.sent, "the publisher should have resynced"

    @rule(after=st.integers(0, 3))
    async def publisher_resets_the_connection(self, after):
        """The publisher sends ``after`` events and ACKs them, then aborts (TCP reset)."""
        await self.session(endings=("ConnectionError", None), stop_after=after, reset=True)

    @rule(after=st.integers(0, 2), cut=st.integers(1, 8))
    async def truncated_frame_then_eof(self, after, cut):
        """After ``after`` events, the first ``cut`` bytes of the next frame, then EOF: ValueError."""
        seq = self.publisher.acked + 1 + after
        whole = frame(seq, self.model.delta_of(seq))
        await self.session(stop_after=after, raw=whole[: min(cut, len(whole) - 1)])

    @rule(after=st.integers(0, 2), extra=st.integers(1, 8))
    async def over_long_line(self, after, extra):
        """After ``after`` events, a line ``extra`` bytes over the 64-byte limit: ValueError."""
        seq = self.publisher.acked + 1 + after
        whole = frame(seq, self.model.delta_of(seq))
        padding = b" " * (FRAME_MAX + extra - len(whole))
        await self.session(stop_after=after, raw=whole[:-1] + padding + b"\n")

    @rule(after=st.integers(0, 3))
    async def cancel_the_client_mid_session(self, after):
        """The publisher sends ``after`` events then holds the line; the client task is cancelled."""
        await self.session(endings=("CancelledError",), cancel_when_held=True, stop_after=after, hold=True)

    @precondition(lambda self: self.crashes < CRASH_BUDGET and self.to_send() >= 1)
    @rule(offset=st.integers(0, 2))
    async def crash_between_commit_and_ack(self, offset):
        """A receiver process SIGKILLs itself after committing event seq, before its ACK."""
        seq = min(self.publisher.acked + 1 + offset, self.model.final)
        self.crashes += 1
        await self.process_session(crash_before_ack=seq)
        if self.publisher.acked != seq - 1:
            model.differs(f"the publisher's ACK cursor, the receiver killed before ACK {seq}", seq - 1,
                          self.publisher.acked, "S6.ack-after-commit")

    @precondition(lambda self: self.takeovers < self.crashes)
    @rule()
    async def reconnect_from_a_new_process(self):
        """After a crash, a new receiver process takes over the same store file, to the end."""
        self.takeovers += 1
        await self.process_session()
        assert self.model.last == self.model.final, "a whole session left events unapplied"

    @rule()
    def restart_store(self):
        """Close the machine's store connection and open a new one."""
        self.con.close()
        self.con = None
        self.con = self.impl.open_store(self.path)
        model.expect(model.outcome_of(self.impl, self.impl.state, self.con),
                     model.open_store(self.path, self.model.store), "open_store(path) again, then state(con)")

    # --------------------------------------------------------- invariants

    @invariant()
    def store_publisher_and_connection_agree_with_the_model(self):
        # One invariant calling three checks: a counterexample then shows one
        # line per step for them, not three.
        self.check_store()
        self.check_resumes()
        assert self.con is None or not self.con.in_transaction, "the machine's connection is in a transaction"

    def check_store(self):
        what = "the store, read from another connection after the step"
        snap = store_files.read(self.path)
        if snap.state is None:
            model.differs(what, "one checkpoint row, id 1", f"no single checkpoint row; ledger {snap.ledger}",
                          "S2.checkpoint-table")
        # The model's rules first, each naming its clause: a consistent store, a cursor that
        # moved by at most one per event offered since the last check; then the model's store.
        problems = model.inconsistencies(snap.last, snap.total, snap.ledger, dict(enumerate(self.model.deltas)))
        problems += model.cursor_moves(self.model.checked_last, snap.last, self.model.offered)
        if problems:
            model.differs(what, "a consistent store (total = SUM(ledger), the ledger exactly 0..last), its cursor "
                          "moved by at most one per event offered", "; ".join(problems), problems[0].clause)
        expected = self.model.store
        if (snap.last, snap.total, snap.ledger) != (expected.last, expected.total, expected.ledger):
            model.differs(what, f"last={expected.last}, total={expected.total}, ledger={expected.ledger}",
                          f"last={snap.last}, total={snap.total}, ledger={snap.ledger}", expected.because)
        self.model.checked(snap.last)

    def check_resumes(self):
        seen = self.publisher.resumes
        if seen != self.expected_resumes:
            model.differs("the first line of each session, RESUME <the store's cursor>",
                          ", ".join(f"RESUME {last}" for last in self.expected_resumes),
                          ", ".join(f"RESUME {last}" for last in seen), model.OBSERVED["resume line"])


def test_the_protocol_machine_keeps_the_store_exact_through_sessions_crashes_and_takeovers(impl):
    run_state_machine_as_test(lambda: ProtocolMachine(impl))
