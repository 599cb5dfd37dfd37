"""One strategy per parameter of the seven steps, drawn from the whole domain a caller can pass.

A test that draws a parameter here meets every class of value the
parameter can take, valid or not, and asks ``resume.testing.model`` what
must happen; nothing is filtered out because it is awkward.
``docs/DOMAINS.md`` names the classes of each strategy and the tests that
draw them. (Frames and logs, whose classes are the grammar's and the log's,
are in ``resume.testing.strategies.values``: ``lines()``, ``replay_args()``.)

* ``any_ints(low, high)``: the domain of an int parameter in ``low..high``
  (seq, delta, last, limit): each end, inside, one past each end, far
  outside, int subclasses (an ``IntEnum``, a user's subclass: ints, decision
  14), ``bool``, floats (integral ones too), ``Decimal``, ``Fraction``, an
  object with ``__index__`` (not an int), numeric strings, None.
  ``any_seqs()``, ``any_deltas()``, ``any_lasts()``, ``any_limits()``; ``AS_CLASS``.
* ``timeouts(kind)``, ``TIMEOUT_CLASSES``: short ints and floats, int and
  float subclasses, zero and negatives, NaN and infinities, an int past
  float range, ``bool``, ``Fraction``, ``Decimal``, strings, None;
  ``INVALID_TIMEOUT_CLASSES``;
  ``timeout_ends(valid)``: the ends of the valid range and one step outside.
* ``hooks(awaitable=..., kind=...)``, ``HOOK_KINDS``: a ``fault`` or ``before_ack``: None, a plain
  function, one returning something that is neither None nor awaitable, a
  falsy callable, one returning an awaitable (a coroutine, a Future, an
  object with ``__await__``), one raising each kind of ``BaseException``
  (directly: an Exception, a BaseException that is not one, an sqlite3
  error; or from its awaitable), and values that cannot be called at all
  (decision 15).
"""

import asyncio
import contextlib
import decimal
import enum
import fractions
import functools
import math
import os
import pathlib
import sqlite3
import sys
import types

from hypothesis import event
from hypothesis import strategies as st

from resume.testing import model
from resume.testing.drivers.errors import HOOK_ERRORS


class Number(enum.IntEnum):
    """An ``IntEnum``: an int wherever the steps ask for one (decision 14)."""

    ZERO = 0
    ONE = 1


class UserInt(int):
    """A user's int subclass: an int (decision 14)."""

    def __repr__(self):
        return f"UserInt({int(self)})"


class Index:
    """Not an int, though it converts to one (``__index__``, ``__int__``), as numpy's integers
    do: not an int (decision 1)."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value

    __int__ = __index__

    def __repr__(self):
        return f"Index({self.value})"


class UserFloat(float):
    """A user's float subclass: a float (decision 14)."""

    def __repr__(self):
        return f"UserFloat({float(self)})"


INT_CLASSES = ["an end", "inside", "one past an end", "far outside", "int subclass", "IntEnum", "bool",
               "float", "Decimal", "Fraction", "has __index__", "numeric str", "None"]
"""The classes of an int parameter in ``low..high`` (seq, delta, last, limit), as ``int_classes`` draws them."""

AS_CLASS = {"int subclass": UserInt, "float": float, "Decimal": decimal.Decimal, "Fraction": fractions.Fraction,
            "has __index__": Index, "numeric str": str}
"""The classes that hold any int value, each as a function of it: a test may place one where the
store makes it matter (the next seq, say)."""


def int_classes(low, high):
    """``{class: strategy}``: one strategy per class of INT_CLASSES, for an int in ``low..high``."""
    inside = st.integers(low, high)
    ends = st.sampled_from([low, high])
    return {
        "an end": ends,
        "inside": inside,
        "one past an end": st.sampled_from([low - 1, high + 1]),
        "far outside": st.integers(max_value=low - 1) | st.integers(min_value=high + 1),
        "IntEnum": st.sampled_from([m for m in Number if low <= m <= high] or [Number.ZERO]),
        "bool": st.booleans(),
        "None": st.none(),
        **{kind: (ends | inside).map(as_class) for kind, as_class in AS_CLASS.items()},
        "float": (ends | inside).map(float) | st.floats(),
    }


