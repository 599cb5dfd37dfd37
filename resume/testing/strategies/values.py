"""Hypothesis strategies for the contract's values: frames, events, event logs.

One module, reused by ``properties/`` and ``stateful/``. Every strategy here
is built so that Hypothesis shrinks towards small, readable values: seqs and
deltas shrink to 0, and every malformed value is *derived from a valid one*
(a valid frame, a valid log) by one change, so a failure shrinks to a
near-miss of a good value, e.g. ``b"EVENT 0 0\\r\\n"``.

The bounds are SPEC.md's, imported from the model (``resume.testing.model``),
never from the implementation the suite checks.

Contents:

* valid values: ``valid_seqs``, ``valid_deltas``, ``valid_events``, ``frame``, ``valid_frames``,
  ``bytes_subclass_frames``;
* malformed frames, one strategy per kind (``FRAME_MALFORMATIONS`` maps a
  label to each) and ``non_bytes_frames``; ``lines(kind)`` draws any class
  of ``LINE_KINDS``, the whole domain of ``line``, and ``line_calls(kind)``
  the lines of calls in turn that end in one;
* the product of the frame's fields and their malformations
  (``model.FRAME_FIELDS`` x ``model.FIELD_MALFORMATIONS``): ``malformed_field``,
  and ``every_field_malformed`` (a line per field, one malformation);
* frame-shaped bytes for differential checks: ``mutated_frames``,
  ``frame_like_bytes``;
* event logs for ``replay``: ``windows``, ``cursor_for`` /
  ``window_and_cursor`` (``RELATIONS``), ``valid_limits``, ``as_passed`` (a log as
  a caller passes it), ``valid_log_args``; malformed ones, one strategy per
  kind in ``LOG_MALFORMATIONS``, drawn by ``malformed_logs``; every range at
  its ends (``replay_at_ends``) and one past (``replay_just_outside``);
* the whole domain of ``line`` (``LINE_KINDS``, ``lines``) and of replay's
  ``(events, last, limit)`` (``REPLAY_KINDS``, ``replay_args``).
"""

import collections
import decimal
import fractions
import functools
import random
import unicodedata

from hypothesis import event
from hypothesis import strategies as st

from resume.testing.strategies import arguments
from resume.testing import model
from resume.testing.model import (  # noqa: F401 - re-exported: the bounds, stated once in the model
    DELTA_MAX, DELTA_MIN, FRAME_MAX, LAST_MIN, LIMIT_MAX, LIMIT_MIN, LOG_MAX, SEQ_MAX, SEQ_MIN, frame,
)

# ---------------------------------------------------------------- valid values


@functools.cache  # built once: Hypothesis validates each new strategy object as it is drawn
def valid_seqs(min_value=SEQ_MIN, max_value=SEQ_MAX):
    """Valid seqs, biased to the boundaries 0, 1 and the top of the range."""
    edges = [v for v in (0, 1, SEQ_MAX - 1, SEQ_MAX) if min_value <= v <= max_value]
    return st.integers(min_value, max_value) | st.sampled_from(edges) if edges else st.integers(min_value, max_value)


@functools.cache
def valid_deltas():
    """Valid deltas, biased to 0, +-1 and +-1000."""
    return st.integers(DELTA_MIN, DELTA_MAX) | st.sampled_from([0, 1, -1, DELTA_MAX, DELTA_MIN])




@functools.cache
def valid_events():
    """Valid ``(seq, delta)`` pairs."""
    return st.tuples(valid_seqs(), valid_deltas())


@functools.cache
def valid_frames():
    """Valid frames over the full ranges, biased to the boundaries."""
    return valid_events().map(lambda pair: frame(*pair))


class FrameBytes(bytes):
    """A bytes subclass: its instances are bytes, so parse_line must accept them (SPEC 13)."""


def bytes_subclass_frames():
    """Valid frames as instances of a ``bytes`` subclass."""
    return valid_frames().map(FrameBytes)


# ---------------------------------------------------------------- malformed frames
#
# Each strategy draws a valid (seq, delta), writes its frame as three fields
# [b"EVENT", seq, delta], and makes ONE change. Positions and counts are drawn
# after the event, from ranges that shrink to the smallest change.

_SEQ, _DELTA = 1, 2  # indexes of the numbers in the fields


@st.composite
def _fields(draw):
    seq, delta = draw(valid_events())
    return [b"EVENT", b"%d" % seq, b"%d" % delta]


def _join(fields, end=b"\n"):
    return b" ".join(fields) + end


def _split_sign(number):
    return (b"-", number[1:]) if number.startswith(b"-") else (b"", number)


def _number_edit(edit):
    """A strategy-maker from ``edit(draw, sign, digits, index)``: a valid frame with ONE of its
    numbers (seq or delta, drawn after the event) rewritten by it."""

    @functools.wraps(edit)
    def strategy():
        @st.composite
        def edited(draw):
            fields = draw(_fields())
            i = draw(st.sampled_from([_SEQ, _DELTA]))
            fields[i] = edit(draw, *_split_sign(fields[i]), i)
            return _join(fields)

        return edited()

    return strategy


@_number_edit
def leading_zero_frames(draw, sign, digits, i):
    """A leading zero on seq or delta (``00``, ``05``, ``-05``)."""
    return sign + b"0" * draw(st.integers(1, 3)) + digits


@_number_edit
def plus_sign_frames(draw, sign, digits, i):
    """A ``+`` sign on seq or delta (``+5``, and ``+-5`` for a negative delta)."""
    return draw(st.sampled_from([b"+" + digits, b"+" + sign + digits]))


