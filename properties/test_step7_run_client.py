"""Step 7, ``run_client``: validate, open the store, connect, send the stored cursor, consume; close both.

In the test process, over real loopback sockets, with real store files (the
process-killing check is ``test_step7_crash_resume.py``). Claims:

* ``timeout`` and ``before_ack`` from their whole domains, one run per
  class: an invalid timeout raises ValueError before anything is opened (no
  store file appears, no connection is made); any other does what the
  model's ``run_client`` predicts (the outcome, the store, the RESUME line
  and ACKs the server read, the calls of before_ack);
* ``path`` from its whole domain: the store is opened before the connection,
  as open_store opens it (one that cannot be opened fails with no
  connection attempt), and the run lands where open_store puts it;
* a refused connection propagates its error and the store is closed (no file
  descriptor of this process left on it);
* a connection attempt that hangs (the peer's accept queue is full) is cut
  at the timeout with TimeoutError, store closed;
* a peer that resets (at once, or after its lines are ACKed) gives a
  ConnectionError, store closed, what was committed kept, one connection;
* a RESUME drain that fails (raises, hangs, is cancelled: a FAKE drain, the
  one path no real socket reaches) propagates and the socket is reclaimed;
* the RESUME line carries the stored cursor, whatever it is; the resent
  events are duplicates (ACKed, applied once); a second run after a complete
  one sends the final cursor and changes nothing;
* a line longer than 64 bytes fails at once with ValueError (the reader's
  limit is 64), not after the timeout;
* cancelled at any point (connecting, sending RESUME, mid-session), the
  cancellation propagates, and the store and the socket are closed;
* two run_clients at once in one process each keep to their own store.

The tests are ``async def``, run by pytest-asyncio (``@given`` on the async
test: all examples of one test share its event loop), and every example is
checked by ``resume.testing.drivers.hygiene.each_example_clean``: one that leaves a
task running or a descriptor open (a socket, a store file) fails.
"""

import asyncio
import contextlib
import errno
import os
import sqlite3
import tempfile
import threading

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from resume.testing.strategies import arguments
from resume.testing.drivers import leaks, peers, statements, store_files, tasks
from resume.testing import model
from resume.testing.plugin.first_look import first_look, searching
from resume.testing.drivers.hygiene import each_example_clean
from resume.testing.drivers.tasks import LATE, cancel, cancel_after, model_outcome, outcome_of, until
from resume.publisher import Publisher

HOST = peers.HOST
TIMEOUT = 5.0  # where no timeout is the point: nothing should ever wait this long
SLACK = 1.0  # added to every upper bound: the machine is shared and loaded
PEER_ENDS_WITHIN = 1.0  # the peer must see the end of the connection this soon
RESUME_WITHIN = 0.5  # the publisher hangs up on a connection silent this long: RESUME comes first thing,
# right after the connect (the store is open already): 0.5 s is some hundred times what it takes
RETRIES_WITHIN = 0.3  # a refused connection attempt ends in ms: a run_client still trying this late retries

def assert_store_closed(path):
    """No connection of this process is open on the store (checked while the
    implementation's frames are still reachable from the outcome)."""
    if leaks.descriptors_on(path):
        model.differs("the store's file after run_client returned", "closed (the connection closed)",
                      "the store file still open: the connection was never closed", model.OBSERVED["store closed"])


# ------------------------------------------------- before the session


def expect_run(got, predicted, what, path, after=None):
    """``run_client``'s outcome and the store as the model predicts (``model.Store.run_client``;
    ``after``: the model's store after it, a new one by default), and the store closed."""
    model.expect(got, predicted.outcome, what)
    if not predicted.opens and os.path.exists(path):  # first: a store left open is this store's too
        model.differs(what, f"{predicted.outcome} before anything is opened", "a store file was created",
                      model.OBSERVED["nothing opened"])
    assert_store_closed(path)
    if predicted.opens:
        store_files.expect(path, after or model.Store(), f"{what}: the store (opened first)")


def expect_sent(peer, predicted, what):
    """What the server read: the model's RESUME line and ACKs on one connection (decision 16: one
    attempt), or no connection where the model makes none."""
    sent = [connection.received for connection in peer.connections]
    expected = [predicted.resume + b"".join(predicted.acks)] if predicted.resume else []
    if sent != expected:
        model.differs(f"{what}: what the server read, on each connection", expected or "no connection",
                      sent or "no connection", predicted.sent_clause(sent))