@functools.cache  # one strategy object per range: Hypothesis validates each new one as it is first drawn
def any_ints(low, high):
    """Any value a caller may pass where the contract asks for an int in ``low..high``."""
    return st.one_of(*int_classes(low, high).values())


def any_seqs():
    return any_ints(model.SEQ_MIN, model.SEQ_MAX)


def any_deltas():
    return any_ints(model.DELTA_MIN, model.DELTA_MAX)


def any_lasts():
    return any_ints(model.LAST_MIN, model.SEQ_MAX)


def any_limits():
    return any_ints(model.LIMIT_MIN, model.LIMIT_MAX)


_SHORT = st.floats(min_value=0.05, max_value=2.0)  # valid, and short enough to wait for

TIMEOUT_CLASSES = {
    "float": _SHORT,
    "int": st.integers(1, 2),
    "float subclass": _SHORT.map(UserFloat),
    "int subclass": st.sampled_from([Number.ONE, UserInt(1)]),
    "zero": st.sampled_from([0, 0.0, -0.0, Number.ZERO, UserInt(0)]),
    "negative": st.sampled_from([-1, -1.5, -float("inf")]),
    "NaN": st.sampled_from(["nan", "-nan"]).map(float) | st.just(UserFloat("nan")),
    # Made at run time: new float objects, not math.inf, so that `is not math.inf`
    # where a comparison belongs is caught. A class of its own: beside NaN, a
    # short run drew NaN only (seed 0: 8 draws of 8).
    "infinity": st.sampled_from(["inf", "1e309", "Infinity"]).map(float) | st.just(UserFloat("inf")),
    "int past float range": st.just(2**1024) | st.integers(min_value=2**1024),
    # True first (Hypothesis's first example, and its shrink target): False is also
    # a zero, as the class "zero" draws; True is the bool a numeric check takes for 1 s.
    # With st.booleans() a short run drew only False under 3 seeds of 8.
    "bool": st.sampled_from([True, False]),
    "Fraction": st.just(fractions.Fraction(1, 2)),
    "Decimal": st.sampled_from([decimal.Decimal("0.5"), decimal.Decimal("NaN")]),
    "not a number": st.sampled_from(["1", "1.0", None, [1], 1j, b"1"]) | st.text(max_size=3),
}
"""The classes of ``timeout`` (decision 10), each a strategy; the valid ones at most 2 s."""

VALID_TIMEOUT_CLASSES = ["float", "int", "float subclass", "int subclass"]
INVALID_TIMEOUT_CLASSES = [kind for kind in TIMEOUT_CLASSES if kind not in VALID_TIMEOUT_CLASSES]

# The valid range 0 < timeout < inf at its ends (the smallest positive float,
# the largest finite one, the largest int that becomes a float; valid, but never
# waited for), and one step outside (zero, the largest negative float,
# infinity, the first int too large to become a float).
TIMEOUT_ENDS = {"timeout low": 5e-324, "timeout high": sys.float_info.max,
                "timeout high (int)": int(sys.float_info.max)}
TIMEOUTS_JUST_OUTSIDE = {"timeout below": 0.0, "timeout below (negative)": -5e-324, "timeout above": math.inf,
                         "timeout above (int)": 2**1024}


def timeout_ends(valid=True):
    """``(label, timeout)`` at an end of the valid range (``valid``) or just outside it; records the label."""
    ends = TIMEOUT_ENDS if valid else TIMEOUTS_JUST_OUTSIDE

    def record(label):
        event(f"range end: {label}")
        return label, ends[label]

    return st.sampled_from(sorted(ends)).map(record)


def timeouts(kind=None):
    """Any value a caller may pass as ``timeout``: of class ``kind`` (a key of TIMEOUT_CLASSES), or any."""
    return TIMEOUT_CLASSES[kind] if kind else st.one_of(*TIMEOUT_CLASSES.values())


# ---------------------------------------------------------------- host and port

# Decision 16: host and port go to asyncio.open_connection as given.
# ``{form: (host, the address the test's peer listens on)}``. An IPv6 address in brackets, as a
# URL writes it, is no host to getaddrinfo: the connection fails (its probe says how), and so must
# run_client's, which hands it on as given rather than unwrapping it.
HOST_FORMS = {"IPv4 address": ("127.0.0.1", "127.0.0.1"), "IPv6 address": ("::1", "::1"),
              "name": ("localhost", "127.0.0.1"), "IPv6 address in brackets": ("[::1]", "::1"),
              "an address with blanks around it": (" 127.0.0.1\n", "127.0.0.1")}
