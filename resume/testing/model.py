"""SPEC.md as executable code: what every call of the seven steps must do.

Rule 1: everything the contract says lives in this file. Every bound
(seq, delta, last, limit, the log's length, the frame's 64 bytes, the busy
timeout, the 1 s closing fallback), the frame grammar, the cursor rule, what
``replay`` returns and what a session commits, calls, writes and raises are
stated here once; the strategies, the state machines and every property
import them and compare an implementation's behaviour with the prediction.
No test keeps a rule of its own.

Theory of operation. A prediction is an ``Outcome``: the call returned a
value (``Returned``) or raised an error of a kind (``Raised``), where the
kinds are the contract's names (``"ValueError"``, ``"Gap"``, ``"Conflict"``,
``"ResyncRequired"``, ``"OperationalError"``, ``"TimeoutError"``, ...). A
failure that the contract says must propagate *as the very object* (a hook's
or a fault's exception, a cancellation) is predicted as ``Raised`` with that
object, and is compared by identity. ``outcome_of(impl, call)`` is the one
mapping from what an implementation did to an ``Outcome`` (and
``tasks.outcome_of`` for a task); ``expect`` compares the two and says, in
plain words, what differed.

State lives in ``Store``: the cursor, the total and the ledger a correct
store holds. ``Store.apply_event`` / ``consume_line`` / ``session`` /
``run_client`` move it exactly as SPEC.md's steps 3, 5, 6 and 7 say;
``replay`` and ``parse_line`` are pure. Hooks (``fault``, ``before_ack``) are called BY the model at the moment
the contract calls them, so a hook that raises, or cannot be called at all
(decision 15), gives the model the same failure it gives the implementation.

The transitions of the cursor rule (step 3, decisions 4 and 6)::

    seq == last + 1            -> applied: row, total, fault(), last; True
    seq <= last, same delta    -> duplicate: nothing changes; False
    seq <= last, other or none -> Conflict, nothing changes
    seq >  last + 1            -> Gap, nothing changes
"""

import contextlib
import dataclasses
import inspect
import math
import os
import pathlib
import sqlite3

# ------------------------------------------------------------ the bounds

SEQ_MIN, SEQ_MAX = 0, 2147483647  # step 1
DELTA_MIN, DELTA_MAX = -1000, 1000  # step 1
LAST_MIN = -1  # step 4: the cursor of an empty store
LIMIT_MIN, LIMIT_MAX = 1, 16  # step 4
LOG_MIN, LOG_MAX = 1, 128  # step 4: events in replay's log
TOTAL_MIN, TOTAL_MAX = DELTA_MIN * (SEQ_MAX + 1), DELTA_MAX * (SEQ_MAX + 1)  # step 2: every event's delta summed
FRAME_MAX = 64  # step 1 and decision 2: bytes, the final LF included
READER_LIMIT = 64  # step 7: asyncio.open_connection(host, port, limit=64)
BUSY_TIMEOUT = 1.0  # step 2 and decision 3: seconds; PRAGMA busy_timeout reads 1000
CLOSE_FALLBACK = 1.0  # decision 10: the closing wait's bound after an invalid timeout
INITIAL_STATE = (LAST_MIN, 0)  # step 2: the checkpoint row (1, -1, 0)

# The contract's exception names that a caller can catch (steps 3 and 4).
CONTRACT_ERRORS = ("Gap", "Conflict", "ResyncRequired")