# One run per class of each parameter, the other drawn from its whole domain.
CLASSES = [("timeout", kind) for kind in arguments.TIMEOUT_CLASSES] + [("before_ack", kind) for kind in arguments.HOOK_KINDS]


@pytest.mark.asyncio
@pytest.mark.parametrize("parameter,kind", CLASSES, ids=[f"{p}: {k}" for p, k in CLASSES])
@given(data=st.data(), log=st.lists(st.integers(model.DELTA_MIN, model.DELTA_MAX), max_size=3))
@settings(max_examples=max(3, settings.default.max_examples // 5))  # most classes hold a few values
@each_example_clean("run_client")
async def test_any_timeout_and_any_before_ack_do_what_the_model_predicts(impl, parameter, kind, data, log):
    """``timeout`` and ``before_ack`` from their whole domains (``resume.testing.strategies.arguments``): an
    invalid timeout raises ValueError before anything is opened (no store file, no connection);
    a valid one of any type, and any hook (falsy, uncallable, raising any BaseException, returning
    an awaitable), do what the model's ``run_client`` predicts. Awaited in the test's own task,
    so that a KeyboardInterrupt from the hook comes back here."""
    timeout = data.draw(arguments.timeouts(kind if parameter == "timeout" else "float"), label="timeout")
    before_ack = data.draw(arguments.hooks(awaitable=True, kind=kind if parameter == "before_ack" else None),
                           label="before_ack")
    lines = [model.frame(seq, delta) for seq, delta in enumerate(log)]
    expected = model.Store()
    models, mine = arguments.fresh(before_ack), arguments.fresh(before_ack)
    predicted = await expected.run_client(timeout, lines, None, models)
    what = f"run_client(host, port, path, {timeout!r}, {before_ack!r}) on a new store, with a server that sends " \
           + (", ".join(line.decode().strip() for line in lines) or "nothing") + ", then EOF"
    with store_files.temp_store_path() as path:
        async with peers.Peer(b"".join(lines)) as peer:
            watch = tasks.Stopwatch()
            async with asyncio.timeout(TIMEOUT + SLACK):  # a hang fails as TimeoutError
                got = watch.judged(await model.async_outcome_of(
                    impl, impl.run_client(HOST, peer.port, path, timeout, mine)))
            await peer.all_ended(PEER_ENDS_WITHIN)
        expect_run(got, predicted, what, path, after=expected)
    expect_sent(peer, predicted, what)
    if isinstance(mine, arguments.Hook) and (mine.calls, mine.awaited) != (models.calls, models.awaited):
        model.differs(f"{what}: the calls of before_ack (once per commit, before its ACK, its awaitable awaited)",
                      f"called for {[c for (c,) in models.calls]}, awaited for {models.awaited}",
                      f"called for {[c for c, *_ in mine.calls]}, awaited for {mine.awaited}",
                      model.calls_clause(before_ack, model.OBSERVED["before_ack calls"]) if mine.calls != models.calls
                      else model.OBSERVED["awaitables awaited"])


@pytest.mark.asyncio
@pytest.mark.parametrize("form", arguments.PATH_FORMS)
@given(data=st.data())
@settings(max_examples=max(1, settings.default.max_examples // 20))  # most forms draw nothing
@each_example_clean("run_client")
async def test_any_path_is_opened_first_and_as_given(impl, form, data):
    """``path`` from its whole domain (``arguments.paths``): the store is opened before the
    connection, as ``open_store(path)`` opens it (a path where no store can be opened raises
    with no connection attempt), and the run lands where open_store puts it."""
    _, make = data.draw(arguments.paths(form), label="path")
    lines = [model.frame(*event) for event in LOG]
    with tempfile.TemporaryDirectory(prefix="resume-path-", dir=store_files.fast_tmp()) as folder, contextlib.chdir(folder):
        path = make(folder)
        kept = store_files.ledger_rows(os.fsdecode(path)) if model.path_kind(path) == model.PATH_FILE else {}
        expected = model.Store(ledger=kept)  # the rows open_store found are kept
        what = f"run_client(host, port, {path!r}, timeout) on {arguments.path_said(form)}, with a server that sends " \
               + ", ".join(line.decode().strip() for line in lines) + ", then EOF"
        # Twice: a file goes on where the first run left it, a store that forgets starts new, an
        # unusable path fails again; nothing of a call is kept for the next but the store itself.
        for run in ("", ", a second time"):
            if run and model.path_kind(path) != model.PATH_FILE:
                expected = model.Store()
            predicted = await expected.run_client(TIMEOUT, lines, path=path)
            async with peers.Peer(b"".join(lines)) as peer:
                got = await model_outcome(impl, impl.run_client(HOST, peer.port, path, TIMEOUT), TIMEOUT + SLACK)
                await peer.all_ended(PEER_ENDS_WITHIN)
            model.expect(got, predicted.outcome, what + run)
            assert_store_closed(os.fsdecode(path))
            expect_sent(peer, predicted, what + run)
        if model.path_kind(path) == model.PATH_FILE:
            store_files.expect(os.fsdecode(path), expected, f"{what}: the store at the path itself")
        elif model.path_kind(path) == model.PATH_FORGETS and os.fsdecode(path) and os.path.exists(path):
            model.differs(f"{what}: the working folder", "no file named :memory: (a store that forgets)",
                          "a file of that name", model.OBSERVED["path as given"])


@pytest.mark.asyncio
@each_example_clean("run_client")
async def test_a_refused_connection_propagates_and_the_store_is_closed(impl):
    """Decision 16: one connection attempt. A refusal comes at once; a run_client still at it
    RETRIES_WITHIN later is given a listener, which the next attempt would reach."""
    what = "run_client(host, port, path, timeout) on a new store, with nothing listening on port"
    with store_files.temp_store_path() as path, peers.Listener(refusing=True) as listener:
        task = asyncio.ensure_future(impl.run_client(HOST, listener.port, path, TIMEOUT))
        await until(lambda: False, task, RETRIES_WITHIN)
        listener.listen()
        if await until(listener.reached, task, TIMEOUT):
            task.cancel()
            await outcome_of(impl, task, SLACK)
            model.differs(f"{what}, and a listener there {RETRIES_WITHIN} s later",
                          "one connection attempt, refused", "it tried again and reached the listener",
                          model.OBSERVED["connection attempts"])
        got = await outcome_of(impl, task, TIMEOUT + SLACK)
        expect_run(got, await model.Store().run_client(TIMEOUT, connect="ConnectionRefusedError"), what, path)


@pytest.mark.asyncio
@each_example_clean("run_client")
async def test_a_connection_attempt_that_hangs_is_cut_at_the_timeout_and_the_store_is_closed(impl):
    """The peer's accept queue is full, so the kernel drops the SYN: the attempt
    neither succeeds nor is refused. The connect is bounded by the timeout."""
    timeout = 0.05
    predicted = await model.Store().run_client(timeout, connect="TimeoutError")
    with store_files.temp_store_path() as path, peers.Listener(full=True) as listener:
        if not listener.hangs:
            pytest.skip("this kernel completes a connection past a full accept queue")
        watch = tasks.Stopwatch()
        got = watch.judged(await model_outcome(impl, impl.run_client(HOST, listener.port, path, timeout),
                                               predicted.duration() + LATE))  # later: a bound ignored or floored
        expect_run(got, predicted, f"run_client(host, port, path, {timeout}) on a new store, with a peer whose "
                                   "connection attempt never completes", path)


@pytest.mark.asyncio
@each_example_clean("run_client")
async def test_the_connection_has_its_whole_timeout_after_open_store_waited_for_a_lock(impl):
    """"``asyncio.open_connection(...)`` bounded by ``timeout``": a bound of the connection's own,
    not one that open_store's time counts against. Another connection holds the store's write
    lock for LOCKED s, longer than the timeout, then lets go (from a thread: open_store blocks the
    loop). An open_store that waits for it (decision 17 lets it) leaves the connection its whole
    timeout; one that does not wait meets the lock in the session's first commit instead."""
    timeout, locked = 0.05, 0.2
    lines = [model.frame(0, 5)]
    predicted = await model.Store().run_client(timeout, lines, slow="open_store")
    after = model.Store()
    after.consume_line(lines[0])
    what = (f"run_client(host, port, path, {timeout}) on a store another connection holds locked for {locked} s, "
            "with a server that sends EVENT 0 5 and EOF")
    with store_files.temp_store_path() as path:
        with store_files.opened(impl, path):
            pass  # the store exists
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        letting_go = threading.Timer(locked, other.execute, ["ROLLBACK"])
        letting_go.start()
        try:
            async with peers.Peer(b"".join(lines)) as peer:
                got = await model_outcome(impl, impl.run_client(HOST, peer.port, path, timeout), locked + TIMEOUT)
        finally:
            letting_go.join()
            other.close()
        expect_run(got, predicted, what, path, after)


@pytest.mark.asyncio
@pytest.mark.parametrize("lines", [[], [model.frame(0, 5), model.frame(1, -3)]], ids=["at once", "after its lines"])
@each_example_clean("run_client")
async def test_a_peer_that_resets_gives_a_ConnectionError_and_closes_the_store(impl, lines):
    """A reset at once, or once the client has ACKed the peer's lines (it is reading for more):
    the ConnectionError propagates, what was committed stays, and there is no second connection."""
    expected = model.Store()
    predicted = await expected.run_client(TIMEOUT, lines, "ConnectionError")
    what = "run_client(host, port, path, timeout) with a server that " + (
        f"sends {len(lines)} events and resets the connection once they are ACKed" if lines else
        "resets the connection at once")
    with store_files.temp_store_path() as path:
        async with peers.Peer(b"".join(lines), reset=True) as peer:
            got = await model_outcome(impl, impl.run_client(HOST, peer.port, path, TIMEOUT), TIMEOUT + SLACK)
        expect_run(got, predicted, what, path, expected)
        if lines:  # (a reset at once comes before the RESUME line is read)
            expect_sent(peer, predicted, what)
        elif len(peer.connections) != 1:
            model.differs(f"{what}: the connections made", "one", len(peer.connections),
                          model.OBSERVED["connection attempts"])


# Decision 12 at run_client's own reclaim site, drawn whole: each way the RESUME drain fails
# (a reset, a hang past the timeout, a cancellation) x each way the closing wait that follows
# ends (FAKE: it returns, hangs, raises a reset, raises another OSError). The model's reclaim
# rule (``Session.after_closing``, decision 11) decides every cell.
RESUME_DRAIN_FAILS = ["raises", "hangs", "cancelled"]
RESUME_CLOSINGS = {"returns": None, "hangs": model.HANGS,
                   "raises a reset": ConnectionResetError(errno.ECONNRESET, "closing wait: reset (fake)"),
                   "raises OSError(EIO)": OSError(errno.EIO, "closing wait: I/O error (fake)")}


@pytest.mark.asyncio
@pytest.mark.parametrize("closing", RESUME_CLOSINGS)
@pytest.mark.parametrize("fault", RESUME_DRAIN_FAILS)
@each_example_clean("run_client")
async def test_a_failing_resume_drain_reclaims_the_socket_and_closes_the_store(impl, fault, closing):
    """FAKE first drain (``peers.faulty_first_drain``): raises a ConnectionError,
    hangs past the timeout, or hangs until run_client is cancelled; then the closing wait
    returns, hangs, or raises. The drain's error propagates, never replaced by a closing
    error, and the still-open socket is reclaimed (decision 12, as rule 11): a closing wait
    that hangs cut at the timeout (not the 1 s of an invalid one), aborted if it fails."""
    timeout = 0.1  # the "hangs" cases wait it out
    error = ConnectionResetError(errno.ECONNRESET, "RESUME drain: reset (fake)")
    ends = {"hangs": "TimeoutError", "cancelled": "CancelledError"}.get(fault, error)
    wait = RESUME_CLOSINGS[closing]
    predicted = await model.Store().run_client(timeout, resume_drain=ends)
    closing_error, _ = predicted.closing(wait)
    duration = predicted.duration(wait)
    predicted.outcome = predicted.after_closing(closing_error, wait)
    # What the drain raises is written out (a learner could not tell "raises" from a reset or a timeout).
    drain = {"raises": f"raises {type(error).__name__}", "hangs": f"hangs past the {timeout} s timeout",
             "cancelled": "hangs until run_client is cancelled"}[fault]
    what = f"run_client(host, port, path, {timeout}) on a new store, whose RESUME drain {drain}, and whose closing wait {closing}"
    with store_files.temp_store_path() as path:
        with peers.faulty_first_drain(error if fault == "raises" else "hang",
                                      "hang" if wait == model.HANGS else wait) as made:
            async with Publisher(LOG) as publisher:
                watch = tasks.Stopwatch()
                task = asyncio.create_task(impl.run_client(HOST, publisher.port, path, timeout))
                if fault == "cancelled":
                    await until(lambda: made and made[0].drains, task, SLACK)
                    cancel(task)
                got = watch.judged(await outcome_of(impl, task, duration + LATE))
                took = watch.took()
                if not made:
                    pytest.skip("the implementation does not connect through asyncio.open_connection")
                closed = await leaks.socket_closed(made[0].get_extra_info("socket"))
                if not closed:
                    made[0].transport.abort()
                ended = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
        expect_run(got, predicted, what, path)
        if took.longer_than(duration + LATE):
            model.differs(f"{what}: the time run_client took", f"{duration:.2f} s (the RESUME drain and the closing "
                          "wait each bounded by the timeout)", str(took),
                          model.OBSERVED["socket reclaimed before the session"])
        if predicted.aborts(closing_error) and made[0].transport.aborts < 1:
            model.differs(f"{what}, its closing wait (writer.wait_closed()) raising {type(closing_error).__name__}",
                          "writer.transport.abort() called", "no abort()", predicted.abort_clause(closing_error))
        if not closed:
            model.differs(what, "the socket closed before the error propagates", "the socket was left open",
                          model.OBSERVED["socket reclaimed before the session"])
        if not ended:
            model.differs(f"{what}: the server's side of the connection", "the connection ends", "it never ended",
                          model.OBSERVED["socket reclaimed before the session"])


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", sorted(statements.ERRORS))
@given(data=st.data())
@settings(max_examples=2)
@each_example_clean("run_client")
async def test_a_statement_failing_after_open_store_propagates_and_reclaims_everything(impl, kind, data):
    """A FAKE failure (``resume.testing.drivers.statements``) of the first statement run_client runs after
    open_store returned (the cursor read for RESUME, wherever it is; or a statement of the
    session): the error propagates as that very object, the store is closed, and the socket,
    if one was made, is reclaimed (decision 12). Awaited in the test's own task, so that a
    KeyboardInterrupt comes back here."""
    error = model.drawn_error(data.draw(st.sampled_from(statements.ERRORS[kind]), label="error"),
                              "a FAKE failure of a statement")
    with store_files.temp_store_path() as scratch:
        n = statements.statements_of(impl.open_store, scratch)  # on a new store, as below
    if n is None:
        pytest.skip("the implementation makes its connection otherwise: the fake cannot reach it")
    what = (f"run_client(host, port, path, timeout) on a new store, where statement {n + 1} (the first after "
            f"open_store's {n}) raises {error!r}, with a server that sends EVENT 0 5, then EOF")
    with store_files.temp_store_path() as path:
        async with peers.Peer(model.frame(0, 5)) as peer:
            with statements.failing_connections(n + 1, error) as fired:
                async with asyncio.timeout(TIMEOUT + SLACK):  # a hang fails as TimeoutError
                    got = await model.async_outcome_of(impl, impl.run_client(HOST, peer.port, path, TIMEOUT))
            ended = await peer.all_ended(PEER_ENDS_WITHIN)
        assert_store_closed(path)
    predicted = await model.Store().run_client(TIMEOUT, [model.frame(0, 5)], failed=error if fired else None)
    model.expect(got, predicted.outcome, what)
    if not ended:
        model.differs(f"{what}: the server's side of the connection", "the connection ends", "it never ended",
                      model.leak_clause("run_client", ["socket:"]))


# ------------------------------------------------- resuming from the stored cursor


@st.composite
def stored_runs(draw):
    """A store at some cursor, and a publisher that redelivers some of what it holds."""
    deltas = st.integers(model.DELTA_MIN, model.DELTA_MAX)
    applied = draw(st.lists(deltas, max_size=3))  # in the store after base, with ledger rows
    fresh = draw(st.lists(deltas, max_size=3))  # not in the store yet
    # The top of the seq range: the store's cursor at model.SEQ_MAX, nothing fresh after it.
    top = st.just(model.SEQ_MAX - len(applied))
    base = draw(st.just(model.LAST_MIN) | st.integers(0, 20) | st.integers(model.SEQ_MAX - 20, model.SEQ_MAX - 10) | top)
    fresh = [] if base + len(applied) == model.SEQ_MAX else fresh
    total = draw(st.integers(-(10**6), 10**6)) if base >= 0 else 0
    # The event at the cursor as the store holds it: the publisher's own, or (the resent event after
    # RESUME with another delta) one the publisher now sends with a delta that differs: Conflict.
    changed = bool(applied) and draw(st.booleans())
    # Stored, but their ACKs never reached the publisher: with the cursor's event changed, at least it.
    redelivered = draw(st.integers(1 if changed else 0, len(applied)))
    return base, total, applied, fresh, redelivered, changed


@pytest.mark.asyncio
@searching()
@given(stored_runs())
@each_example_clean("run_client")
async def test_the_resume_line_carries_the_stored_cursor_and_a_second_run_changes_nothing(impl, run):
    base, total, applied, fresh, redelivered, changed = run
    first = base + 1
    log = [(first + i, delta) for i, delta in enumerate(applied + fresh)]
    ledger = dict(log[:len(applied)])
    if changed:  # the store holds the cursor's event with another delta than the publisher sends
        ledger[base + len(applied)] = model.other_delta(applied[-1])
    expected = model.Store(base + len(applied), total + sum(applied), ledger)
    start = expected.copy()
    acked = start.last - redelivered  # the publisher's own ACK cursor: it sends from there on, each run
    predicted = []
    for _ in range(2):
        predicted.append(await expected.session([model.frame(*e) for e in log if e[0] > acked], None, TIMEOUT,
                                                lambda seq: None))
        acked = max([acked, *(int(ack.split()[1]) for ack in predicted[-1].acks)])
    note(f"a store at last={start.last}, total={start.total}{', ledger ' + str(ledger) if changed else ''}; "
         f"the server's log: {log}; it sends from seq {start.last - redelivered + 1}")
    event(f"redelivered: {redelivered}, fresh: {len(fresh)}")
    if changed:
        event("the cursor's event resent after RESUME with another delta")

    with store_files.temp_store_path() as path:
        impl.open_store(path).close()
        if base >= 0 or start.ledger:
            store_files.prefill(path, start.last, start.total, start.ledger)
        results, calls, publisher = await run_twice(impl, path, log, first, start.last - redelivered)
        stored = store_files.read(path)

    if len(publisher.sessions) != 2:
        model.differs(f"run_client(host, port, path, {TIMEOUT}, before_ack) twice, on a store at last={start.last}",
                      "two connections, one for each run", f"{len(publisher.sessions)} connection(s)",
                      model.OBSERVED["connection attempts"] if len(publisher.sessions) > 2 else predicted[0].resume_clause)
    for session, last in zip(publisher.sessions, (start.last, expected.last)):
        if session.resume != model.resume_line(last):
            model.differs(f"run_client(host, port, path, {TIMEOUT}, before_ack) twice, on a store at "
                          f"last={start.last}, total={start.total}; the server resends from seq "
                          f"{start.last - redelivered + 1}",
                          f"the first line {model.resume_line(last)!r}",
                          f"{session.resume!r}" if session.resume else f"nothing sent in {RESUME_WITHIN} s",
                          model.OBSERVED["resume line"])
    for index, (session, result, called, wanted) in enumerate(zip(publisher.sessions, results, calls, predicted)):
        what = (f"run_client(host, port, path, {TIMEOUT}, before_ack), run {index + 1} of 2 on a store that "
                f"started at last={start.last}, total={start.total}")
        model.expect(result, wanted.outcome, what)
        if called != wanted.calls:
            model.differs(f"{what}: the calls of before_ack", f"before_ack for seqs {wanted.calls}",
                          f"before_ack for seqs {called}", "S7.handover")  # the hook handed over to the session
        got = [model.ack(seq) for seq in session.acks]
        if got != wanted.acks:
            model.differs(f"{what}: the ACKs the server read", wanted.acks, got, wanted.acks_clause(got))
    if stored != expected.snapshot():
        model.differs("the store after both runs: each event applied exactly once", store_files.text(expected.snapshot()),
                      store_files.text(stored), model.OBSERVED["applied once"])


test_the_resume_line_carries_the_stored_cursor_and_a_second_run_changes_nothing_first_look = first_look(
    test_the_resume_line_carries_the_stored_cursor_and_a_second_run_changes_nothing,
    stored_runs())


async def run_twice(impl, path, log, start, acked):
    results, calls = [], []
    async with Publisher(log, start=start, acked=acked, resume_within=RESUME_WITHIN) as publisher:
        for _ in range(2):
            calls.append([])
            results.append(await model_outcome(
                impl, impl.run_client(HOST, publisher.port, path, TIMEOUT, calls[-1].append), TIMEOUT + SLACK))
            assert_store_closed(path)
            if not await peers.publisher_idle(publisher, PEER_ENDS_WITHIN):
                model.differs("the server's side of the connection, after run_client returned", "the connection ends",
                              "it never ended", model.leak_clause("consume_session", ["socket:"]))
    return results, calls, publisher


@pytest.mark.asyncio
@each_example_clean("run_client")
async def test_two_run_clients_at_once_each_keep_to_their_own_store(impl):
    """Two receivers in one process, at once, each with its store and its publisher (stop and
    wait: the sessions interleave): each applies its own log and returns its own state."""
    logs = [[(seq, 1) for seq in range(3)], [(seq, -2) for seq in range(12)]]
    expected = [model.Store() for _ in logs]
    predicted = [await store_.session([model.frame(*e) for e in log], None, TIMEOUT)
                 for store_, log in zip(expected, logs)]
    with store_files.temp_store_path() as first, store_files.temp_store_path() as second:
        paths = [first, second]
        async with Publisher(logs[0]) as one, Publisher(logs[1]) as other:
            got = await asyncio.gather(*(model_outcome(impl, impl.run_client(HOST, publisher.port, path, TIMEOUT),
                                                       TIMEOUT + SLACK)
                                         for publisher, path in zip((one, other), paths)))
            for path in paths:
                assert_store_closed(path)
        stored = [store_files.read(path) for path in paths]
    for index in range(2):
        model.expect(got[index], predicted[index].outcome,
                     f"run_client number {index + 1} of two at once, its publisher sending {len(logs[index])} events")
        store_files.expect_found(stored[index], expected[index], f"the store of run_client number {index + 1}")


# ------------------------------------------------- the reader's limit


@pytest.mark.asyncio
@each_example_clean("run_client")
async def test_a_line_longer_than_64_bytes_fails_at_once_with_ValueError(impl):
    """The peer sends 100 bytes with no LF and keeps the connection open: with
    ``limit=64`` the read fails at once; a larger limit would wait for the timeout."""
    timeout = 2.0  # past SLACK: a read that waits for it shows
    line = b"EVENT 0 " + b"1" * 100
    predicted = await model.Store().run_client(timeout, [line], "ValueError")
    with store_files.temp_store_path() as path:
        async with peers.Peer(line, eof=False) as peer:
            watch = tasks.Stopwatch()
            got = await model_outcome(impl, impl.run_client(HOST, peer.port, path, timeout), timeout + SLACK)
            took = watch.took()
            ended = await peer.all_ended(PEER_ENDS_WITHIN)
        expect_run(got, predicted, "run_client(host, port, path, timeout) on a new store, with a server that sends 100 bytes and no LF",
                   path)
        if took.longer_than(predicted.duration() + LATE):
            model.differs("run_client(host, port, path, timeout) with a server that sends 100 bytes and no LF: its time",
                          f"at most {predicted.duration():.2f} s (it fails at the 64-byte limit)", str(took),
                          "D9.over-long")
        if not ended:
            model.differs("the server's side of the connection, after run_client raised",
                          "the connection ends (run_client closed its socket)", "it never ended",
                          model.leak_clause("consume_session", ["socket:"]))


# ------------------------------------------------- cancellation


LOG = [(0, 5), (1, 7)]


@pytest.mark.asyncio
@each_example_clean("run_client")
async def test_run_client_cancelled_at_any_point_closes_the_store_and_the_socket(impl):
    """Cancel after 1, 2, ... turns of the loop until the run is over before the
    cancel: every await point of connecting, sending RESUME and the session is
    hit in turn. Whatever the events committed by then, the model's session
    cancelled after them: its outcome, its store, a prefix of its ACKs."""
    landed = []
    for iterations in range(1, 300):
        with store_files.temp_store_path() as path:
            accepted, got, acks, ended = await cancel_a_run(impl, path, iterations)
            stored = store_files.read(path)
        if not accepted:  # the run was over before the cancel: every point has been hit
            break
        expected = model.Store()
        committed = len(stored.ledger)  # a prefix of LOG, if any: the model's snapshot says
        # A cancellation that arrived before the end must propagate, even one that
        # lands as a wait completes (asyncio.wait_for on 3.11 drops it: gh-86296).
        predicted = await expected.run_client(TIMEOUT, [model.frame(*e) for e in LOG[:committed]], "CancelledError")
        # In the learner's words: no "turns of the event loop", and no count of the events committed
        # (read after the run, they say nothing of when the cancellation came: a dropped one let the
        # run go on). The rerun line replays the very point; "in your file" shows where it landed.
        where = (f"run_client('127.0.0.1', port, path, {TIMEOUT}) on a new store, the publisher sending "
                 f"{len(LOG)} events, cancelled by its caller partway through")
        model.expect(got, predicted.outcome, where)
        if not ended:
            model.differs(f"{where}: the server's side of the connection", "the connection ends", "it never ended",
                          model.leak_clause("consume_session", ["socket:"]))
        store_files.expect_found(stored, expected, f"{where}: the store")
        if [model.ack(seq) for seq in acks] != predicted.acks[:len(acks)]:
            model.differs(f"{where}: the ACKs the server read", predicted.acks, [model.ack(seq) for seq in acks],
                          predicted.acks_clause([model.ack(seq) for seq in acks]))
        landed.append(committed)
    else:
        raise AssertionError("the run never ended")
    assert {0, len(LOG)} <= set(landed), f"cancellations landed only after {landed} events"


async def cancel_a_run(impl, path, iterations):
    async with Publisher(LOG) as publisher:
        task = asyncio.create_task(impl.run_client(HOST, publisher.port, path, TIMEOUT))
        accepted = await cancel_after(task, iterations)
        got = await outcome_of(impl, task, TIMEOUT + SLACK)
        assert_store_closed(path)  # the cancelled task still holds its frames
        ended = await peers.publisher_idle(publisher, PEER_ENDS_WITHIN)
    return accepted, got, publisher.acks, ended


# ------------------------------------------------- any form of host and port

# Decision 16: host and port go to asyncio.open_connection as given (arguments.HOST_FORMS, PORT_FORMS).


@pytest.mark.asyncio
@pytest.mark.parametrize("port_form", sorted(arguments.PORT_FORMS))
@pytest.mark.parametrize("host_form", sorted(arguments.HOST_FORMS))
@given(log=st.lists(st.integers(model.DELTA_MIN, model.DELTA_MAX), max_size=2))
@settings(max_examples=3)  # the forms are the point, not the events
@each_example_clean("run_client")
async def test_any_form_of_host_and_port_reaches_the_peer(impl, host_form, port_form, log):
    """Whatever ``asyncio.open_connection`` does with the host and port as given (a probe of the
    test's own asks it), run_client does, after opening the store: connects, or raises that error."""
    host, listen = arguments.HOST_FORMS[host_form]
    with peers.Listener(host=listen) as listener:
        connect = await peers.connect_as_given(host, arguments.PORT_FORMS[port_form](listener.port), TIMEOUT)
    lines = [model.frame(seq, delta) for seq, delta in enumerate(log)]
    expected = model.Store()
    predicted = model.as_given(await expected.run_client(TIMEOUT, lines, connect=connect))
    with store_files.temp_store_path() as path:
        async with peers.Peer(b"".join(lines), host=listen) as peer:
            port = arguments.PORT_FORMS[port_form](peer.port)
            got = await model_outcome(impl, impl.run_client(host, port, path, TIMEOUT), TIMEOUT + SLACK)
            await peer.all_ended(PEER_ENDS_WITHIN)
            received = peer.connections[0].received if peer.connections else b""
        what = f"run_client({host!r}, {port!r}, path, {TIMEOUT}) on a new store"
        expect_run(got, predicted, what, path, after=expected)
        if received != (predicted.resume or b"") + b"".join(predicted.acks):
            model.differs(f"{what}: what the server read", repr((predicted.resume or b"") + b"".join(predicted.acks)),
                          repr(received), predicted.sent_clause([received] if received else []))