# Each form made from a listening port. Handed on as given (decision 16), a
# port past 65535 or below 0 makes the connection fail (OverflowError), port 0
# is refused, and an int subclass reaches getaddrinfo, which takes only an
# exact int or a str (a name host fails with OSError): what the connection
# does with each is the model's input, found by a probe (``peers.connect_as_given``).
PORT_FORMS = {"int": int, "str of digits": str, "int subclass": UserInt, "zero": lambda port: 0,
              "int past 65535": lambda port: port + 65536, "str past 65535": lambda port: str(port + 65536),
              "negative": lambda port: -port}


# ---------------------------------------------------------------- hooks


# The errors a hook may raise, by class: ``drivers.errors.HOOK_ERRORS`` (HookFailure among them).

# What an awaitable a before_ack returns can be (decision 8 says awaitable,
# not coroutine): a coroutine, a Future, an object with ``__await__``, or a
# generator-based coroutine (``types.coroutine``), awaitable with no ``__await__``.
AWAITABLE_SHAPES = ["coroutine", "Future", "__await__", "generator-based coroutine"]


@types.coroutine
def _generator_based(coroutine):
    return (yield from coroutine)


class _Awaitable:
    """An awaitable that is neither a coroutine nor a Future."""

    def __init__(self, coroutine):
        self._coroutine = coroutine

    def __await__(self):
        return self._coroutine.__await__()


class _Future(asyncio.Future):
    """A Future, done from the start, that notes when it is awaited. (Not a Task:
    a Task raising KeyboardInterrupt would raise it out of the event loop.)"""

    def __init__(self, on_await, error, result):
        super().__init__(loop=asyncio.get_running_loop())
        self._on_await = on_await
        if error is not None:
            self.set_exception(error)
        else:
            self.set_result(result)

    def __await__(self):
        self._on_await()
        return super().__await__()


class Hook:
    """A drawn ``fault`` or ``before_ack``: what it does when called, and the calls it got.

    The model and the implementation each get their own copy (``fresh()``)
    that raises the same exception object, so the model's prediction can
    name that very object.
    """

    def __init__(self, name, error=None, returns=None, awaitable=None, at=None):
        self.name, self.error, self.returns, self.awaitable = name, error, returns, awaitable  # a shape, or None
        self.at = at  # the call (1, 2, ...) at which it fails; None: every call
        self.calls = []
        self.awaited = []
        self.observer = None  # called first on every call: a test looks at the store at that moment

    def fresh(self):
        return type(self)(self.name, self.error, self.returns, self.awaitable, self.at)

    def failing_at(self, call, moment):
        """A copy that fails at its ``call``-th call only (the ``moment``, in words, for its name)."""
        return type(self)(f"{self.name}, at {moment} only", self.error, self.returns, self.awaitable, call)

    def __call__(self, *args):
        self.calls.append(args)
        if self.observer is not None:
            self.observer(*args)
        error = self.error if self.at in (None, len(self.calls)) else None
        if self.awaitable == "coroutine" or (self.awaitable == "sometimes" and len(self.calls) % 2 == 0):
            return self._later(args, error)
        if self.awaitable == "sometimes":  # its odd calls return None, its even ones an awaitable
            return None
        if self.awaitable == "Future":
            return _Future(lambda: self.awaited.append(args), error, self.returns)
        if self.awaitable == "__await__":
            return _Awaitable(self._later(args, error))
        if self.awaitable == "generator-based coroutine":
            return _generator_based(self._later(args, error))
        if error is not None:
            raise error
        return self.returns

    async def _later(self, args, error):
        await asyncio.sleep(0)
        self.awaited.append(args)
        if error is not None:
            raise error
        return self.returns

    def __repr__(self):
        return self.name


class FalsyHook(Hook):
    """A callable whose truth value is False: it must be called all the same (decision 15)."""

    def __bool__(self):
        return False


def fresh(hook):
    """A copy of a drawn hook for one more caller (a value that is not a Hook is itself)."""
    return hook.fresh() if isinstance(hook, Hook) else hook


NOT_CALLABLE = [0, "", b"x", [], 1.5, True]


