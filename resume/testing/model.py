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

Every prediction says why: an ``Outcome`` carries the clause of SPEC.md
(``resume.testing.spec``: ``"S3.gap"``, ``"D11.error-wins"``) of the branch
that decided it, and ``instead``: the clause a call breaks that does
something else in particular (``{"ValueError": "D14"}``: refusing an int
subclass; ``{"returns": "S5.fault"}``: swallowing the fault's error).
``blame`` picks the clause a difference breaks, and every ``Mismatch``
carries it: ``resume check`` quotes that sentence, nothing else chooses one.

The transitions of the cursor rule (step 3, decisions 4 and 6)::

    seq == last + 1            -> applied: row, total, fault(), last; True
    seq <= last, same delta    -> duplicate: nothing changes; False
    seq <= last, other or none -> Conflict, nothing changes
    seq >  last + 1            -> Gap, nothing changes
"""

import contextlib
import dataclasses
import functools
import inspect
import math
import os
import pathlib
import sqlite3
import sys

from resume.testing import spec

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

# The public names of SPEC.md, step by step: what a file must define to be graded on that step.
PUBLIC_NAMES = {1: ("parse_line",), 2: ("open_store", "state"), 3: ("Gap", "Conflict", "apply_event"),
                4: ("ResyncRequired", "replay"), 5: ("consume_line",), 6: ("consume_session",), 7: ("run_client",)}

# What each step builds on: the steps whose calls it makes or whose store it uses (step 3 and
# step 2's store; step 5: "Call `parse_line` and `apply_event`"; step 6: "committed with
# `consume_line`"; step 7: "open_store(path)", "hand over to `consume_session`"). A step can be
# checked once its own public names and those of the steps it builds on are written.
BUILDS_ON = {1: (), 2: (), 3: (2,), 4: (), 5: (1, 2, 3), 6: (1, 2, 3, 5), 7: (1, 2, 3, 5, 6)}


def names_for(step):
    """The public names a check of ``step`` (1-7; None: the protocol as a whole) needs written."""
    steps = PUBLIC_NAMES if step is None else (*BUILDS_ON[step], step)
    return tuple(name for number in sorted(steps) for name in PUBLIC_NAMES[number])


# The contract's exception names that a caller can catch (steps 3 and 4), and the clause
# that declares each.
EXCEPTION_CLAUSES = {"Gap": "S3.exceptions", "Conflict": "S3.exceptions", "ResyncRequired": "S4.exception"}
CONTRACT_ERRORS = tuple(EXCEPTION_CLAUSES)


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


def timeout_refusal(timeout, general):
    """ValueError for an invalid ``timeout``: decision 10 names NaN and an int too large to become
    a float (whatever else a call raises for them); ``general`` (step 6's or 7's sentence) the rest."""
    if (isinstance(timeout, float) and math.isnan(timeout)) or (is_int(timeout) and abs(timeout) > sys.float_info.max):
        return Raised("ValueError", clause="D10")
    return refusal(general)


def timeout_refused(timeout):
    """``instead`` for a call given the valid ``timeout``: refusing it breaks the clause that makes
    it valid, where it is not a plain, everyday float (an int subclass: decision 14)."""
    if type(timeout) not in (int, float):
        return {"ValueError": "D14"}
    if type(timeout) is int or not 1e-3 <= timeout <= 86400:
        return {"ValueError": "S6.timeout-valid"}
    return None


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
    clause: str | None = None  # the clause of SPEC.md that makes this the outcome (a prediction's)
    # The clause a call breaks that does otherwise: by the kind it raises instead ("ValueError"),
    # "raises" for any other kind, "returns" for one that returns, "other shape" for a value of
    # another shape (a pair of ints, not swapped: state's).
    instead: dict | None = None
    # A cancellation the harness sent that the call dropped (it returned instead): its
    # ``suspended_at`` says where the call was when it came, for the report. Not compared.
    error: BaseException | None = dataclasses.field(default=None, repr=False)

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
    clause: str | None = None  # as ``Returned.clause``
    instead: dict | None = None  # as ``Returned.instead``

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


# Decision 4: "A locked database surfaces as `sqlite3.OperationalError` after the busy timeout".
LOCKED = Raised("OperationalError", clause="D4.locked")
# What a test tells the model as ``failed`` where another connection holds the write lock (a real
# one, not an error object the call must pass on as it is): a call that writes meets decision 4.
WRITE_LOCK = "another connection holds the write lock"


def commit_beside_a_reader(outcome, wal):
    """The outcome of a call that applies an event while another connection holds a read
    transaction it began during the write: in a rollback journal (decision 17 leaves the mode
    free) the reader's lock keeps COMMIT from writing, and the call ends as decision 4's locked
    database, after the busy timeout, not when the reader lets go; in WAL mode no reader blocks a
    writer, and the call is ``outcome``."""
    return outcome if wal else LOCKED


def raced(outcome):
    """The outcome of a call that another connection's commit interleaved: decided by decision 4
    ("reads `last` inside the same transaction that writes")."""
    return dataclasses.replace(outcome, clause="D4")


def hung(seconds, where=()):
    """What a call still running at its bound did: it never returned (no prediction is ever that;
    the prediction's ``instead["hung"]`` names the wait that should have ended it). ``where``: the
    frames it was waiting in (``[(module, file, line)]``), kept on the error for the report."""
    error = TimeoutError(f"still running after {seconds:g} s, cut there")
    error.suspended_at = list(where)
    return Raised("hung", error)


def drawn_error(cls, text):
    """An error for a drawn hook or a FAKE failure to raise, marked as the suite's own
    (``is_drawn``): one that reaches pytest escaped the call under test."""
    error = cls(text)
    error.drawn_by_the_suite = True
    return error


def is_drawn(error):
    return getattr(error, "drawn_by_the_suite", False) is True


def propagates(error, clause=None):
    """The outcome of a failure the contract lets through unchanged (decisions 5, 11, 15)."""
    return Raised(kind_of_class(type(error)), error, clause)


def hook_failed(hook, error, clause, base_clause=None):
    """The outcome when calling ``hook`` raised ``error`` (decisions 5 and 15).

    A hook's own exception propagates as that very object (``clause``; a
    ``BaseException`` that is not an ``Exception``: ``base_clause``, decision
    5, where it says so); a value that cannot be called fails with a
    TypeError of the caller's own making (decision 15).
    """
    if not callable(hook):  # refused before the call (ValueError, say): checked beforehand, against decision 15
        return Raised("TypeError", clause="D15.uncallable", instead={"ValueError": "D15"})
    if not hook:  # a falsy hook is called all the same: "called as given, with no check beforehand"
        return propagates(error, "D15")
    return propagates(error, clause if base_clause is None or isinstance(error, Exception) else base_clause)


def calls_clause(hook, general):
    """The clause that says how often ``hook`` is called: decision 15 for a falsy one ("called as
    given, with no check beforehand"), else ``general``."""
    return "D15" if callable(hook) and not hook else general


# Errors Python raises for an argument of the wrong type or size, where the
# contract asks for ValueError (decision 1).
_WRONG_KIND = ("TypeError", "OverflowError", "AttributeError", "IndexError", "KeyError")


def blame(expected, got):
    """The clause of SPEC.md that ``got`` breaks, where ``expected`` was predicted: the clause of
    the prediction's branch, unless the prediction names another for what ``got`` did instead."""
    instead = expected.instead or {}
    if isinstance(got, Returned):
        if isinstance(expected, Returned):
            other_shape = not (isinstance(got.value, tuple) and len(got.value) == len(expected.value)
                               and all(map(is_int, got.value))) or got.value == tuple(reversed(expected.value))
            if "other shape" in instead and isinstance(expected.value, tuple) and other_shape:
                return instead["other shape"]
            return expected.clause
        if got.value is None and "returns None" in instead:
            return instead["returns None"]
        return instead.get("returns", expected.clause)
    if isinstance(expected, Raised) and expected.kind == got.kind:
        return expected.clause  # the kind, not the very object
    return instead.get(got.kind, instead.get("raises", expected.clause))


def with_instead(outcome, **instead):
    """``outcome`` naming, besides its own, the clauses a call breaks that does otherwise (``instead``)."""
    return dataclasses.replace(outcome, instead={**(outcome.instead or {}), **instead})


def refusal(clause):
    """ValueError for an invalid argument (``clause`` says why); raising another kind for it
    breaks decision 1 ("Every invalid argument the steps describe raises `ValueError`")."""
    return Raised("ValueError", clause=clause,
                  instead={"returns None": "D1.value-error", **{kind: "D1.value-error" for kind in _WRONG_KIND}})


def kind_of_class(cls, impl=None):
    """The contract's name for an exception class: the impl's own classes first, those it has
    written (a file half written, checked step by step, may define none of them yet)."""
    if impl is not None:
        for name in CONTRACT_ERRORS:
            found = getattr(impl, name, None)
            if isinstance(found, type) and issubclass(cls, found):
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
    (``resume.testing.grading.verdict``); the message is the same sentence for pytest.
    """

    def __init__(self, what, expected, got, *, clause=None, sentence=None, raised=None, returned=False):
        self.what, self.expected, self.got = str(what), str(expected), str(got)
        self.clause = clause  # the clause of SPEC.md the difference breaks (``spec.BY_ID``)
        # The exception the call raised; or, if it returned instead, the one it dropped (a
        # cancellation the harness sent, an error the test's hook raised): where it was, for the report.
        self.raised = raised
        self.returned = returned
        super().__init__(sentence or f"{self.what}: expected {self.expected}, but got {self.got}")

    def parts(self):
        """``{"call", "expected", "got", "clause"}``: the parts, for a report."""
        return {"call": self.what, "expected": self.expected, "got": self.got, "clause": self.clause}


def expect(got, expected, what):
    """Assert that outcome ``got`` is the predicted ``expected``, saying ``what`` was called.

    Raised rather than asserted, so that the failure reads as one plain
    sentence, without pytest's diff of the outcome objects. The exception is a
    ``Mismatch`` (an AssertionError) that carries ``what``, ``expected`` and
    ``got`` apart.
    """
    if got != expected:
        raise Mismatch(what, expected, plain(got), clause=blame(expected, got),
                       sentence=f"{what}: expected it {expected}, but it {got}",
                       raised=getattr(got, "error", None) or dropped(got, expected),
                       returned=isinstance(got, Returned))


def dropped(got, expected):
    """The error a call that returned was to raise, if the test handed it over (a hook's): its
    traceback went through the call up to where the call caught it."""
    if isinstance(got, Returned) and isinstance(expected, Raised) and expected.error is not None:
        return expected.error if expected.error.__traceback__ is not None else None
    return None


def plain(outcome):
    """What an implementation's call did, in words: ``returns (0, 5)``, ``raises ValueError: bad frame``."""
    if isinstance(outcome, Raised) and outcome.kind == "hung":
        return f"never returns ({outcome.error})"
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
    shown = [shown_value(arg) for arg in args] + [f"{key}={shown_value(value)}" for key, value in optional.items()
                                                  if value is not None]
    text = f"{name}({', '.join(shown)})"
    if on is not None:
        text += f" on a store at last={on.last}, total={on.total}"
    return text + (f" ({kind})" if kind else "")


def shown_value(value):
    """``repr(value)``; a list or tuple too long to read at once (over 60 characters, 5 items or
    more: a log of 129 events) by its ends and its length: ``[(0, 0), (1, 0), ..., (128, 0)] (129 items)``.
    (Hypothesis shrinks a list to the items its failure needs: a long one is long for its length.)"""
    text = repr(value)
    if len(text) <= 60 or not isinstance(value, (list, tuple)) or len(value) < 5:
        return text
    ends = "[]" if isinstance(value, list) else "()"
    return f"{ends[0]}{repr(value[0])}, {repr(value[1])}, ..., {repr(value[-1])}{ends[1]} ({len(value)} items)"


class Name(str):
    """A name in a call's text, shown without quotes (``con``, ``reader``)."""

    def __repr__(self):
        return str(self)


CON = Name("con")


# Beside a call's outcome, what the tests observe of it, and the clause of SPEC.md that says
# what each must be: a test names the observation, the model names the sentence.
OBSERVED = {
    "fault calls": "S3.one-transaction",  # "call `fault()` if given": once, in the transaction
    "inside fault": "S3.one-transaction",  # the row and the total written, the cursor not yet
    "busy wait": "D4.locked",  # "after the busy timeout": waited once, not twice
    # Not waited at all: SQLite refuses at once a transaction that read and then wants to write while
    # another holds the write lock (its deadlock rule), so the write lock was not taken first (BEGIN IMMEDIATE).
    "no busy wait": "D4",
    "busy wait of open_store": "D3.busy-timeout",  # the connect's 1 s bounds initialisation too
    "state read": "S2.state",  # a pair the store held, never halves of two
    "new list": "S4.new-list",  # "as a new list"
    "log unchanged": "S4.no-change",  # "Validate the whole input first, and change nothing."
    "before_ack calls": "D8.duplicates",  # before every ACK, a duplicate's included
    "awaitables awaited": "D8.awaitable",  # "an awaitable is awaited before the ACK is written"
    "DB connection open": "S6.db-open",  # "Do not close the DB connection."
    "store closed": "S7.close-db",  # "Close the DB connection on every path"
    "nothing opened": "D10.run-client",  # "run_client raises ValueError before opening anything"
    "path as given": "D3.connect",  # sqlite3.connect(path, ...): ':memory:' is no file
    "connection attempts": "D16.one-attempt",  # "`run_client` makes one connection attempt."
    "resume line": "S7.resume",  # "Write the DB's `last` as `b\"RESUME <last>\\n\"`"
    "socket reclaimed before the session": "D12",  # a failure before hand-over reclaims the socket
    "applied once": "S7.no-double-apply",  # "The resent event 1 must not be applied twice."
    "killed in before_ack": "S7.no-double-apply",  # the lab's own crash: killed between commit and ACK
}


def expect_exception_class(impl, name):
    """Steps 3 and 4: ``name`` (Gap, Conflict, ResyncRequired) is a class, a subclass of Exception."""
    found = getattr(impl, name)
    if not (isinstance(found, type) and issubclass(found, Exception)):
        bases = [cls.__name__ for cls in found.__mro__[1:]] if isinstance(found, type) else None
        differs(name, "a subclass of Exception", f"a class whose bases are {bases}" if bases else repr(found),
                EXCEPTION_CLAUSES[name])


def differs(what, expected, got, clause, raised=None):
    """Raise ``Mismatch`` for an observation (not an outcome) that is not what the model says,
    naming the clause of SPEC.md that says what it must be. ``raised``: the error the call
    raised, if it did (the report shows where it was in the learner's file)."""
    raise Mismatch(what, expected, got, clause=clause, raised=raised)


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
    """``(seq, delta)`` if ``line`` is a frame (step 1, decisions 2 and 13), else None."""
    return read_frame(line)[0]


def read_frame(line):
    """``((seq, delta), "S1.frame")`` for a frame, else ``(None, the clause it breaks)``.

    Read byte by byte, with none of ``int()``'s tolerance: ``bytes``
    (subclasses too), one line ending in LF, ASCII, ``EVENT``, seq and delta
    separated by exactly one space, ASCII digits, no leading zero but ``0``
    itself, a minus sign only on a non-zero delta, each in its range, at most
    64 bytes with the LF. A line that breaks several rules is named by the
    first of them in that order (the length last: every line over 64 bytes
    breaks another rule too).
    """
    if not isinstance(line, bytes):
        return None, "D13" if isinstance(line, (bytearray, memoryview)) else "S1.bytes"
    if not line.endswith(b"\n"):
        return None, "S1.crlf" if line.endswith(b"\r") else "S1.final-lf"
    if b"\r" in line:
        return None, "S1.crlf"
    if line.count(b"\n") != 1:
        return None, "S1.one-line"
    if not line.isascii():
        return None, "S1.ascii"
    parts = line[:-1].split(b" ")
    if len(parts) != 3 or any(not part or not part.strip() == part for part in parts):
        return None, "D2.spaces" if len(line[:-1].split()) >= 3 else "S1.frame"
    if parts[0] != b"EVENT":
        return None, "D2.keyword" if parts[0].upper() == b"EVENT" else "S1.frame"
    seq, broken = _number(parts[1], "S1.seq-range")
    if broken:
        return None, broken
    delta, broken = _number(parts[2], "S1.delta-range")
    if broken:
        return None, broken
    if not is_seq(seq):
        return None, "S1.seq-range"
    if not is_delta(delta):
        return None, "S1.delta-range"
    if len(line) > FRAME_MAX:
        return None, "S1.length"
    return (seq, delta), "S1.frame"


def _number(text, range_clause):
    """``(value, None)`` for an optional minus and ASCII digits with no leading zero, else
    ``(None, the clause it breaks)``."""
    negative = text.startswith(b"-")
    digits = text[1:] if negative else text
    if text.startswith(b"+"):
        return None, "S1.plus"
    if not digits:
        return None, "S1.frame"
    if not set(digits) <= _DIGITS:
        try:  # what int() would take all the same (an underscore, blanks around it) is decision 2's second sentence
            int(text)
        except ValueError:
            return None, "D2.digits"
        return None, "D2.tolerated"
    if len(digits) > 1 and digits[0] == ord("0"):
        return None, "S1.leading-zero"
    if negative and int(digits) == 0:
        return None, "S1.minus-zero"
    return (-int(digits) if negative else int(digits)), None


# The frame as a sequence of fields, and what can go wrong with any one of
# them. Step 1 and decision 2 compose the two: every malformation can meet
# every field, and a parser may check a field for one kind of malformation
# and not for another. The strategies draw the whole product from these two
# tables (a new malformation is a new cell in every field at once), and
# ``read_frame`` decides each line, as it does any bytes: some edits leave a
# valid frame (a digit added to seq), and those are predicted as frames.

FRAME_FIELDS = ("EVENT", "the space after EVENT", "seq", "the space after seq", "delta", "the final LF")


def frame_fields(seq, delta):
    """The bytes of each of ``FRAME_FIELDS`` in ``frame(seq, delta)``, in order."""
    return (b"EVENT", b" ", b"%d" % seq, b" ", b"%d" % delta, b"\n")


FIELD_MALFORMATIONS = {
    # a text put into the field at any place: before it, inside it, after it
    "a digit": (b"0", b"1", b"9"),
    "a sign": (b"-", b"+"),
    "a space": (b" ",),
    "another blank": (b"\t", b"\x0b", b"\x0c"),
    "a CR": (b"\r",),
    "an LF": (b"\n",),
    "a NUL": (b"\x00",),
    "a non-ASCII byte": (b"\x80", b"\xa0", b"\xff", "\u00a0".encode()),
    "a non-ASCII digit": ("\u0661".encode(), "\uff10".encode(), "\U0001d7d7".encode()),
    "a byte-order mark": (b"\xef\xbb\xbf",),
    "an underscore": (b"_",),
    "a letter or a base prefix": (b"e", b"E", b"x", b"0x", b"0o", b"0b"),
    "a dot": (b".", b".0"),
    # the field itself replaced
    "left out": (b"",),
    "doubled": (b"",),
    "followed by a copy of itself": (b" ",),
}
"""Each malformation of a field, and the texts it puts in: ``malformed_frame`` says where."""

FIELD_REPLACEMENTS = {"left out": lambda field, text: b"",
                      "doubled": lambda field, text: field + field,
                      "followed by a copy of itself": lambda field, text: field + text + field}


def malformed_frame(seq, delta, field, malformation, at=0, choice=0):
    """``frame(seq, delta)`` with ``field`` (of FRAME_FIELDS) changed by ``malformation`` (of
    FIELD_MALFORMATIONS): its ``choice``-th text put in at byte ``at`` of the field (0 to the
    field's length: before it to after it), or, for the last three, the field replaced."""
    fields = list(frame_fields(seq, delta))
    i = FRAME_FIELDS.index(field)
    text = FIELD_MALFORMATIONS[malformation][choice]
    replace = FIELD_REPLACEMENTS.get(malformation)
    fields[i] = replace(fields[i], text) if replace else fields[i][:at] + text + fields[i][at:]
    return b"".join(fields)


def parse_line(line, after=None):
    """Step 1: ``(seq, delta)`` for a frame, ValueError for anything else (the clause it breaks).
    ``after``: the line of the call before, if any (each call stands alone)."""
    parsed, clause = read_frame(line)
    if parsed is None:
        return refusal(clause)
    return Returned(parsed, clause, {"ValueError": _frame_refused(line, *parsed, after)})


def _frame_refused(line, seq, delta, after):
    """The clause a refusal of this frame breaks: its least usual part first (after a line cut
    off before its LF: "a missing final newline" is that line's, never kept for the next; a bytes
    subclass; a number at the top of its range; a zero: "other than `0` itself"), else the frame."""
    if isinstance(after, (bytes, bytearray)) and not after.endswith(b"\n"):
        return "S1.final-lf"
    if type(line) is not bytes:
        return "D13"
    if seq == SEQ_MAX:
        return "S1.seq-range"
    if abs(delta) == DELTA_MAX:
        return "S1.delta-range"
    return "S1.leading-zero" if 0 in (seq, delta) else "S1.frame"


# ------------------------------------------------------------ step 2

# What ``sqlite3.connect(path)`` makes of a path (decision 3: open_store
# connects with exactly that call): a file at that very name, or a store that
# is gone when its connection closes (``":memory:"``, and ``""``: a private
# temporary file), or no store at all (a folder, a missing parent folder), or
# a file that is not a database (its first bytes are not SQLite's header). Another
# program's table named ``checkpoint`` or ``ledger`` is outside the contract (decision 19).
PATH_FILE, PATH_FORGETS, PATH_UNUSABLE, PATH_NOT_A_DATABASE = "file", "forgets", "unusable", "not a database"
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file

# Step 2's two tables, read from SPEC.md itself (``resume.testing.spec``), and the clause of each.
TABLE_CLAUSES = {"checkpoint": "S2.checkpoint-table", "ledger": "S2.ledger-table"}
SCHEMA = tuple(f"CREATE TABLE {spec.sentence(clause)}" for clause in TABLE_CLAUSES.values())


@functools.cache
def table_columns():
    """``{table: {column names}}`` of SPEC.md's schema."""
    with contextlib.closing(spec_store()) as con:
        return {table: {name for name, *_ in columns(con, table)} for table in TABLE_CLAUSES}


# Decision 3: how open_store connects, as a caller sees the connection it returns.
CONNECTION_CLAUSES = {"the connection's type": "D3.connect", "con.isolation_level": "D3.autocommit",
                      "PRAGMA busy_timeout": "D3.busy-timeout", "con.in_transaction": "S2.create-once"}


def connection_settings(con):
    """``[(what, expected, got)]`` for each setting of ``CONNECTION_CLAUSES`` on ``con``."""
    kind = "sqlite3.Connection" if isinstance(con, sqlite3.Connection) else type(con).__name__
    found = [("the connection's type", "sqlite3.Connection", kind)]
    if kind != "sqlite3.Connection":
        return found
    return found + [("con.isolation_level", None, con.isolation_level),
                    ("PRAGMA busy_timeout", round(BUSY_TIMEOUT * 1000), con.execute("PRAGMA busy_timeout").fetchone()[0]),
                    ("con.in_transaction", False, con.in_transaction)]


def spec_store():
    """A new store in memory made by SPEC.md's own schema, with its initial row: what a store's
    tables must be like (``columns``) and which rows they refuse. Close it after use."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    for statement in SCHEMA:
        con.execute(statement)
    con.execute("INSERT INTO checkpoint(id, last, total) VALUES (1, ?, ?)", INITIAL_STATE)
    return con


def columns(con, table):
    """``[(name, TYPE, NOT NULL, primary key)]`` of ``table`` as ``PRAGMA table_info`` shows it, the
    type upper-cased (SQL is case-insensitive); NOT NULL left out of a primary key column (an INTEGER
    PRIMARY KEY is a rowid alias: never NULL, with or without the clause)."""
    return [(name, kind.upper(), 0 if pk else notnull, pk)
            for _, name, kind, notnull, _, pk in con.execute(f"PRAGMA table_info({table})")]


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
        # Looked at through SQLite (no SQLITE_HEADER: "file is not a database"), never open()ed
        # here: a file this process opens and closes drops every POSIX lock the process holds on
        # it, its own SQLite connections' included (SQLite's "How To Corrupt", 2.2). The protocol
        # machine's connection then no longer held the store, a receiver process deleted its WAL
        # at its exit, and a commit made here after that was gone at the next open: the
        # reference "lost" an ACKed event.
        try:
            _checkpoint_columns(name)
        except sqlite3.DatabaseError as error:
            if getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
                return PATH_NOT_A_DATABASE
            raise
    return PATH_FILE


def open_store(path, existing=None, failed=None, locked=False):
    """Step 2: the outcome of ``open_store(path)``; ``existing`` is the model store the file holds;
    ``failed``: the error one of its statements raised, if one did; ``locked``: another
    connection holds the write lock on the file.

    A usable path gives a connection whose ``state`` is the existing store's
    (a new one's, or one a writer left half made, is ``(-1, 0)``: decision 19); a path
    where no database can be opened raises ``sqlite3.OperationalError``, a file that is not a database
    ``sqlite3.DatabaseError`` at the first statement ("If initialisation
    fails, close the connection and let the error propagate").
    """
    if failed is not None:  # decision 5 for what is not an Exception
        return propagates(failed, "S2.close-on-failure" if isinstance(failed, Exception) else "D5.open-store")
    if locked and existing is None:  # a new store must be written: "A locked database surfaces as
        return Raised("OperationalError", clause="D4.locked")  # sqlite3.OperationalError after the busy timeout"
    kind = path_kind(path)
    if kind == PATH_UNUSABLE:
        return Raised("OperationalError", clause="D3.connect")
    if kind == PATH_NOT_A_DATABASE:
        return Raised("DatabaseError", clause="S2.close-on-failure")
    instead = {"raises": _store_refused(path), "other shape": "S2.state"}
    if existing is not None and kind == PATH_FILE:
        return Returned(existing.state(), "S2.init-once", instead)
    return Returned(Store().state(), "S2.init-once" if kind == PATH_FILE else "D3.connect", instead)


def incomplete(missing):
    """The clause broken by an ``open_store`` that returned leaving its store without ``missing``
    (``store_files.missing_parts``): a table, "It creates the two tables only when they do not
    exist"; the row alone, "inserts the checkpoint's initial row ... only when it does not exist"."""
    return "S2.create-once" if missing - {"row"} else "S2.init-once"


def _store_refused(path):
    """The clause an ``open_store`` that fails on this usable path breaks: decision 3 for a path
    of an unusual form (relative, bytes, a Path, a character a URI would read), else step 2's
    "It creates the two tables only when they do not exist" (a store of another program's kept)."""
    name = path if isinstance(path, str) else ""
    ordinary = os.path.isabs(name) and all(char.isalnum() or char in "/._-" for char in name)
    return "S2.create-once" if ordinary else "D3.connect"


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
    def refused(clause, *values):
        # ResyncRequired instead: the decision taken before this check (decision 7's order), or the
        # check left out; the step-4 test tells the two apart (replay_order_or_check). Of a cursor out
        # of its range: its own check, which let it reach the decision.
        outcome = refusal("D1" if any(isinstance(v, bool) for v in values) else clause)
        if clause in ("S4.last-range", "S4.past-end"):
            return outcome
        return with_instead(outcome, ResyncRequired="D7.validate-first")

    if not isinstance(events, list) or not LOG_MIN <= len(events) <= LOG_MAX:
        return refused("S4.log-length")
    for index, item in enumerate(events):
        if not (isinstance(item, tuple) and len(item) == 2):
            return refused("D7.types")
        if not (is_seq(item[0]) and is_delta(item[1])):
            return refused("S4.values", *item)
        if index and item[0] != events[index - 1][0] + 1:
            return refused("S4.consecutive")
    first, final = events[0][0], events[-1][0]
    if not is_int_in(last, LAST_MIN, SEQ_MAX):
        return refused("S4.last-range", last)
    if last > final:
        return refused("S4.past-end")
    if not is_int_in(limit, LIMIT_MIN, LIMIT_MAX):
        return refused("S4.limit-range", limit)
    refused = _replay_refused(events, last, limit)
    if last < first - 1:
        return Raised("ResyncRequired", clause="S4.resync", instead={"ValueError": refused, "returns": "S4.resync"})
    start = last + 1 - first
    clause = "D7.at-end" if last == final else "S4.limit"
    return Returned([tuple(item) for item in events[start:start + limit]], clause,
                    {"ValueError": refused, "ResyncRequired": "S4.resync"})


def replay_probe_cursor(events):
    """A cursor that no ResyncRequired follows for ``events``: just before its first seq (``-1`` when
    the log has no first seq to read)."""
    first = events[0] if isinstance(events, list) and events else None
    seq = first[0] if isinstance(first, tuple) and first else None
    return seq - 1 if is_seq(seq) else LAST_MIN


def replay_probe_wanted(expected, events, last):
    """``"ResyncRequired"`` where a replay that raised it instead of ``expected``'s ValueError is to be
    told apart by a probe: the refusal is of the log or the limit (a cursor out of range is its own
    check's), and the probe's cursor keeps the same refusal."""
    if not (isinstance(expected, Raised) and expected.kind == "ValueError"):
        return None
    if expected.clause in ("S4.last-range", "S4.past-end") or isinstance(last, bool):
        return None
    return "ResyncRequired"


def replay_order_or_check(expected, checked_there):
    """``expected`` naming the clause a ResyncRequired instead breaks: decision 7's order where the
    implementation refuses the same input with ValueError when no ResyncRequired is due (it has the
    check, and made the decision first), else the check it lacks (``expected``'s own clause)."""
    return with_instead(expected, ResyncRequired="D7.validate-first" if checked_there else expected.clause)


def _replay_refused(events, last, limit):
    """The clause a refusal of this valid input breaks: its least usual part first (the longest
    log, a subclass, the cursor at the log's end, a value at the top of its range), else the ranges
    of ``last`` and ``limit`` (a shrunk example sits at the bottom of every range)."""
    values = [value for item in events for value in item] + [last, limit]
    if len(events) == LOG_MAX:
        return "S4.log-length"
    if type(events) is not list or any(type(item) is not tuple for item in events):
        return "D7.types"
    if any(type(value) is not int for value in values):
        return "D14"
    if last == events[-1][0]:
        return "D7.at-end"
    if any(seq == SEQ_MAX or abs(delta) == DELTA_MAX for seq, delta in events):
        return "S4.values"
    return "S4.last-range"


# ------------------------------------------------------------ steps 2, 3, 5, 6: the store


def decide(last, ledger, seq, delta):
    """The cursor rule: "applied", "duplicate", "conflict" or "gap" (step 3, decision 6)."""
    if seq == last + 1:
        return "applied"
    if seq > last + 1:
        return "gap"
    return "duplicate" if ledger.get(seq) == delta else "conflict"


def other_delta(delta):
    """Another valid delta, next to ``delta``: the content of a redelivery that differs (step 3:
    "if its content differs, raise `Conflict`")."""
    return delta + 1 if delta < DELTA_MAX else delta - 1


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
        problems.append(Problem(f"total {total} != SUM(ledger) {sum(ledger.values())} (ledger {ledger})"))
    if sorted(ledger) != list(range(last + 1)):
        problems.append(Problem(f"the ledger holds seqs {sorted(ledger)}, not exactly 0..{last}"))
    wrong = {seq: delta for seq, delta in ledger.items() if log.get(seq) != delta}
    if wrong:
        problems.append(Problem(f"ledger rows that were never published so: {wrong}"))
    early = sorted({seq for seq in acks if seq > last})
    if early:
        problems.append(Problem(f"ACKs {early} received for events not committed (last = {last})",
                                "S6.ack-after-commit"))
    return problems


def cursor_moves(before, after, offered):
    """Step 3's cursor over time: ``[]``, or the Problem of a cursor that went from ``before`` to
    ``after`` while ``offered`` events were given: it never goes back, and an event moves it by one
    at most (``seq == last + 1``)."""
    if after < before:
        return [Problem(f"last went back from {before} to {after}")]
    if after > before + offered:
        return [Problem(f"last moved from {before} to {after} on {offered} event(s)")]
    return []


class Problem(str):
    """What is wrong with a store, in words, and the clause it breaks: a torn event breaks
    step 3's "in ONE transaction" (the row, the total and the cursor together)."""

    def __new__(cls, text, clause="S3.one-transaction"):
        problem = super().__new__(cls, text)
        problem.clause = clause
        return problem


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
    # Why the store holds what it holds: the clause of SPEC.md of its last change, or
    # of the call that changed nothing ("S2.init-once": as it was opened).
    because: str = dataclasses.field(default="S2.init-once", compare=False, repr=False)
    refused: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)  # seq -> the clause that refused it

    def state(self):
        """Step 2: ``(last, total)``."""
        return self.last, self.total

    def copy(self):
        return Store(self.last, self.total, dict(self.ledger), self.because, dict(self.refused))

    def snapshot(self):
        """``((last, total), ledger)``: what a reader of the store file sees."""
        return (self.last, self.total), dict(sorted(self.ledger.items()))

    def decide(self, seq, delta):
        return decide(self.last, self.ledger, seq, delta)

    def blame(self, found):
        """The clause a store that holds ``found`` (``(last, total), ledger``), not this one, breaks:
        a store started anew where this one was kept breaks step 2 ("only when they do not exist":
        the tables, or the row); rows this one refused, the rule that refused them; else the
        clause of this store's last change."""
        (last, _), ledger = found if found[0] is not None else ((None, None), found[1])
        if (last, not ledger) == (LAST_MIN, True) and self.state() != INITIAL_STATE:
            return "S2.create-once" if self.ledger else "S2.init-once"
        if last == LAST_MIN and self.last != LAST_MIN:
            return "S2.init-once"
        refused = [self.refused[seq] for seq in ledger if seq not in self.ledger and seq in self.refused]
        if refused:
            return refused[0]
        if last == self.last and set(ledger) < set(self.ledger):
            return "S3.duplicate"  # rows dropped below the cursor: the ledger is what judges a redelivery
        return self.because

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
            self.because = "D1" if isinstance(seq, bool) or isinstance(delta, bool) else "S3.int-args"
            return refusal(self.because)
        # Refusing these valid arguments breaks: decision 14 for an int subclass (whatever it
        # raises), "return `True`" for a total past 32 bits (nothing bounds it), else their ranges.
        if type(seq) is not int or type(delta) is not int:
            instead = {"raises": "D14"}
        else:
            instead = {"ValueError": "S3.true" if abs(self.total + delta) >= 2 ** 31 else "S3.int-args"}
        if failed == WRITE_LOCK:
            self.because = "D4.locked"
            return self.locked(seq, delta)
        if failed is not None:
            self.because = "S3.rollback" if isinstance(failed, Exception) else "D5"
            return propagates(failed, self.because)
        decision = self.decide(seq, delta)
        if decision in _ERROR_OF_DECISION:
            self.because = {"gap": "S3.gap", "conflict": "S3.conflict" if seq in self.ledger else "D6"}[decision]
            return Raised(_ERROR_OF_DECISION[decision], clause=self.because, instead=instead)
        if decision == "duplicate":
            self.because = "S3.duplicate"
            return Returned(False, self.because, instead)
        if fault is not None:
            try:
                fault()
            except BaseException as error:  # noqa: BLE001 - decision 5: any BaseException
                failure = hook_failed(fault, error, "S3.rollback", "D5")
                # The store after it: step 3's rollback (decision 5's, for what is not an Exception).
                self.because = "S3.rollback" if isinstance(error, Exception) else "D5"
                return dataclasses.replace(failure, instead={**instead, **(failure.instead or {})})
        self.ledger[seq] = delta
        self.last, self.total = seq, self.total + delta
        self.because = "S3.one-transaction"
        return Returned(True, "S3.true", instead)

    def locked(self, seq, delta):
        """Decision 4: the outcome of ``apply_event(con, seq, delta)`` while another connection holds
        the write lock. Invalid arguments are refused first; every call with valid arguments starts
        ``BEGIN IMMEDIATE``, a duplicate's and a gap's too, and so surfaces as the locked database."""
        if not (is_seq(seq) and is_delta(delta)):
            return self.copy().apply_event(seq, delta)
        return Raised("OperationalError", clause="D4.locked" if self.decide(seq, delta) == "applied"
                      else "D4.every-call")

    def at_fault(self, seq, delta):
        """The store as ``fault`` sees it inside the transaction of ``(seq, delta)`` (step 3's order)."""
        return Store(self.last, self.total + delta, {**self.ledger, seq: delta})

    def consume_line(self, line, fault=None, failed=None):
        """Step 5: ``b"ACK <seq>\\n"`` once committed (a duplicate too), else step 1's or 3's error
        (``failed``: as ``apply_event`` takes it)."""
        parsed, clause = read_frame(line)
        if parsed is None:
            self.because = "S5.errors"
            return Raised("ValueError", clause="S5.errors")
        outcome = self.apply_event(*parsed, fault, failed)
        if isinstance(outcome, Raised) and outcome.kind in _ERROR_OF_DECISION.values():
            self.refused.setdefault(parsed[0], "S5.errors")  # a frame refused is not kept for later
        if isinstance(outcome, Returned):
            return Returned(ack(parsed[0]), "S5.ack" if outcome.value else "S5.duplicate-ack")
        if outcome.error is not None and outcome.clause == "S3.rollback":  # a business failure
            return dataclasses.replace(outcome, clause="S5.errors", instead={"ValueError": "S5.errors", **(
                {"returns": "S5.fault"} if fault else {})})
        if outcome.kind in _ERROR_OF_DECISION.values():  # a ValueError instead: the error rewrapped
            return dataclasses.replace(outcome, clause="S5.errors", instead={**outcome.instead, "ValueError": "S5.errors"})
        return outcome

    async def session(self, lines, ending=None, timeout=1.0, before_ack=None, drain=None, drain_at=0,
                      failed=None, failed_after=0, slow=None):
        """Step 6 (``_session`` says how); ``slow``: what of it takes longer than ``timeout`` on its
        own and must not time out: ``"before_ack"`` (decision 8: awaited, not bounded) or ``"a read
        and its drain"`` (each wait its own bound). The outcome names the clause a call breaks that
        raises TimeoutError instead, or never returns."""
        result = await self._session(lines, ending, timeout, before_ack, drain, drain_at, failed, failed_after)
        if not result.timeout_valid:  # refused before anything: a hang is the closing wait's
            result.outcome = with_instead(result.outcome, hung=result.hung_clause(HANGS))
            return result
        instead = {"hung": result.hung_clause()}
        if isinstance(result.outcome, Returned):
            # A plain before_ack that blocks cannot be cut short: a TimeoutError after it is a read's
            # bound shared with it. One whose awaitable is slow: that awaitable bounded, against decision 8.
            instead["TimeoutError"] = {"before_ack awaits": "D8.awaitable",
                                       "a read and its drain": "S6.drain-bounded"}.get(slow, "S6.read-bounded")
        if before_ack is None:  # "call `before_ack(seq)` if given": calling None is a TypeError
            instead["TypeError"] = "S6.ack-after-commit"
        elif any(value is not None and not inspect.isawaitable(value) for value in result.returned):
            instead["TypeError"] = "D8.awaitable"  # a value that is not awaitable is not awaited
        result.outcome = with_instead(result.outcome, **instead)
        return result

    async def _session(self, lines, ending, timeout, before_ack, drain, drain_at, failed, failed_after):
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
        result = Session(closing_bound=closing_bound(timeout), timeout_valid=is_valid_timeout(timeout))
        if not is_valid_timeout(timeout):
            result.outcome = timeout_refusal(timeout, "S6.timeout-valid")
            return result
        refused = timeout_refused(timeout)
        for number, line in enumerate(lines, 1):
            outcome = self.consume_line(line, failed=failed if number == failed_after else None)
            if isinstance(outcome, Raised):
                parsed, frame_clause = read_frame(line)
                if len(line) > READER_LIMIT:
                    outcome = dataclasses.replace(outcome, clause="D9.over-long")
                elif not line.endswith(b"\n"):  # EOF in the middle of a frame
                    outcome = dataclasses.replace(outcome, clause="D9.partial")
                result.outcome = outcome
                # An ACK for it breaks the rule that refuses it: the frame's grammar, or step 6's order.
                line_clause = frame_clause if parsed is None else "S6.ack-after-commit"
                if len(line) > READER_LIMIT or not line.endswith(b"\n"):
                    line_clause = outcome.clause
                later = {ack(frame[0]) for frame in map(parse, lines[number:]) if frame}
                result.ended_by = (parsed[0] if parsed else None), line_clause, later
                return result
            seq = parse(line)[0]
            if before_ack is not None:
                result.calls.append(seq)
                returned = None
                try:
                    returned = before_ack(seq)
                    result.returned.append(returned)
                    if inspect.isawaitable(returned):
                        await returned
                except BaseException as error:  # noqa: BLE001 - step 6: errors propagate
                    result.outcome = hook_failed(before_ack, error, "S6.propagate")
                    self.because = "S6.ack-after-commit"  # the event stays committed (decision 15)
                    # An ACK after it: decision 15's for a hook of its own; an awaitable's error
                    # swallowed does not propagate; a call's, the ACK came before its hook.
                    clause = result.outcome.clause
                    if not clause.startswith("D15"):
                        clause = "S6.propagate" if inspect.isawaitable(returned) else "S6.ack-after-commit"
                    result.ended_by = seq, clause, set()
                    return result
            result.acks.append(outcome.value)
            if drain is not None and len(result.acks) == drain_at + 1:
                result.outcome = result.wait_failed(drain, timeout, "S6.drain-bounded", "S6.propagate")
                return result
        if ending is None:
            # At EOF only state() runs: a read, which no writer's lock blocks.
            at_eof = failed if failed_after == len(lines) + 1 and failed != WRITE_LOCK else None
            result.outcome = (Returned(self.state(), "S6.eof-state", refused) if at_eof is None
                              else propagates(at_eof, "S6.propagate"))
        else:
            clause = "D9.over-long" if ending == "ValueError" else "S6.propagate"
            result.outcome = result.wait_failed(ending, timeout, "S6.read-bounded", clause)
        return result

    async def run_client(self, timeout, lines=(), ending=None, before_ack=None, *,
                         path=None, connect=None, resume_drain=None, slow=None, failed=None):
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
        12: the error propagates once the socket is reclaimed). ``failed``: the
        error the first statement after ``open_store`` raised, if one did.
        ``slow``: ``"open_store"`` when it waited for another connection's lock.
        Then the session's outcome. The DB connection is closed on every path.

        Returns a ``Session`` whose ``opens`` and ``resume`` say whether the
        store was opened and which RESUME line was written (None: no connection).
        """
        result = Session(closing_bound=closing_bound(timeout), timeout_valid=is_valid_timeout(timeout))
        if not is_valid_timeout(timeout):
            result.outcome = timeout_refusal(timeout, "D10.run-client")
            return result
        opened = open_store(path, self) if path is not None else Returned(self.state())
        if isinstance(opened, Raised):
            result.outcome = opened
            return result
        result.opens = True
        if failed is not None:  # the first statement after open_store: "Errors and cancellation propagate"
            result.outcome = propagates(failed, "S7.propagate")
            return result
        if connect is not None:
            result.outcome = result.wait_failed(connect, timeout, "S7.connect-bounded", "S7.propagate")
            return result
        result.resume = resume_line(self.last)
        # A store that forgets starts new each time: its -1 is decided by handing the path on as given.
        forgets = path is not None and path_kind(path) == PATH_FORGETS
        result.resume_clause = "S7.order" if forgets else "S7.resume"
        if resume_drain is not None:
            result.outcome = result.wait_failed(resume_drain, timeout, "S7.drain-bounded", "D12")
            result.before_handover = True
            return result
        session = await self.session(lines, ending, timeout, before_ack)
        session.opens, session.resume, session.resume_clause = True, result.resume, result.resume_clause
        if isinstance(session.outcome, Returned):
            session.outcome = dataclasses.replace(session.outcome, clause="S7.handover")
        # Steps 6 and 7 share "Errors and cancellation propagate.": run_client's is step 7's.
        session.outcome = dataclasses.replace(
            session.outcome, clause=_RUN_CLIENT_SENTENCE.get(session.outcome.clause, session.outcome.clause),
            instead={kind: _RUN_CLIENT_SENTENCE.get(clause, clause)
                     for kind, clause in (session.outcome.instead or {}).items()} or None)
        if slow == "open_store":  # a store that waited for a lock: the connection still has its whole timeout
            session.outcome = with_instead(session.outcome, TimeoutError="S7.connect-bounded")
        return session


def hook_or_session_bounded(outcome, reads_alone):
    """Decision 8 or step 6, for a session that raised TimeoutError while ``before_ack``'s awaitable
    ran past the timeout. ``reads_alone``: the outcome of a probe, the same session with no hook
    and two reads each within the timeout, together past it. A session that times out there too
    has one deadline for all its waits, and breaks step 6's "Bound every `readline` wait by
    `timeout`" (each wait); one that does not bounded the awaitable, against decision 8.
    (A foreign corpus's one-deadline session was quoted decision 8 alone.)"""
    if getattr(reads_alone, "kind", None) == "TimeoutError":
        return with_instead(outcome, TimeoutError="S6.read-bounded")
    return outcome


# A sentence step 7 repeats from step 6: a call of run_client breaks step 7's.
_RUN_CLIENT_SENTENCE = {"S6.propagate": "S7.propagate"}


def as_given(session):
    """Decision 16: a run_client whose host and port take a form of their own does whatever
    ``asyncio.open_connection`` does with them as given; doing anything else breaks that."""
    session.outcome = dataclasses.replace(session.outcome, clause="D16", instead=None)
    return session


def leak_clause(call, targets=None):
    """The clause a call breaks that leaves descriptors open on ``targets`` (what they point to),
    or, with ``targets`` None, tasks of its own still running once it ended."""
    if call == "consume_session":  # step 6: reclaim the connection on every path; errors propagate
        return "S6.propagate" if targets is None else "S6.reclaim"
    if targets is None:
        return "S7.propagate"
    sockets = all(str(target).startswith("socket:") for target in targets)
    return "S7.reclaim" if sockets else "S7.close-db"  # step 7: close the DB connection on every path


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
    ended_by: tuple | None = None  # (seq or None, clause, ACKs of the lines after): the line whose error
    # ended the session, and the clause an ACK for it breaks
    returned: list = dataclasses.field(default_factory=list)  # what before_ack returned, call by call
    timeout_valid: bool = True
    expired_by: str | None = None  # the clause of the wait that ran to its bound, if one did
    opens: bool = False  # step 7: the store was opened
    resume_clause: str = "S7.resume"  # what decides the RESUME line (the path, for a store that forgets)
    before_handover: bool = False  # step 7: it failed before consume_session took over (run_client reclaims)
    resume: bytes | None = None  # step 7: the RESUME line written (None: no connection made)

    def wait_failed(self, error, timeout, bounded, otherwise):
        """The outcome of a read or drain that ended with ``error`` (a kind, or the very object).

        Step 6: "Bound every ``readline`` wait by ``timeout``", "a ``drain``
        bounded by ``timeout``": one that ends with TimeoutError has waited
        ``timeout`` seconds first (clause ``bounded``). "Errors and
        cancellation propagate" (clause ``otherwise``).
        """
        if error == "TimeoutError":
            self.expired += float(timeout)
            self.expired_by = bounded
            return Raised(error, clause=bounded)
        return Raised(error, clause=otherwise) if isinstance(error, str) else propagates(error, otherwise)

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

    def after_closing(self, closing_error=None, wait=None):
        """Decision 11: the call's outcome once the closing wait raised ``closing_error`` (or nothing).

        A TimeoutError or ConnectionError of the wait is absorbed (after an
        abort); any other error replaces a normal return; the session's own
        error is never replaced.
        """
        hung = {"hung": self.hung_clause(wait)}
        if closing_error is None:
            return with_instead(self.outcome, **hung)
        if isinstance(self.outcome, Raised):
            return with_instead(dataclasses.replace(self.outcome, clause="D11.error-wins"), **hung)
        if isinstance(closing_error, (TimeoutError, ConnectionError)):
            # An abort absorbs it: raising it instead is not carrying on.
            return with_instead(dataclasses.replace(self.outcome, clause="D11.carry-on"), **hung,
                                **{kind_of_class(type(closing_error)): "D11.carry-on"})
        return with_instead(propagates(closing_error, "D11.other-errors"), **hung)

    def acks_clause(self, got, outcome=None):
        """The clause a session that wrote the ACKs ``got`` (a list of lines) breaks, where ``acks``
        were predicted: an ACK for the line that ended the session breaks that line's rule (a
        frame's grammar, step 5's errors), or, where the session's error propagated all the same
        (``outcome``: the one seen), the order of step 6 (the ACK came before its hook); ACKs past
        it, "Errors and cancellation propagate"; fewer, the rule that ended the session early;
        any other, the order of step 6."""
        seq, clause, later = self.ended_by or (None, None, set())
        if len(got) > len(self.acks) and got[:len(self.acks)] == self.acks:
            extra = got[len(self.acks)]
            if clause is not None and (extra == ack(seq) if seq is not None else extra not in later):
                if clause == "S6.propagate" and outcome is not None and outcome == self.outcome:
                    return "S6.ack-after-commit"  # its error propagated: the ACK was written before it
                return clause  # the line that ended it, ACKed
            if outcome is not None and isinstance(outcome, Raised) and outcome == self.outcome:
                return "D8.nothing-more"  # its error came all the same, after more ACKs: "it writes nothing more"
            return self.outcome.clause or "S6.propagate"  # it went on past the error, as if there were none
        if len(got) < len(self.acks) and self.acks[:len(got)] == got:
            return self.outcome.clause or "S6.ack-after-commit"
        return "S6.ack-after-commit"

    def hung_clause(self, wait=None):
        """The clause a call breaks that never returns: the bound of the closing wait where it
        hangs, else of the wait that runs to its bound, else of the reads."""
        if wait == HANGS:
            return self.closing_clause()
        return self.expired_by or "S6.read-bounded"

    def store_clause(self, store, found):
        """The clause a store that holds ``found`` after this session, not ``store``, breaks: rows
        missing after a wait that ran to its bound are that wait's (it ran out early)."""
        fewer = set(found[1]) < set(store.ledger)
        return self.expired_by if fewer and self.expired_by else store.blame(found)

    def closing_clause(self):
        """The clause that bounds the closing wait: the timeout, or 1 s after an invalid one; run_client's
        own reclaim before the session takes over: decision 12's."""
        if self.before_handover:
            return "D12"
        return "S6.reclaim" if self.timeout_valid else "S6.fallback"

    def sent_clause(self, sent):
        """The clause a peer that read ``sent`` (a list: what it read on each connection) shows broken."""
        if len(sent) > 1:
            return OBSERVED["connection attempts"]
        if self.resume is None and sent:  # nothing connects before the store is open, or with a bad timeout
            return "D10.run-client" if not self.timeout_valid else "S7.order"
        if self.resume is not None and (not sent or not sent[0].startswith(self.resume)):
            return self.resume_clause
        got = sent[0][len(self.resume or b""):].splitlines(keepends=True) if sent else []
        return self.acks_clause(got)

    @staticmethod
    def aborts(closing_error):
        """Decision 11: whether ``transport.abort()`` must be called after the closing wait."""
        return closing_error is not None

    @staticmethod
    def abort_clause(closing_error):
        """The clause that asks for ``abort()`` after the closing wait raised ``closing_error``."""
        return "S6.abort" if isinstance(closing_error, (TimeoutError, ConnectionError)) else "D11.other-errors"

    def closed_clause(self, closing_error=None):
        """The clause a socket left open breaks: the abort after a failed closing wait, else step 6's
        "On every path — normal, failure, cancellation — reclaim the connection"."""
        if closing_error is None:  # with an invalid timeout, decision 10's "still reclaims the connection"
            return "S6.reclaim" if self.timeout_valid else "D10.reclaim"
        return self.abort_clause(closing_error)

    def duration_clause(self, wait=None):
        """The clause a call that took longer (or shorter) than ``duration(wait)`` breaks."""
        if not self.timeout_valid:
            return "S6.fallback"  # "With an invalid timeout, the closing wait uses 1 second."
        if self.closing(wait)[0] is not None:
            return "S6.reclaim"  # `wait_closed()` bounded by `timeout`
        return self.expired_by or "S6.read-bounded"