@_number_edit
def doubled_sign_frames(draw, sign, digits, i):
    """Two signs before seq or delta (``--5``, ``-+5``, ``++5``), or a sign after it (``5-``)."""
    signs = draw(st.sampled_from([b"--", b"-+", b"++", b"---"]))
    return digits + b"-" if draw(st.integers(0, 3)) == 0 else signs + digits


@_number_edit
def minus_zero_frames(draw, sign, digits, i):
    """``-0`` in place of seq or delta (``-00`` is a leading zero too: ``leading_zero_frames``)."""
    return b"-0"


@st.composite
def cr_frames(draw):
    """CRLF, a CR in place of the LF, or a CR at any position."""
    good = draw(valid_frames())
    kind = draw(st.sampled_from(["crlf", "cr for lf", "cr inside"]))
    if kind == "crlf":
        return good[:-1] + b"\r\n"
    if kind == "cr for lf":
        return good[:-1] + b"\r"
    pos = draw(st.integers(0, len(good) - 1))
    return good[:pos] + b"\r" + good[pos:]


def cut_off(good, shortest=1):
    """``good`` (a valid frame) cut before its LF, as EOF leaves a frame mid-way.

    By what is left: the frame but its LF; a shorter frame but its LF (the
    delta cut after a digit: what a receiver that puts the LF back would
    commit); anything from ``shortest`` bytes up. Shrinks to: only the LF missing.
    """
    body = good[:-1]
    delta = body.rindex(b" ") + 1
    first_digit = delta + body[delta:].startswith(b"-")
    return st.one_of(st.just(body),
                     st.integers(first_digit + 1, len(body)).map(lambda n: body[:n]),
                     st.integers(shortest, len(body)).map(lambda n: body[:n]))


@st.composite
def cut_off_frames(draw):
    """A valid frame cut at any byte before its LF, down to nothing (``cut_off``)."""
    return draw(cut_off(draw(valid_frames()), shortest=0))


@st.composite
def split_frames(draw):
    """A valid frame split in two at any byte: ``[its start, the rest]``, as a stream broken
    mid-frame delivers it (the start without its LF, then the rest, in a read of its own)."""
    good = draw(valid_frames())
    cut = draw(st.integers(1, len(good) - 1))
    return [good[:cut], good[cut:]]


@st.composite
def multi_line_frames(draw):
    """More than one line: a second bare LF, two frames, an LF inside, an LF first."""
    good = draw(valid_frames())
    kind = draw(st.sampled_from(["second bare lf", "two frames", "lf inside", "lf first"]))
    if kind == "second bare lf":
        return good + b"\n"
    if kind == "two frames":
        return good + draw(valid_frames())
    if kind == "lf first":
        return b"\n" + good
    pos = draw(st.integers(1, len(good) - 1))
    return good[:pos] + b"\n" + good[pos:]


# Every Unicode decimal digit but ASCII's: int() and the str pattern \d accept
# them all (full-width, Arabic-Indic, Devanagari, mathematical bold, ...).
FOREIGN_DIGITS = st.characters(categories=["Nd"]).filter(lambda c: not "0" <= c <= "9")
# Hypothesis builds its table of Unicode categories on the first draw of a
# character strategy (here, and ``st.text`` in arguments.py): built now, at
# import, not inside a test case (inside a shrink, under the line tracer of a
# profile with an explain phase, that once took 22 s of a 24 s run).
FOREIGN_DIGITS.validate()


def _foreign(digits, sample):
    """ASCII ``digits`` written in the decimal set of the digit ``sample``, as UTF-8."""
    zero = ord(sample) - unicodedata.digit(sample)  # each set's ten digits are consecutive
    return "".join(chr(zero + d - ord("0")) for d in digits).encode("utf-8")


def _byte_edit(byte):
    """A valid frame with one byte (``byte``, a strategy) put at any position: in place of the byte there, or inserted."""

    @st.composite
    def edited(draw):
        good = draw(valid_frames())
        pos = draw(st.integers(0, len(good)))
        new = draw(byte)
        if draw(st.booleans()) and pos < len(good):
            return good[:pos] + new + good[pos + 1 :]  # replaced
        return good[:pos] + new + good[pos:]  # inserted

    return edited()


def non_ascii_frames():
    """Non-ASCII: a byte 0x80-0xFF replaced or inserted anywhere in a valid frame."""
    return _byte_edit(st.integers(0x80, 0xFF).map(lambda byte: bytes([byte])))


def nul_frames():
    """A NUL byte inserted at, or replacing the byte at, any position."""
    return _byte_edit(st.just(b"\x00"))


_FOREIGN_KINDS = st.sampled_from(["foreign number", "foreign digit in place", "foreign digit beside"])


@_number_edit
def foreign_digit_frames(draw, sign, digits, i):
    """Non-ASCII decimal digits (UTF-8) in a number, where ASCII ones would be valid.

    The digits replace a whole number (``EVENT \\u0661 0``), one digit of it
    (``EVENT 1\\u0662 0``) or sit next to its ASCII digits (``EVENT 1\\u0661 0``):
    an implementation that decodes and uses int() or ``\\d`` on str accepts
    them. Every example is such a digit, so that kind of bug is caught in
    every run, not one in three.
    """
    kind, sample = draw(_FOREIGN_KINDS), draw(FOREIGN_DIGITS)
    if kind == "foreign number":
        return sign + _foreign(digits, sample)
    if kind == "foreign digit in place":
        pos = draw(st.integers(0, len(digits) - 1))
        return sign + digits[:pos] + _foreign(digits[pos : pos + 1], sample) + digits[pos + 1 :]
    pos = draw(st.integers(0, len(digits)))
    return sign + digits[:pos] + _foreign(bytes([draw(st.sampled_from(b"0123456789"))]), sample) + digits[pos:]