HOOK_KINDS = ["None", "plain", "returns a value", "falsy callable", "not callable", *HOOK_ERRORS,
              "awaitable", "awaitable raises", "awaitable raises a BaseException", "awaitable sometimes"]
"""The classes of ``fault`` and ``before_ack`` (the awaitable ones only for ``before_ack``: it may return an awaitable)."""


_SHAPES = st.sampled_from(AWAITABLE_SHAPES)
# What a hook of class "returns a value" returns: falsy ones first (False: a veto to a file that
# reads it), then a truthy int, and an object of no meaning.
RETURNED_VALUES = [False, 0, "", 42, True, "done"]
_RETURNED = st.sampled_from(RETURNED_VALUES) | st.builds(object)
_ERRORS = {kind: st.sampled_from(errors) for kind, errors in HOOK_ERRORS.items()}
# From an awaitable: an Exception or an sqlite3 error, or (a class of its own, so that every run of
# it meets one) a BaseException that is not an Exception, which a task of the implementation's own
# would let escape the event loop instead of the call.
_ERRORS["awaitable raises"] = st.sampled_from([error for kind in ("raises an Exception", "raises a ValueError",
                                                                   "raises an sqlite3 error") for error in HOOK_ERRORS[kind]])
_ERRORS["awaitable raises a BaseException"] = _ERRORS["raises a BaseException"]


@functools.cache  # one strategy object per set of arguments (see ints)
@st.composite
def hooks(draw, awaitable=False, failing=True, none=True, kind=None):
    """A ``fault`` (``awaitable=False``) or a ``before_ack`` (``awaitable=True``): of class ``kind``, or any."""
    if kind is None:
        kinds = [k for k in HOOK_KINDS if (awaitable or not k.startswith("awaitable"))
                 and (failing or "raises" not in k) and (none or k != "None")]
        kind = draw(st.sampled_from(kinds))
    if kind == "None":
        return None
    if kind == "not callable":
        return draw(st.sampled_from(NOT_CALLABLE))
    if kind == "returns a value":  # its value means nothing (step 3 calls fault(); decision 8): a falsy one neither
        value = draw(_RETURNED)
        event(f"a hook returns a {'falsy' if not value else 'truthy'} value")
        return Hook(f"a hook returning {value!r}", returns=value)
    if kind == "falsy callable":
        return FalsyHook("a falsy callable hook")
    shape = draw(_SHAPES) if kind.startswith("awaitable") and kind != "awaitable sometimes" else None
    if "raises" in kind:
        cls = draw(_ERRORS[kind])
        error = model.drawn_error(cls, "raised by the test's hook")
        where = f"from the {shape} it returns" if shape else "when called"
        return Hook(f"a hook raising {cls.__name__} {where}", error=error, awaitable=shape)
    if kind == "awaitable":
        return Hook(f"a hook returning a {shape}", awaitable=shape)
    if kind == "awaitable sometimes":
        return Hook("a hook returning None, then a coroutine, in turn", awaitable="sometimes")
    return Hook("a plain hook")


# ---------------------------------------------------------------- stores


_WHERE = st.sampled_from(["fresh", "at the top", "anywhere"])
_ANY_LAST = st.just(model.SEQ_MIN) | st.integers(model.SEQ_MIN, model.SEQ_MAX)
# A total anywhere in its range (each event's delta summed: far past a 32-bit int), at its ends, or small.
_TOTALS = st.integers(-(10**6), 10**6) | st.sampled_from([model.TOTAL_MIN, model.TOTAL_MAX]) \
    | st.integers(model.TOTAL_MIN, model.TOTAL_MAX)


@st.composite
def store_states(draw):
    """A ``model.Store`` to start from: fresh, or a cursor at the top of the seq range or anywhere
    in it, with some rows missing below it and a total that is not their sum (a store another
    writer left), anywhere in its range: small, or up to the sum of every event's delta."""
    where = draw(_WHERE)
    if where == "fresh":
        return model.Store()
    last = model.SEQ_MAX if where == "at the top" else draw(_ANY_LAST)
    below = range(max(0, last - 3), last + 1)
    ledger = {seq: draw(st.integers(model.DELTA_MIN, model.DELTA_MAX)) for seq in below if draw(st.booleans())}
    return model.Store(last, draw(_TOTALS), ledger)



# ---------------------------------------------------------------- paths