def is_int(value):
    """An ``int`` (subclasses too, decision 14) that is not a ``bool`` (decision 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_int_in(value, low, high):
    return is_int(value) and low <= value <= high


def is_seq(value):
    return is_int_in(value, SEQ_MIN, SEQ_MAX)


def is_delta(value):
    return is_int_in(value, DELTA_MIN, DELTA_MAX)


def is_valid_timeout(timeout):
    """Decision 10: an int or float (subclasses too), not bool, with 0 < timeout < inf."""
    if not is_int(timeout) and not isinstance(timeout, float):
        return False
    try:
        seconds = float(timeout)
    except OverflowError:  # an int too large to become a float
        return False
    return 0 < seconds < math.inf  # NaN compares False


def closing_bound(timeout):
    """The bound of the closing wait: the timeout, or 1 s after an invalid one (decision 10)."""
    return timeout if is_valid_timeout(timeout) else CLOSE_FALLBACK


# ------------------------------------------------------------ outcomes


@dataclasses.dataclass(frozen=True, eq=False)
class Returned:
    """The call returned ``value``: equal to another if the values are the same, type and all.

    ``==`` alone takes ``1`` for ``True``, a ``bytearray`` for ``bytes`` and
    a list for nothing but a list: SPEC.md names the types (``True``, the
    tuple ``(seq, delta)``, ``b"ACK <seq>\n"``, a new list of tuples). A
    subclass of the type named is that type (decisions 7 and 14: a
    namedtuple the caller passed may come back from replay).
    """

    value: object

    def __eq__(self, other):
        return isinstance(other, Returned) and same(self.value, other.value)

    __hash__ = None

    def __str__(self):
        return f"returns {self.value!r}"


def same(one, other):
    """The two values are equal and of the same kind (bool, bytes, int, tuple, list; subclasses too)."""
    if isinstance(one, bool) or isinstance(other, bool):
        return type(one) is type(other) and one == other
    for kind in (bytes, int, tuple, list):
        if isinstance(one, kind) or isinstance(other, kind):
            if not (isinstance(one, kind) and isinstance(other, kind)):
                return False
            if kind in (tuple, list):
                return len(one) == len(other) and all(map(same, one, other))
            return one == other
    return one == other


@dataclasses.dataclass(frozen=True, eq=False)
class Raised:
    """The call raised an error of ``kind``; if ``error`` is given, that very object."""

    kind: str
    error: BaseException | None = None

    def __eq__(self, other):
        if not isinstance(other, Raised) or other.kind != self.kind:
            return False
        if self.error is None or other.error is None:
            return True
        return self.error is other.error

    __hash__ = None

    def __str__(self):
        if self.error is not None:
            return f"raises that very {type(self.error).__name__}({str(self.error)!r})"
        return f"raises {self.kind}"


def drawn_error(cls, text):
    """An error for a drawn hook or a FAKE failure to raise, marked as the suite's own
    (``is_drawn``): one that reaches pytest escaped the call under test."""
    error = cls(text)
    error.drawn_by_the_suite = True
    return error


def is_drawn(error):
    return getattr(error, "drawn_by_the_suite", False) is True


def propagates(error):
    """The outcome of a failure the contract lets through unchanged (decisions 5, 11, 15)."""
    return Raised(kind_of_class(type(error)), error)


def hook_failed(hook, error):
    """The outcome when calling ``hook`` raised ``error`` (decisions 5 and 15).

    A hook's own exception propagates as that very object; a value that
    cannot be called fails with a TypeError of the caller's own making.
    """
    return propagates(error) if callable(hook) else Raised("TypeError")


def kind_of_class(cls, impl=None):
    """The contract's name for an exception class: the impl's own classes first."""
    if impl is not None:
        for name in CONTRACT_ERRORS:
            if issubclass(cls, getattr(impl, name)):
                return name
    for base in (ValueError, sqlite3.OperationalError, TimeoutError, ConnectionRefusedError, ConnectionError):
        if issubclass(cls, base):
            return base.__name__
    return cls.__name__


def outcome_of(impl, call, *args, **kwargs):
    """What ``call(*args, **kwargs)`` did, as an ``Outcome`` (the one exception mapping).

    Every ``BaseException`` is caught, ``KeyboardInterrupt`` and
    cancellation included: a fault may raise them on purpose (decision 5).
    """
    try:
        return Returned(call(*args, **kwargs))
    except BaseException as error:  # noqa: BLE001 - the outcome is the point
        return Raised(kind_of_class(type(error), impl), error)


async def async_outcome_of(impl, awaitable):
    """``outcome_of`` for a coroutine: what awaiting it did."""
    try:
        return Returned(await awaitable)
    except BaseException as error:  # noqa: BLE001
        return Raised(kind_of_class(type(error), impl), error)


class Mismatch(AssertionError):
    """What a call did differs from what the model predicts: one plain sentence, and its parts.

    ``what`` is the call (or the thing observed) as a learner would write it,
    ``expected`` and ``got`` are plain values in words (``"raises Gap"``,
    ``"returns True"``, ``"ACK 0, ACK 1"``): no repr of the suite's own
    objects. ``resume check`` prints the three parts on lines of their own
    (``resume.testing.verdict``); the message is the same sentence for pytest.
    """

    def __init__(self, what, expected, got, *, sentence=None):
        self.what, self.expected, self.got = str(what), str(expected), str(got)
        super().__init__(sentence or f"{self.what}: expected {self.expected}, but got {self.got}")

    def parts(self):
        """``{"call", "expected", "got"}``: the parts, for a report."""
        return {"call": self.what, "expected": self.expected, "got": self.got}


def expect(got, expected, what):
    """Assert that outcome ``got`` is the predicted ``expected``, saying ``what`` was called.

    Raised rather than asserted, so that the failure reads as one plain
    sentence, without pytest's diff of the outcome objects. The exception is a
    ``Mismatch`` (an AssertionError) that carries ``what``, ``expected`` and
    ``got`` apart.
    """
    if got != expected:
        raise Mismatch(what, expected, plain(got), sentence=f"{what}: expected it {expected}, but it {got}")


def plain(outcome):
    """What an implementation's call did, in words: ``returns (0, 5)``, ``raises ValueError: bad frame``."""
    if isinstance(outcome, Raised) and outcome.error is not None:
        message = str(outcome.error)
        return f"raises {type(outcome.error).__name__}" + (f": {message}" if message else "")
    return str(outcome)