_HUGE = 10**40  # 41 digits: the frame stays under 64 bytes, so only the range check can reject it
_OUT_OF_RANGE = {
    _SEQ: st.one_of(st.just(SEQ_MAX + 1), st.integers(SEQ_MAX + 1, _HUGE), st.just(-1), st.integers(-_HUGE, -1)),
    _DELTA: st.one_of(st.just(DELTA_MAX + 1), st.just(DELTA_MIN - 1), st.integers(DELTA_MAX + 1, _HUGE),
                      st.integers(-_HUGE, DELTA_MIN - 1)),
}


@_number_edit
def out_of_range_frames(draw, sign, digits, i):
    """A number one past a bound, or huge (kept short enough that the frame stays within 64 bytes)."""
    return b"%d" % draw(_OUT_OF_RANGE[i])


_OTHER_KEYWORDS = [b"EVENTS", b"EVEN", b"EVENT:", b"ACK", b"RESUME", b"", b"E", b"EV ENT", b"EVNT", b"\x00EVENT"]


@st.composite
def keyword_frames(draw):
    """A wrong keyword, or ``EVENT`` with one or more letters in lower case."""
    fields = draw(_fields())
    if draw(st.booleans()):
        lower = draw(st.lists(st.booleans(), min_size=5, max_size=5).filter(any))
        fields[0] = bytes(c + 32 if low else c for c, low in zip(b"EVENT", lower))
    else:
        fields[0] = draw(st.sampled_from(_OTHER_KEYWORDS))
    return _join(fields)


@st.composite
def whitespace_frames(draw):
    """Spacing other than one ASCII space between fields: tab, double, leading, trailing space, others."""
    fields = draw(_fields())
    kind = draw(st.sampled_from(["tab", "double", "leading", "trailing", "other blank", "after lf"]))
    if kind == "leading":
        return b" " + _join(fields)
    if kind == "trailing":
        return _join(fields, b" \n")
    if kind == "after lf":
        return _join(fields, b"\n ")
    gap = draw(st.sampled_from([0, 1]))  # the space after EVENT, or the one after seq
    blank = {"tab": b"\t", "double": b"  "}.get(kind) or draw(st.sampled_from([b"\x0b", b"\x0c", b" \t", b"\t "]))
    head = b" ".join(fields[: gap + 1])
    tail = b" ".join(fields[gap + 1 :])
    return head + blank + tail + b"\n"


@_number_edit
def underscore_frames(draw, sign, digits, i):
    """``_`` inside a number, as int() allows (``1_0``, ``0_0``)."""
    if len(digits) < 2:
        return sign + digits + b"_0"
    pos = draw(st.integers(1, len(digits) - 1))
    return sign + digits[:pos] + b"_" + digits[pos:]


@_number_edit
def hex_frames(draw, sign, digits, i):
    """A number in hex, octal or binary notation (``0x10``) as int(x, 0) allows."""
    notation = draw(st.sampled_from([b"0x%x", b"0X%X", b"0o%o", b"0b%d"]))
    value = int(digits)
    return sign + (notation % value if notation != b"0b%d" else b"0b" + bin(value)[2:].encode())


@st.composite
def field_count_frames(draw):
    """A missing field, or an extra one at any place."""
    fields = draw(_fields())
    if draw(st.booleans()):
        del fields[draw(st.integers(0, 2))]
    else:
        extra = draw(st.sampled_from([b"0", b"1", b"EVENT", b"-1"]))
        fields.insert(draw(st.integers(0, 3)), extra)
    return _join(fields)


@st.composite
def over_length_frames(draw):
    """Frames of 65 bytes or more, padded from a valid frame.

    What this can and cannot tell apart: the longest valid frame
    (the top seq and delta -1000) is 23 bytes, so every frame over 64 bytes
    is ALSO malformed in another way (leading zeros, extra spaces, a huge
    number). An implementation that forgot only the length check but parses
    strictly is therefore indistinguishable by its results, and no test can
    (or should) fail it. What this strategy does catch is an implementation
    that lacks the length check AND tolerates the padding elsewhere (int()
    stripping zeros or blanks, split() on any whitespace), which is where a
    missing length check becomes observable.
    """
    seq, delta = draw(valid_events())
    size = draw(st.integers(FRAME_MAX + 1, 4 * FRAME_MAX))  # the LF included
    kind = draw(st.sampled_from(["zeros before seq", "blanks before lf", "zeros before delta"]))
    body = len(frame(seq, delta))
    pad = size - body
    if kind == "zeros before seq":
        return b"EVENT %s%d %d\n" % (b"0" * pad, seq, delta)
    if kind == "blanks before lf":
        return b"EVENT %d %d%s\n" % (seq, delta, b" " * pad)
    sign = b"-" if delta < 0 else b""
    return b"EVENT %d %s%s%d\n" % (seq, sign, b"0" * pad, abs(delta))


def bom_frames():
    """A valid frame after a UTF-8 byte-order mark (``EF BB BF``), as a Windows tool writes a text's start."""
    return valid_frames().map(lambda good: b"\xef\xbb\xbf" + good)


def protocol_words():
    """A line of the protocol that is not an EVENT: what the client sends, or an end of stream spelled out."""
    return st.sampled_from([b"EOF\n", b"ACK 0\n", b"RESUME -1\n", b"RESUME 0\n", b"END\n", b"EVENT\n"])


def blank_lines():
    """A line with nothing in it: only its LF, or blanks before it (a keep-alive, some publishers say)."""
    return st.sampled_from([b"\n", b" \n", b"\t\n", b"  \n"])


