"""The strict frame grammar of SPEC.md, as an oracle: ``parse(line)``.

``parse(line)`` reads a line byte by byte, with no regex and none of int()'s
tolerance (``+``, ``_``, spaces, non-ASCII digits), and returns
``(seq, delta)`` for exactly the lines SPEC.md calls a frame, None for every
other value. Tests compare an implementation's ``parse_line`` with it;
``tests/test_grammar.py`` checks the oracle itself at every boundary.

A frame: ``bytes`` (subclasses too), at most 64 bytes with the LF, one line
ending in LF, ``EVENT``, seq and delta separated by exactly one space, ASCII
digits, no leading zero but ``0`` itself, a minus sign only on a non-zero
delta, seq 0..2147483647, delta -1000..1000 (SPEC.md step 1 and decision 2).
"""

from resume.testing.strategies import DELTA_MAX, DELTA_MIN, FRAME_MAX, SEQ_MAX, SEQ_MIN

_DIGITS = frozenset(b"0123456789")


def parse(line):
    """``(seq, delta)`` if ``line`` is a frame, else None."""
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
    if not (SEQ_MIN <= seq <= SEQ_MAX and DELTA_MIN <= delta <= DELTA_MAX):
        return None
    return seq, delta


def _natural(text):
    """The value of a run of ASCII digits without a leading zero, else None."""
    if not text or not set(text) <= _DIGITS or (len(text) > 1 and text[0] == ord("0")):
        return None
    return int(text)