def call_text(name, *args, on=None, kind=None, **optional):
    """A call as a learner writes it: ``apply_event(con, 3, -1000) on a store at last=1, total=-2000``.

    ``args`` are shown as Python values (``"con"`` stays a name: pass a
    ``Name``); an ``optional`` argument that is None is left out, as the
    learner would leave it out; ``on`` is the ``Store`` the call starts from,
    ``kind`` what the call's event is to it (``Store.what_it_is``).
    """
    shown = [repr(arg) for arg in args] + [f"{key}={value!r}" for key, value in optional.items()
                                           if value is not None]
    text = f"{name}({', '.join(shown)})"
    if on is not None:
        text += f" on a store at last={on.last}, total={on.total}"
    return text + (f" ({kind})" if kind else "")


class Name(str):
    """A name in a call's text, shown without quotes (``con``, ``reader``)."""

    def __repr__(self):
        return str(self)


CON = Name("con")


def differs(what, expected, got):
    """Raise ``Mismatch`` for an observation (not an outcome) that is not what the model says."""
    raise Mismatch(what, expected, got)


# ------------------------------------------------------------ step 1

_DIGITS = frozenset(b"0123456789")


def frame(seq, delta):
    """The frame of event ``(seq, delta)``: ``b"EVENT <seq> <delta>\\n"``."""
    return b"EVENT %d %d\n" % (seq, delta)


def ack(seq):
    """The ACK ``consume_line`` returns for ``seq`` (step 5)."""
    return b"ACK %d\n" % seq


def resume_line(last):
    """What ``run_client`` writes first (step 7)."""
    return b"RESUME %d\n" % last


def parse(line):
    """``(seq, delta)`` if ``line`` is a frame (step 1, decisions 2 and 13), else None.

    Read byte by byte, with none of ``int()``'s tolerance: ``bytes``
    (subclasses too), at most 64 bytes with the LF, one line ending in LF,
    ``EVENT``, seq and delta separated by exactly one space, ASCII digits, no
    leading zero but ``0`` itself, a minus sign only on a non-zero delta.
    """
    if not isinstance(line, bytes) or len(line) > FRAME_MAX:
        return None
    if not line.endswith(b"\n") or line.count(b"\n") != 1:
        return None
    parts = line[:-1].split(b" ")
    if len(parts) != 3 or parts[0] != b"EVENT":
        return None
    seq = _natural(parts[1])
    negative = parts[2].startswith(b"-")
    magnitude = _natural(parts[2][1:] if negative else parts[2])
    if seq is None or magnitude is None or (negative and magnitude == 0):
        return None
    delta = -magnitude if negative else magnitude
    return (seq, delta) if is_seq(seq) and is_delta(delta) else None


def _natural(text):
    """The value of a run of ASCII digits without a leading zero, else None."""
    if not text or not set(text) <= _DIGITS or (len(text) > 1 and text[0] == ord("0")):
        return None
    return int(text)