FRAME_MALFORMATIONS = {
    "leading zero": leading_zero_frames(),
    "plus sign": plus_sign_frames(),
    "minus zero": minus_zero_frames(),
    "doubled sign": doubled_sign_frames(),
    "CR or CRLF": cr_frames(),
    "missing final LF": cut_off_frames(),
    "more than one line": multi_line_frames(),
    "the rest of a split frame": split_frames().map(lambda halves: halves[1]),
    "non-ASCII": non_ascii_frames(),
    "non-ASCII digit": foreign_digit_frames(),
    "out of range": out_of_range_frames(),
    "keyword or case": keyword_frames(),
    "whitespace": whitespace_frames(),
    "underscore": underscore_frames(),
    "hex": hex_frames(),
    "field count": field_count_frames(),
    "over 64 bytes": over_length_frames(),
    "NUL": nul_frames(),
    "a byte-order mark first": bom_frames(),
    "blank line": blank_lines(),
    "another message": protocol_words(),
}
"""Every kind of malformed bytes frame, by label; each value is a strategy."""


@functools.cache  # built once per size: drawn in every example
def _ends_often(size):
    """``0..size``, its ends often; shrinks to 0."""
    return st.sampled_from([0, size]) | st.integers(0, size)


@st.composite
def malformed_field(draw, field, malformation):
    """``(place, line)``: ``frame(seq, delta)`` with ``field`` changed by ``malformation``
    (``model.malformed_frame``), the event, the place in the field and the text each drawn whole;
    ``place`` says where the text went: "before", "inside" or "after" the field (or "whole")."""
    seq, delta = draw(valid_events())
    texts = model.FIELD_MALFORMATIONS[malformation]
    size = len(model.frame_fields(seq, delta)[model.FRAME_FIELDS.index(field)])
    at = draw(_ends_often(size))
    place = "whole" if malformation in model.FIELD_REPLACEMENTS else \
        "before" if at == 0 else "after" if at == size else "inside"
    return place, model.malformed_frame(seq, delta, field, malformation, at, draw(st.integers(0, len(texts) - 1)))


@functools.cache
def every_field_malformed(malformation):
    """One line per field of ``model.FRAME_FIELDS``, each with ``malformation``: every cell of the
    product field x malformation that this malformation spans, in every example."""
    return st.tuples(*(malformed_field(field, malformation).map(lambda drawn: drawn[1])
                       for field in model.FRAME_FIELDS))


NON_BYTES_KINDS = ["str", "bytearray", "memoryview", "int", "None", "list", "bool", "float", "bytes-like object"]


class _Framed:
    """An object that converts to a frame with ``bytes()`` but is not bytes."""

    def __init__(self, line):
        self.line = line

    def __bytes__(self):
        return self.line

    def __repr__(self):
        return f"<object whose bytes() is {self.line!r}>"


@st.composite
def non_bytes_frames(draw, kind=None):
    """Values that are not bytes: str, bytearray, memoryview, int, None, a list of byte values (``kind``)."""
    good = draw(valid_frames())
    kind = kind or draw(st.sampled_from(NON_BYTES_KINDS))
    return {
        "str": lambda: good.decode("ascii"),
        "bytearray": lambda: bytearray(good),
        "memoryview": lambda: memoryview(good),
        "int": lambda: draw(valid_seqs()),
        "None": lambda: None,
        "list": lambda: list(good),
        "bool": lambda: True,
        "float": lambda: 1.0,
        "bytes-like object": lambda: _Framed(good),
    }[kind]()


# ---------------------------------------------------------------- frame-shaped bytes

# Bytes that matter to the grammar, for near-miss edits of a valid frame.
_EDIT_BYTES = b"0123456789 -+\n\r\t_xXeE\x00\x0b" + bytes([0x80, 0xA0, 0xFF])


@st.composite
def mutated_frames(draw):
    """A valid frame with 1-3 byte edits (insert, delete, replace): valid or not, close to the grammar."""
    data = bytearray(draw(valid_frames()))
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["replace", "insert", "delete"]))
        byte = draw(st.sampled_from(_EDIT_BYTES))
        if op == "insert" or pos == len(data):
            data.insert(pos, byte)
        elif op == "replace":
            data[pos] = byte
        else:
            del data[pos]
    return bytes(data)


def frame_like_bytes():
    """Bytes shaped like a frame with loose spacing, signs, case and line ends; some valid."""
    return st.from_regex(
        rb"(EVENT|event|EVENt| EVENT)( |  |\t)[+-]?[0-9]{1,11}( |  |\t)[+-]?[0-9]{1,5}( |\r)?\n?\n?",
        fullmatch=True,
    )


# ---------------------------------------------------------------- event logs for replay
#
# A log's deltas come from ONE drawn seed (``_deltas``), however long the log:
# a 128-item log then costs about what a short one does, to draw and to
# shrink, and shrinking the log's length leaves that choice as it was.

_SEEDS = st.integers(0, 2**32 - 1)


def _deltas(draw, n, ends=0.05):
    """``n`` deltas anywhere in their range, a share ``ends`` of them at an end; all 0 for the seed 0."""
    seed = draw(_SEEDS)
    if seed == 0:  # what a failure shrinks to, unless the deltas matter
        return [0] * n
    rng = random.Random(seed)
    return [rng.choice((DELTA_MIN, DELTA_MAX)) if rng.random() < ends else rng.randint(DELTA_MIN, DELTA_MAX)
            for _ in range(n)]