# Characters that mean something to a URI (first: Hypothesis draws the first
# ones most), a shell or SQL, and non-ASCII ones:
# sqlite3.connect takes the name as it is (a name starting with "file:" is
# the one exception, a URI wherever SQLite was built to read them, so none
# is drawn).
_PATH_CHARACTERS = "?#% &;:$*'\"()[]{}=+~!@,^`\\éü漢-_.0123456789abcXYZ"

# What a writer that died while making a store can leave (decision 19: step 2's statements run one
# by one, in any order that creates the checkpoint table before its row): every proper prefix of
# every such order. Each is a form of its own: a run of one form meets it in every example.
HALF_MADE = {"a store with the ledger table only": ["ledger"],
             "a store with the checkpoint table only": ["checkpoint"],
             "a store with the checkpoint table and its row only": ["checkpoint", "row"],
             "a store with no checkpoint row": ["checkpoint", "ledger"],
             "a store with no checkpoint row, the ledger made first": ["ledger", "checkpoint"]}
HALF_MADE_FORMS = list(HALF_MADE)
PATH_FORMS = ["relative name", "absolute", "pathlib.Path", "bytes", "special characters",
              ":memory:", "empty", "a folder", "missing parent", "an empty file", "a file that is not a store",
              *HALF_MADE_FORMS]


# What is at a path of each form when the call opens it, in a report's words ("open_store(path)
# on <this>"): the store's state is what the call's outcome depends on.
_PATH_SAID = {"relative name": "a new store at a relative name", "absolute": "a new store at an absolute path",
              "pathlib.Path": "a new store named by a pathlib.Path", "bytes": "a new store named by bytes",
              "special characters": "a new store at a name with special characters",
              ":memory:": "an in-memory store", "empty": "a temporary store (the path '')", "a folder": "a folder",
              "missing parent": "a file in a folder that does not exist", "an empty file": "an empty file (0 bytes)",
              "a file that is not a store": "a file that is not a store"}


def path_said(form):
    """What is at a path of ``form`` (``PATH_FORMS``) when it is opened: ``a new store at a relative name``."""
    return _PATH_SAID.get(form, form)  # the half-made stores say it themselves


def _file(path, content=b""):
    """An existing file: of 0 bytes (``tempfile.mkstemp`` makes them: SQLite's empty database), or text."""
    with open(path, "wb") as file:
        file.write(content)
    return path


def _database(path, *statements):
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as con:
        for statement in statements:
            con.execute(statement)
    return path


_STATEMENTS = {"checkpoint": model.SCHEMA[0], "ledger": model.SCHEMA[1],  # SPEC.md's own tables, and its row
               "row": "INSERT INTO checkpoint(id, last, total) VALUES (1, %d, %d)" % model.INITIAL_STATE}


def _half_made(path, which):
    return _database(path, *(_STATEMENTS[part] for part in HALF_MADE[which]))


@st.composite
def paths(draw, form=None):
    """``(form, make)``: a way to name a store; ``make(folder)`` gives the path inside ``folder``.

    A relative name is relative to the working folder: the test makes
    ``folder`` the working folder while it uses it.
    """
    form = form or draw(st.sampled_from(PATH_FORMS))
    name = "store.db"
    if form == "special characters":
        around = st.text(_PATH_CHARACTERS, max_size=6)
        name = draw(around) + draw(st.sampled_from(_PATH_CHARACTERS[:19])) + draw(around) + ".db"
    make = {
        "relative name": lambda folder: name,
        "absolute": lambda folder: os.path.join(folder, name),
        "pathlib.Path": lambda folder: pathlib.Path(folder, name),
        "bytes": lambda folder: os.fsencode(os.path.join(folder, name)),
        "special characters": lambda folder: os.path.join(folder, name),
        ":memory:": lambda folder: ":memory:",
        "empty": lambda folder: "",
        "a folder": lambda folder: folder,
        "missing parent": lambda folder: os.path.join(folder, "missing", name),
        "an empty file": lambda folder: _file(os.path.join(folder, name)),
        "a file that is not a store": lambda folder: _file(os.path.join(folder, name), b"not a database\n" * 200),
        **{half: (lambda folder, half=half: _half_made(os.path.join(folder, name), half)) for half in HALF_MADE},
    }[form]
    return form, make