def parse_line(line):
    """Step 1: ``(seq, delta)`` for a frame, ValueError for anything else."""
    parsed = parse(line)
    return Raised("ValueError") if parsed is None else Returned(parsed)


# ------------------------------------------------------------ step 2

# What ``sqlite3.connect(path)`` makes of a path (decision 3: open_store
# connects with exactly that call): a file at that very name, or a store that
# is gone when its connection closes (``":memory:"``, and ``""``: a private
# temporary file), or no store at all (a folder, a missing parent folder), or
# a file that is not a database (its first bytes are not SQLite's header), or a
# database whose ``checkpoint`` table lacks a column of SPEC's (another program's
# table of that name: the initial row cannot be stored, however the SQL is written).
PATH_FILE, PATH_FORGETS, PATH_UNUSABLE, PATH_NOT_A_DATABASE = "file", "forgets", "unusable", "not a database"
PATH_OTHER_CHECKPOINT = "another checkpoint table"
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file
CHECKPOINT_COLUMNS = {"id", "last", "total"}


def _checkpoint_columns(name):
    """The column names of the ``checkpoint`` table in the database file ``name`` (empty: no such table)."""
    uri = pathlib.Path(name).absolute().as_uri() + "?mode=ro"  # read only: the file is left as it is
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as con:
        return {row[1].lower() for row in con.execute("PRAGMA table_info(checkpoint)")}


def path_kind(path):
    """Which of the five a path is, as ``sqlite3.connect`` takes it (looked up on disk now)."""
    name = os.fsdecode(path)
    if name in ("", ":memory:"):
        return PATH_FORGETS
    parent = os.path.dirname(os.path.abspath(name))
    if os.path.isdir(name) or not os.path.isdir(parent):
        return PATH_UNUSABLE
    if os.path.isfile(name) and os.path.getsize(name):
        with open(name, "rb") as file:
            if file.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                return PATH_NOT_A_DATABASE
        columns = _checkpoint_columns(name)
        if columns and not CHECKPOINT_COLUMNS <= columns:
            return PATH_OTHER_CHECKPOINT
    return PATH_FILE


def open_store(path, existing=None, failed=None, locked=False):
    """Step 2: the outcome of ``open_store(path)``; ``existing`` is the model store the file holds;
    ``failed``: the error one of its statements raised, if one did; ``locked``: another
    connection holds the write lock on the file.

    A usable path gives a connection whose ``state`` is the existing store's
    (a new one's is ``(-1, 0)``); a path where no database can be opened, or
    whose ``checkpoint`` table cannot hold SPEC's row, raises
    ``sqlite3.OperationalError``, a file that is not a database
    ``sqlite3.DatabaseError`` at the first statement ("If initialisation
    fails, close the connection and let the error propagate").
    """
    if failed is not None:
        return propagates(failed)
    if locked and existing is None:  # a new store must be written: "A locked database surfaces as
        return Raised("OperationalError")  # sqlite3.OperationalError after the busy timeout" (decision 4)
    if path_kind(path) in (PATH_UNUSABLE, PATH_OTHER_CHECKPOINT):
        return Raised("OperationalError")
    if path_kind(path) == PATH_NOT_A_DATABASE:
        return Raised("DatabaseError")
    store = existing if existing is not None and path_kind(path) == PATH_FILE else Store()
    return Returned(store.state())


# ------------------------------------------------------------ step 4


def replay(events, last, limit):
    """Step 4 and decision 7: the outcome of ``replay(events, last, limit)``.

    ValueError for: not a list; not 1..128 items; an item that is not a
    2-tuple of a seq and a delta; seqs not consecutive and ascending; ``last``
    not an int in -1..2147483647 or past the final seq; ``limit`` not an int
    in 1..16. All of that over the whole input before ResyncRequired
    (``last < first - 1``). Else the items with seqs ``last + 1`` on, at most
    ``limit`` of them.
    """
    if not isinstance(events, list) or not LOG_MIN <= len(events) <= LOG_MAX:
        return Raised("ValueError")
    for index, item in enumerate(events):
        if not (isinstance(item, tuple) and len(item) == 2 and is_seq(item[0]) and is_delta(item[1])):
            return Raised("ValueError")
        if index and item[0] != events[index - 1][0] + 1:
            return Raised("ValueError")
    first, final = events[0][0], events[-1][0]
    if not is_int_in(last, LAST_MIN, SEQ_MAX) or last > final or not is_int_in(limit, LIMIT_MIN, LIMIT_MAX):
        return Raised("ValueError")
    if last < first - 1:
        return Raised("ResyncRequired")
    start = last + 1 - first
    return Returned([tuple(item) for item in events[start:start + limit]])