@st.composite
def windows(draw, min_size=1, max_size=LOG_MAX, min_first=SEQ_MIN, max_final=SEQ_MAX):
    """A retained log: ``min_size..max_size`` consecutive ``(seq, delta)`` tuples starting anywhere.

    The first seq is at least ``min_first`` and the final one at most
    ``max_final``; the start is biased to the lowest and the highest start
    allowed (so windows ending at the top of the range are common), and the size to
    ``min_size`` and ``max_size`` (so a log of exactly 128 events is too).
    """
    size = draw(st.integers(min_size, max_size) | st.sampled_from([min_size, max_size]))
    return _window(draw, size, min_first, max_final)


def _pick(draw, options):
    """One of ``options`` (a list made at draw time: cheaper than a ``sampled_from`` built for one draw)."""
    return options[draw(st.integers(0, len(options) - 1))]


def _window(draw, n, min_first=SEQ_MIN, max_final=SEQ_MAX):
    top = max_final - n + 1
    edges = sorted({v for v in (min_first, min_first + 1, top) if min_first <= v <= top})
    first = _pick(draw, edges) if draw(st.booleans()) else draw(st.integers(min_first, top))
    return [(first + i, d) for i, d in enumerate(_deltas(draw, n))]


RELATIONS = ["far before", "first-2", "first-1", "inside", "at the end", "past the end"]
"""Where a cursor can stand to a window: before its first seq (by three or more, by two, by one),
inside it, at its final seq, past it."""


def cursor_for(window, relation):
    """Values of ``last`` in the given relation to the window (the window must allow it)."""
    first, final = window[0][0], window[-1][0]
    return {
        "far before": lambda: st.integers(LAST_MIN, first - 3),
        "first-2": lambda: st.just(first - 2),
        "first-1": lambda: st.just(first - 1),
        "inside": lambda: st.integers(first, final - 1),
        "at the end": lambda: st.just(final),
        "past the end": lambda: st.integers(final + 1, SEQ_MAX),
    }[relation]()


# The windows that allow each relation (built once).
_WINDOWS_FOR = {relation: windows(**{"far before": dict(min_first=2), "first-2": dict(min_first=1),
                                     "inside": dict(min_size=2),  # one item has no inside: its end
                                     "past the end": dict(max_final=SEQ_MAX - 1)}.get(relation, {}))
                for relation in RELATIONS}


@functools.cache
@st.composite
def window_and_cursor(draw, relation=None):
    """``(relation, window, last)``: the relation drawn first (evenly), then a window that allows it."""
    relation = relation or draw(st.sampled_from(RELATIONS))
    window = draw(_WINDOWS_FOR[relation])
    return relation, window, draw(cursor_for(window, relation))


@functools.cache
def valid_limits():
    """Valid limits, 1..16."""
    return st.integers(LIMIT_MIN, LIMIT_MAX)


LIMITS_VALID = valid_limits()


class LogList(list):
    """A list subclass: a list for replay (SPEC decision 7)."""


Event = collections.namedtuple("Event", "seq delta")  # a tuple (decision 7)


class Pair(tuple):
    """A tuple subclass of the caller's own (decision 7: tuple instances)."""


ITEM_KINDS = {
    "tuple": tuple,
    "namedtuple": lambda item: Event(*item),
    "tuple subclass": Pair,
    "int subclasses": lambda item: (arguments.UserInt(item[0]), arguments.UserInt(item[1])),  # ints (decision 14)
}

_ITEM_MIXES = st.sampled_from([[kind] for kind in ITEM_KINDS] + [list(ITEM_KINDS)])
_CONTAINERS = st.sampled_from([list, LogList])


def as_passed(draw, window):
    """``window`` as a caller may pass it: a list or a list subclass, of tuples of any of ``ITEM_KINDS`` (or mixed)."""
    kinds = draw(_ITEM_MIXES)
    return draw(_CONTAINERS)(ITEM_KINDS[kinds[i % len(kinds)]](item) for i, item in enumerate(window))


LASTS, LIMITS = arguments.any_lasts(), arguments.any_limits()  # built once: a strategy built at each draw costs more than it draws


def _mostly(draw, usual, whole):
    """``usual`` three times in four, else a value from the parameter's whole domain (``whole``)."""
    return draw(whole) if draw(st.integers(0, 3)) == 0 else usual


@st.composite
def valid_log_args(draw, relation=None, last=None, limit=None):
    """``(events, last, limit)``: a log as a caller passes it, a cursor in ``relation`` to it (any if None).

    ``last`` and ``limit`` default to the relation's cursor and a valid limit,
    each a quarter of the time from its whole domain instead; given, they
    are the strategies drawn from.
    """
    _, window, cursor = draw(window_and_cursor(relation))
    last = draw(last) if last is not None else _mostly(draw, cursor, LASTS)
    limit = draw(limit) if limit is not None else _mostly(draw, draw(LIMITS_VALID), LIMITS)
    return as_passed(draw, window), last, limit


# ---------------------------------------------------------------- malformed logs
#
# Each draws a valid window and breaks it once, at any position.


def _shift(window, index, step):
    """The window with one break in its run of seqs just before ``index``.

    The tail from ``index`` moves by ``step`` or, if that leaves the range,
    the head before it moves by ``-step``: either way item ``index`` has seq
    ``previous + 1 + step`` and every other neighbour stays consecutive.
    """
    tail = [(s + step, d) for s, d in window[index:]]
    if all(SEQ_MIN <= s <= SEQ_MAX for s, _ in tail):
        return window[:index] + tail
    return [(s - step, d) for s, d in window[:index]] + window[index:]


def _seq_break(step):
    @st.composite
    def broken(draw):
        # The size and the position first, then the items: shrinking the
        # size then leaves the position where it was.
        n = draw(st.integers(2, LOG_MAX))
        index = draw(st.integers(1, n - 1))
        window = _window(draw, n)
        return _shift(window, index, draw(step) if isinstance(step, st.SearchStrategy) else step)

    return broken()