# ------------------------------------------------------------ steps 2, 3, 5, 6: the store


def decide(last, ledger, seq, delta):
    """The cursor rule: "applied", "duplicate", "conflict" or "gap" (step 3, decision 6)."""
    if seq == last + 1:
        return "applied"
    if seq > last + 1:
        return "gap"
    return "duplicate" if ledger.get(seq) == delta else "conflict"


_ERROR_OF_DECISION = {"gap": "Gap", "conflict": "Conflict"}


def inconsistencies(last, total, ledger, log, acks=()):
    """What is wrong with a store that a receiver left, wherever it died: ``[]`` if nothing.

    Step 3 and decision 18: every event is fully applied or not at all
    (``total == SUM(ledger)``, the ledger holds exactly ``0..last``, each row
    with the delta the publisher sent, ``log`` being ``{seq: delta}``), and
    every ACK the publisher received (``acks``) is for a committed event.
    """
    problems = []
    if total != sum(ledger.values()):
        problems.append(f"total {total} != SUM(ledger) {sum(ledger.values())} (ledger {ledger})")
    if sorted(ledger) != list(range(last + 1)):
        problems.append(f"the ledger holds seqs {sorted(ledger)}, not exactly 0..{last}")
    wrong = {seq: delta for seq, delta in ledger.items() if log.get(seq) != delta}
    if wrong:
        problems.append(f"ledger rows that were never published so: {wrong}")
    early = sorted({seq for seq in acks if seq > last})
    if early:
        problems.append(f"ACKs {early} received for events not committed (last = {last})")
    return problems