def _item_replaced(options):
    """A window with the item at one position replaced by one of ``options(seq, delta)``."""

    @st.composite
    def broken(draw):
        n = draw(st.integers(1, LOG_MAX))
        index = draw(st.integers(0, n - 1))
        window = _window(draw, n)
        return window[:index] + [_pick(draw, options(*window[index]))] + window[index + 1 :]

    return broken()


@st.composite
def _not_a_list(draw):
    window = draw(windows())
    make = draw(st.sampled_from(["tuple", "generator", "deque", "iterator", "dict"]))
    return {
        "tuple": tuple,
        "generator": lambda w: (item for item in w),
        "deque": collections.deque,
        "iterator": iter,
        "dict": dict,
    }[make](window)


@st.composite
def _seq_out_of_range(draw):
    # Consecutive, but running off an end of the seq range: -1 before 0, or
    # one past the top seq, after the top seq.
    if draw(st.booleans()):
        return [(-1, draw(valid_deltas()))] + draw(windows(max_size=16, max_final=SEQ_MIN + 15).map(_from_zero))
    return draw(windows(max_size=16, min_first=SEQ_MAX - 15).map(_to_top)) + [(SEQ_MAX + 1, draw(valid_deltas()))]


@st.composite
def _cancelling(draw):
    # Two defects whose effects on the log's span cancel out: its first and
    # final seqs and its length are a consecutive log's. Two items swapped
    # (a descent), or an item repeating the one before it (a repeat, then a hole).
    n = draw(st.integers(4, LOG_MAX))
    i = draw(st.integers(1, n - 3))
    window = _window(draw, n)
    seqs = [seq for seq, _ in window]
    if draw(st.booleans()):
        j = draw(st.integers(i + 1, n - 2))
        seqs[i], seqs[j] = seqs[j], seqs[i]
    else:
        seqs[i] = seqs[i - 1]
    return [(seq, delta) for seq, (_, delta) in zip(seqs, window)]


def _from_zero(window):
    return [(s - window[0][0], d) for s, d in window]


def _to_top(window):
    return [(s + SEQ_MAX - window[-1][0], d) for s, d in window]


LOG_MALFORMATIONS = {
    "not a list": _not_a_list(),
    "empty": st.just([]),
    "over 128 items": windows(LOG_MAX + 1, LOG_MAX + 8),
    "list item": _item_replaced(lambda s, d: [[s, d]]),
    "wrong-length tuple": _item_replaced(lambda s, d: [(s, d, 0), (s,), (), (s, d, d)]),
    # A frame first: the item a caller is likeliest to pass (Hypothesis draws the first option most).
    "other item": _item_replaced(lambda s, d: [frame(s, d), None, s, f"{s} {d}", {s: d}]),
    "bool value": _item_replaced(lambda s, d: [(True, d), (False, d), (s, True), (s, False)]),
    "wrong value type": _item_replaced(lambda s, d: [(float(s), d), (s, float(d)), (str(s), d), (s, str(d)), (s, None),
                                                     (decimal.Decimal(s), d), (s, fractions.Fraction(d))]),
    "delta out of range": _item_replaced(lambda s, d: [(s, DELTA_MAX + 1), (s, DELTA_MIN - 1), (s, 10**20),
                                                       (s, -(10**20))]),
    "seq out of range": _seq_out_of_range(),
    "hole": _seq_break(st.integers(1, 3)),
    "descending": _seq_break(-2),
    "repeated seq": _seq_break(-1),
    "reversed": windows(min_size=2).map(lambda w: w[::-1]),
    "defects that cancel out": _cancelling(),
}
"""Every kind of malformed ``events`` argument, by label; each value is a strategy."""


def _seqs_of(log):
    items = log if isinstance(log, (list, tuple)) else []  # never consume a generator here
    return [item[0] for item in items if isinstance(item, tuple) and item and type(item[0]) is int]


def _before(log):
    """Cursors at least two below the log's first seq (where it has one to go by), else any valid-typed one."""
    known = _seqs_of(log)
    if not known or min(known) - 2 < LAST_MIN:
        return st.integers(LAST_MIN, SEQ_MAX)
    return st.integers(LAST_MIN, min(known) - 2)


def _within(log):
    """Cursors from just before the log's first seq to its final one (where it has one to go by), else any."""
    known = [seq for seq in _seqs_of(log) if SEQ_MIN <= seq <= SEQ_MAX]
    if not known:
        return st.integers(LAST_MIN, SEQ_MAX)
    return st.integers(max(LAST_MIN, min(known) - 1), max(known))


_MALFORMATION_KINDS = st.sampled_from(sorted(LOG_MALFORMATIONS))


@st.composite
def malformed_logs(draw, kind=None):
    """``(events, last, limit)``: a malformed log of ``kind`` (a key of LOG_MALFORMATIONS; any if None).

    ``last`` stands before the log's first seq half the time (so that the
    order of the checks shows), else where a valid log would take it; the
    limit is valid. So only the malformation can make the call fail: an
    invalid ``last`` or ``limit`` beside it would fail it anyway and hide an
    implementation that takes the malformation (they have classes of their own).
    """
    log = draw(LOG_MALFORMATIONS[kind or draw(_MALFORMATION_KINDS)])
    cursor = _before(log) if draw(st.booleans()) else _within(log)
    return log, draw(cursor), draw(LIMITS_VALID)


# ---------------------------------------------------------------- ranges at their ends, together
#
# Every numeric range of the contract drawn at both of its ends and just
# outside them, in combination with the ends of the others (a log at the top
# of the seq range with the cursor at its end, say). Each draw records the
# ends it hit with ``event("range end: ...")``; RANGE_ENDS lists them all, and
# tests/test_strategy_reach.py checks that the dev profile's budget reaches
# each one. (arguments.py has the timeout's ends.)

_END = ["low", "high", "inside"]
_ENDS = st.sampled_from(_END)

RANGE_ENDS = [
    *(f"{name} {end}" for name in ("seq", "delta", "last", "limit", "log length") for end in ("low", "high")),
    "log at the top, cursor at its end",
    "log at the bottom, cursor before it",
    "log at the top, cursor just before it",
    *(f"{name} {side}" for name in ("seq", "delta", "last", "limit", "log length") for side in ("below", "above")),
    "frame length low", "frame length high", "frame length above",
    "timeout low", "timeout high", "timeout high (int)",
    "timeout below", "timeout below (negative)", "timeout above", "timeout above (int)",
]
"""Every label that the range-end strategies record, after ``range end: ``."""


def _record(labels):
    for label in sorted(labels):
        event(f"range end: {label}")
    return frozenset(labels)


CORNERS = ["log at the top, cursor at its end", "log at the bottom, cursor before it",
           "log at the top, cursor just before it"]
"""Where the ends of the seq range and of the cursor meet; ``replay_at_ends(corner)`` draws one."""


@st.composite
def replay_at_ends(draw, corner=None):
    """``(ends, events, last, limit)``: valid-typed replay input with each range at an end or inside.

    The log's length, its place in the seq range, its deltas, the cursor and
    the limit are each drawn at their low end, their high end or inside, all
    independently, so their ends meet; the cursor also stands at the log's
    end or just before its start as often as at -1 or at the top seq. ``ends``
    names the ends the draw hit (also recorded with ``event()``).
    A ``corner`` (one of CORNERS) fixes the log's place and the cursor there;
    the other ranges stay free.
    """
    n = {"low": 1, "high": LOG_MAX}.get(draw(_ENDS))
    n = n or draw(st.integers(2, LOG_MAX - 1))
    where = {None: None, CORNERS[1]: "low"}.get(corner, "high") or draw(_ENDS)
    first = {"low": SEQ_MIN, "high": SEQ_MAX - n + 1}.get(where)
    first = draw(st.integers(SEQ_MIN + 1, SEQ_MAX - n)) if first is None else first
    final = first + n - 1
    ds = _deltas(draw, n, ends=0.5)
    events = [(first + i, d) for i, d in enumerate(ds)]
    last = _pick(draw, [LAST_MIN, SEQ_MAX, final, first - 1, None])
    last = draw(st.integers(LAST_MIN, SEQ_MAX)) if last is None else last
    last = {CORNERS[0]: SEQ_MAX, CORNERS[1]: LAST_MIN, CORNERS[2]: first - 1}.get(corner, last)
    limit = {"low": LIMIT_MIN, "high": LIMIT_MAX}.get(draw(_ENDS))
    limit = limit or draw(st.integers(LIMIT_MIN + 1, LIMIT_MAX - 1))
    ends = {label for label, hit in [
        ("log length low", n == 1), ("log length high", n == LOG_MAX),
        ("seq low", first == SEQ_MIN), ("seq high", final == SEQ_MAX),
        ("delta low", DELTA_MIN in ds), ("delta high", DELTA_MAX in ds),
        ("last low", last == LAST_MIN), ("last high", last == SEQ_MAX),
        ("limit low", limit == LIMIT_MIN), ("limit high", limit == LIMIT_MAX),
        ("log at the top, cursor at its end", final == SEQ_MAX and last == SEQ_MAX),
        ("log at the bottom, cursor before it", first == SEQ_MIN and last == LAST_MIN),
        ("log at the top, cursor just before it", final == SEQ_MAX and last == first - 1),
    ] if hit}
    return _record(ends), events, last, limit


JUST_OUTSIDE = ["seq below", "seq above", "delta below", "delta above", "last below", "last above",
            "limit below", "limit above", "log length below", "log length above"]


_JUST_OUTSIDE, _AT_ENDS = st.sampled_from(JUST_OUTSIDE), replay_at_ends()  # built once


@st.composite
def replay_just_outside(draw, label=None):
    """``(label, events, last, limit)``: replay input at the ends of its ranges with ONE value one past its range.

    Built from ``replay_at_ends()``; the label (also an ``event()``) says
    which range was left (drawn from JUST_OUTSIDE unless given).
    """
    label = label or draw(_JUST_OUTSIDE)
    _, events, last, limit = draw(_AT_ENDS)
    if last > events[-1][0]:  # keep the cursor valid, so that only one thing is wrong
        last = events[-1][0]
    n = len(events)
    index = draw(st.integers(0, n - 1))
    if label == "seq below":
        events = [(SEQ_MIN - 1 + i, d) for i, (_, d) in enumerate(events)]
        last = LAST_MIN
    elif label == "seq above":
        events = [(SEQ_MAX + 2 - n + i, d) for i, (_, d) in enumerate(events)]
        last = events[0][0] - 1
    elif label in ("delta below", "delta above"):
        events[index] = (events[index][0], DELTA_MIN - 1 if label == "delta below" else DELTA_MAX + 1)
    elif label == "last below":
        last = LAST_MIN - 1
    elif label == "last above":
        last = SEQ_MAX + 1
    elif label == "limit below":
        limit = LIMIT_MIN - 1
    elif label == "limit above":
        limit = LIMIT_MAX + 1
    elif label == "log length below":
        events = []
    else:  # one item more than the log may hold, ending where the log ended (the top of the range too)
        final = max(events[-1][0], LOG_MAX)
        events = [(final - LOG_MAX + i, d) for i, d in enumerate(_deltas(draw, LOG_MAX + 1))]
        last = min(last, final)
    _record({label})
    return label, events, last, limit