@dataclasses.dataclass
class Store:
    """What a correct store holds: the cursor, the total and the ledger ``{seq: delta}``.

    A store that another writer made may hold a checkpoint whose total is
    not the sum of its ledger, and a ledger with rows missing below the
    cursor: the model keeps what it was given (steps 2 and 3 never rewrite
    it) and goes on from there.
    """

    last: int = LAST_MIN
    total: int = 0
    ledger: dict = dataclasses.field(default_factory=dict)

    def state(self):
        """Step 2: ``(last, total)``."""
        return self.last, self.total

    def copy(self):
        return Store(self.last, self.total, dict(self.ledger))

    def snapshot(self):
        """``((last, total), ledger)``: what a reader of the store file sees."""
        return (self.last, self.total), dict(sorted(self.ledger.items()))

    def decide(self, seq, delta):
        return decide(self.last, self.ledger, seq, delta)

    def what_it_is(self, seq, delta):
        """In words, what event ``(seq, delta)`` is to this store: ``"a duplicate"``, ``"a gap"``, ..."""
        if not (is_seq(seq) and is_delta(delta)):
            return "not a valid event"
        return {"applied": "the next event", "duplicate": "a duplicate, same delta",
                "conflict": "a redelivery with another delta" if seq in self.ledger else
                            "a seq at or below last with no ledger row",
                "gap": "a gap"}[self.decide(seq, delta)]

    def apply_event(self, seq, delta, fault=None, failed=None):
        """Step 3: the outcome of ``apply_event(con, seq, delta, fault)``; the store moves if it applied.

        ``fault`` is called here, at the contract's moment (after the row and
        the total, before the cursor: ``at_fault`` is the store it sees);
        whatever it raises propagates and nothing changes (decision 5), a
        non-callable included (decision 15). ``failed``: the error one of the
        call's statements raised, if one did ("On failure, roll back every
        change, let the original error propagate").
        """
        if not (is_seq(seq) and is_delta(delta)):
            return Raised("ValueError")
        if failed is not None:
            return propagates(failed)
        decision = self.decide(seq, delta)
        if decision in _ERROR_OF_DECISION:
            return Raised(_ERROR_OF_DECISION[decision])
        if decision == "duplicate":
            return Returned(False)
        if fault is not None:
            try:
                fault()
            except BaseException as error:  # noqa: BLE001 - decision 5: any BaseException
                return hook_failed(fault, error)
        self.ledger[seq] = delta
        self.last, self.total = seq, self.total + delta
        return Returned(True)

    def at_fault(self, seq, delta):
        """The store as ``fault`` sees it inside the transaction of ``(seq, delta)`` (step 3's order)."""
        return Store(self.last, self.total + delta, {**self.ledger, seq: delta})

    def consume_line(self, line, fault=None, failed=None):
        """Step 5: ``b"ACK <seq>\\n"`` once committed (a duplicate too), else step 1's or 3's error
        (``failed``: as ``apply_event`` takes it)."""
        parsed = parse(line)
        if parsed is None:
            return Raised("ValueError")
        outcome = self.apply_event(*parsed, fault, failed)
        return Returned(ack(parsed[0])) if isinstance(outcome, Returned) else outcome

    async def session(self, lines, ending=None, timeout=1.0, before_ack=None, drain=None, drain_at=0,
                      failed=None, failed_after=0):
        """Step 6: what ``consume_session`` does with a peer that sends ``lines`` and then ``ending``.

        ``lines`` are the lines ``readline`` returns, in order (a line without
        a final LF is what readline returns at EOF mid-frame: decision 9; a
        line longer than the reader's limit is refused as ValueError, by the
        reader or by ``parse_line``, whose limit is the same 64 bytes).
        ``ending`` is what ends the stream after them: None for EOF; the kind
        of error a read ends with (``"TimeoutError"`` for a silent peer,
        ``"ValueError"`` for a line over the reader's limit,
        ``"ConnectionError"`` for a reset); or an exception object that the
        read raises (a cancellation, a fault injected), which propagates as
        that very object. ``drain`` is how the drain after each ACK ends,
        in the same terms: None when it returns (the peer reads), else the
        drain after ACK number ``drain_at`` (0-based) ends so
        (``"TimeoutError"`` for a peer that never reads, a cancellation or a
        reset arriving there). ``before_ack`` is
        called and its awaitable awaited here, as the contract says
        (decision 8), so its failures are the model's too. ``failed``: the
        error a statement of the DB connection raised after read number
        ``failed_after`` (1-based) returned, if one did: in that line's
        ``consume_line``, or, after the read that found EOF, in ``state``.

        Returns a ``Session``: the ACKs written, the before_ack calls, the
        outcome before the connection is reclaimed, the closing bound, and
        the time spent in waits that ran to their bound.
        """
        result = Session(closing_bound=closing_bound(timeout))
        if not is_valid_timeout(timeout):
            result.outcome = Raised("ValueError")
            return result
        for number, line in enumerate(lines, 1):
            outcome = self.consume_line(line, failed=failed if number == failed_after else None)
            if isinstance(outcome, Raised):
                result.outcome = outcome
                return result
            seq = parse(line)[0]
            if before_ack is not None:
                result.calls.append(seq)
                try:
                    returned = before_ack(seq)
                    if inspect.isawaitable(returned):
                        await returned
                except BaseException as error:  # noqa: BLE001 - step 6: errors propagate
                    result.outcome = hook_failed(before_ack, error)
                    return result
            result.acks.append(outcome.value)
            if drain is not None and len(result.acks) == drain_at + 1:
                result.outcome = result.wait_failed(drain, timeout)
                return result
        if ending is None:
            at_eof = failed if failed_after == len(lines) + 1 else None
            result.outcome = Returned(self.state()) if at_eof is None else propagates(at_eof)
        else:
            result.outcome = result.wait_failed(ending, timeout)
        return result

    async def run_client(self, timeout, lines=(), ending=None, before_ack=None, *,
                         path=None, connect=None, resume_drain=None):
        """Step 7: what ``run_client`` does on a store holding this one, with a peer that accepts,
        reads ``RESUME <last>`` and then sends ``lines`` and ``ending`` (as ``session`` takes them).

        Decision 10: an invalid timeout is ValueError before anything is
        opened. Then "open, in this order, ``open_store(path)`` and
        ``asyncio.open_connection(host, port, limit=64)`` bounded by
        ``timeout``": ``path`` None is a usable store file (else step 2's
        ``open_store(path, self)`` decides); ``connect`` is how the one
        attempt (decision 16) ends, None when it connects, else as
        ``session``'s ``ending`` takes it (``"TimeoutError"`` for one that
        never completes, ``"ConnectionRefusedError"``). ``resume_drain``
        is how the drain of the RESUME line ends, in the same terms (decision
        12: the error propagates once the socket is reclaimed). Then the
        session's outcome. The DB connection is closed on every path.

        Returns a ``Session`` whose ``opens`` and ``resume`` say whether the
        store was opened and which RESUME line was written (None: no connection).
        """
        result = Session(closing_bound=closing_bound(timeout))
        if not is_valid_timeout(timeout):
            result.outcome = Raised("ValueError")
            return result
        opened = open_store(path, self) if path is not None else Returned(self.state())
        if isinstance(opened, Raised):
            result.outcome = opened
            return result
        result.opens = True
        if connect is not None:
            result.outcome = result.wait_failed(connect, timeout)
            return result
        result.resume = resume_line(self.last)
        if resume_drain is not None:
            result.outcome = result.wait_failed(resume_drain, timeout)
            return result
        session = await self.session(lines, ending, timeout, before_ack)
        session.opens, session.resume = True, result.resume
        return session