FRAME_SHAPES = ["free", "shortest", "longest", "seq above", "delta below", "delta above", "frame length above"]
"""The shapes ``frames_at_ends(shape)`` draws: in range (free, the shortest, the longest frame) or one past."""


@st.composite
def frames_at_ends(draw, shape=None):
    """``(ends, line, expected)``: a frame with seq and delta each at an end or inside, or one past its range.

    ``expected`` is ``(seq, delta)`` for a valid frame and None where
    parse_line must raise ValueError: seq 2147483648, delta -1001 or 1001,
    or a line one byte over the 64-byte limit. ``shape`` (one of
    FRAME_SHAPES, drawn if not given): "free" draws seq and delta each at an
    end or inside; "shortest" is ``EVENT 0 0``, "longest" is the top seq
    with delta -1000 (23 bytes); the others are one past a range.
    """
    shape = shape or draw(st.sampled_from(FRAME_SHAPES))
    seq = {"low": SEQ_MIN, "high": SEQ_MAX}.get(draw(st.sampled_from(_END)))
    seq = draw(st.integers(SEQ_MIN + 1, SEQ_MAX - 1)) if seq is None else seq
    delta = {"low": DELTA_MIN, "high": DELTA_MAX}.get(draw(st.sampled_from(_END)))
    delta = draw(st.integers(DELTA_MIN + 1, DELTA_MAX - 1)) if delta is None else delta
    seq, delta = {"shortest": (SEQ_MIN, 0), "longest": (SEQ_MAX, DELTA_MIN)}.get(shape, (seq, delta))
    if shape == "seq above":
        seq = SEQ_MAX + 1
    elif shape in ("delta below", "delta above"):
        delta = DELTA_MIN - 1 if shape == "delta below" else DELTA_MAX + 1
    line = frame(seq, delta)
    if shape == "frame length above":
        # A frame-shaped line one byte over the limit: the fields padded with spaces.
        line = line[:-1] + b" " * (FRAME_MAX + 1 - len(line)) + b"\n"
    valid = shape in ("free", "shortest", "longest")
    ends = {label for label, hit in [
        ("seq low", seq == SEQ_MIN), ("seq high", seq == SEQ_MAX),
        ("delta low", delta == DELTA_MIN), ("delta high", delta == DELTA_MAX),
        ("frame length low", (seq, delta) == (SEQ_MIN, 0)),
        ("frame length high", (seq, delta) == (SEQ_MAX, DELTA_MIN)),
    ] if hit} if valid else {shape}
    return _record(ends), line, (seq, delta) if valid else None


# ---------------------------------------------------------------- line: the whole domain

LINE_KINDS = {
    "valid frame": valid_frames(),
    "bytes subclass": bytes_subclass_frames(),
    **{f"malformed: {label}": strategy for label, strategy in FRAME_MALFORMATIONS.items()},
    **{f"not bytes: {kind}": non_bytes_frames(kind) for kind in NON_BYTES_KINDS},
    **{f"at the ends: {shape}": frames_at_ends(shape).map(lambda drawn: drawn[1]) for shape in FRAME_SHAPES},
    "near miss": mutated_frames(),
    "frame-shaped bytes": frame_like_bytes(),
    "arbitrary bytes": st.binary(max_size=2 * FRAME_MAX),
}
"""The domain of ``parse_line``'s and ``consume_line``'s ``line``, one strategy per class of value."""


def lines(kind=None):
    """Any value a caller may pass as ``line``: ``kind`` (a key of LINE_KINDS), or all of them mixed."""
    return LINE_KINDS[kind] if kind else _ANY_LINE


_ANY_LINE = st.one_of(*(LINE_KINDS[kind] for kind in sorted(LINE_KINDS)))  # built once: cheaper than a flatmap


@functools.cache  # built once per kind: the tests draw it in every example
def line_calls(kind):
    """The lines of calls of ``parse_line`` in turn, the last of ``kind``: a line of any kind
    first, or none (each call stands alone); for the rest of a split frame, the frame's start
    first (what a parser that carries a fragment over to the next call would join)."""
    if kind == "malformed: the rest of a split frame":
        return split_frames()
    return st.tuples(st.lists(lines(), max_size=1), lines(kind)).map(lambda drawn: [*drawn[0], drawn[1]])


# ---------------------------------------------------------------- replay's arguments: the whole domain

REPLAY_KINDS = {
    **{f"valid log: cursor {relation}": valid_log_args(relation) for relation in RELATIONS},
    "valid log: any last": valid_log_args(last=LASTS),
    "valid log: any limit": valid_log_args(limit=LIMITS),
    **{f"malformed: {label}": malformed_logs(label) for label in LOG_MALFORMATIONS},
    **{f"at the ends: {corner or 'free'}": replay_at_ends(corner).map(lambda drawn: drawn[1:])
       for corner in [None, *CORNERS]},
    **{f"one past: {label}": replay_just_outside(label).map(lambda drawn: drawn[1:]) for label in JUST_OUTSIDE},
}
"""The domain of ``replay``'s ``(events, last, limit)``, one strategy per class of input (``group: class``)."""


def replay_args(kind=None):
    """Any ``(events, last, limit)`` a caller may pass: ``kind`` (a key of REPLAY_KINDS), or all of them mixed."""
    return REPLAY_KINDS[kind] if kind else st.sampled_from(sorted(REPLAY_KINDS)).flatmap(REPLAY_KINDS.__getitem__)