HANGS = "hangs"  # a closing wait that never ends by itself (``Session.closing``)


@dataclasses.dataclass
class Session:
    """What a correct session did (``Store.session``).

    ``outcome`` is the session's own outcome. Reclaiming the connection then
    follows decision 11: ``close()``, a wait bounded by ``closing_bound``,
    ``abort()`` if that wait fails; see ``closing`` and ``after_closing``.
    """

    acks: list = dataclasses.field(default_factory=list)  # the ACK lines written, in order
    calls: list = dataclasses.field(default_factory=list)  # the seqs before_ack was called with
    outcome: object = None
    closing_bound: float = CLOSE_FALLBACK
    expired: float = 0.0  # seconds spent in reads and drains that ran to their bound
    opens: bool = False  # step 7: the store was opened
    resume: bytes | None = None  # step 7: the RESUME line written (None: no connection made)

    def wait_failed(self, error, timeout):
        """The outcome of a read or drain that ended with ``error`` (a kind, or the very object).

        Step 6: "Bound every ``readline`` wait by ``timeout``", "a ``drain``
        bounded by ``timeout``": one that ends with TimeoutError has waited
        ``timeout`` seconds first. "Errors and cancellation propagate."
        """
        if error == "TimeoutError":
            self.expired += float(timeout)
        return Raised(error) if isinstance(error, str) else propagates(error)

    def closing(self, wait=None):
        """Decision 11: how the closing wait ends, ``(error or None, seconds)``.

        "``close()``, then ``wait_closed()`` bounded by the timeout" (1 s
        after an invalid one: decision 10). ``wait`` is what ``wait_closed()``
        does unbounded: None (it ends at once), ``HANGS`` (never), a number
        of seconds (it ends then), or an exception it raises at once (a
        cancellation arriving in it included). A wait not over within the
        bound ends with TimeoutError at the bound; one that ends within it is
        awaited to its end.
        """
        if wait is None:
            return None, 0.0
        if wait == HANGS or (isinstance(wait, (int, float)) and wait >= self.closing_bound):
            return TimeoutError("the closing wait ran to its bound"), self.closing_bound
        if isinstance(wait, (int, float)):
            return None, float(wait)
        return wait, 0.0

    def duration(self, wait=None):
        """Seconds the call takes: the waits that ran to their bound, then the closing wait (the rest is immediate)."""
        return self.expired + self.closing(wait)[1]

    def after_closing(self, closing_error=None):
        """Decision 11: the call's outcome once the closing wait raised ``closing_error`` (or nothing).

        A TimeoutError or ConnectionError of the wait is absorbed (after an
        abort); any other error replaces a normal return; the session's own
        error is never replaced.
        """
        if closing_error is None or isinstance(closing_error, (TimeoutError, ConnectionError)):
            return self.outcome
        return self.outcome if isinstance(self.outcome, Raised) else propagates(closing_error)

    @staticmethod
    def aborts(closing_error):
        """Decision 11: whether ``transport.abort()`` must be called after the closing wait."""
        return closing_error is not None
