"""The grammar oracle (``resume.testing.model.parse``) at every boundary of SPEC.md's frame.

The oracle judges every implementation's ``parse_line``, so it must be right
first: a fixed example on each side of each rule (a bound, a separator, a
digit, a sign, the line's end, the length, the type).
"""

import pytest

from resume.testing.model import parse


class Line(bytes):
    """A bytes subclass: a frame too (SPEC.md decision 13)."""


ACCEPTED = [
    (b"EVENT 0 0\n", (0, 0)),  # the smallest seq, delta zero
    (b"EVENT 2147483647 0\n", (2147483647, 0)),  # the largest seq
    (b"EVENT 1 1000\n", (1, 1000)),  # the largest delta
    (b"EVENT 1 -1000\n", (1, -1000)),  # the smallest delta
    (b"EVENT 10 -1\n", (10, -1)),  # a minus sign on a non-zero delta
    (b"EVENT 2147483647 -1000\n", (2147483647, -1000)),  # the longest frame: 23 bytes
    (Line(b"EVENT 3 4\n"), (3, 4)),
]

REJECTED = [
    b"EVENT 2147483648 0\n",  # seq one past its bound
    b"EVENT 0 1001\n",  # delta one past each bound
    b"EVENT 0 -1001\n",
    b"EVENT -1 0\n",  # no sign on a seq
    b"EVENT 0 -0\n",  # no minus zero
    b"EVENT 01 0\n",  # no leading zero
    b"EVENT 1 00\n",
    b"EVENT 1 -01\n",
    b"EVENT +1 0\n",  # no plus sign
    b"EVENT 1 +2\n",
    b"EVENT 1_0 2\n",  # nothing int() tolerates
    b"EVENT 0x10 2\n",
    b"EVENT 1 2\r\n",  # the line's end: LF only, exactly one, last
    b"EVENT 1 2",
    b"EVENT 1 2\n\n",
    b"\nEVENT 1 2\n",
    b"event 1 2\n",  # the keyword, exactly
    b"EVENTS 1 2\n",
    b"EVENT  1 2\n",  # exactly one space between fields
    b"EVENT 1 2 \n",
    b" EVENT 1 2\n",
    b"EVENT\t1 2\n",
    b"EVENT 1\n",  # exactly three fields
    b"EVENT 1 2 3\n",
    b"\n",
    b"",
    b"EVENT 1 2\x00\n",
    "EVENT \uff11 2\n".encode(),  # ASCII digits only
    "EVENT 1 \u0661\n".encode(),
    b"EVENT 1 2\xff\n",
    b"EVENT " + b"1" * 58 + b"\n",  # 65 bytes with the LF: too long whatever it holds
    "EVENT 1 2\n",  # not bytes
    bytearray(b"EVENT 1 2\n"),
    memoryview(b"EVENT 1 2\n"),
    None,
]


@pytest.mark.parametrize("line,pair", ACCEPTED, ids=repr)
def test_a_frame_gives_its_pair(line, pair):
    assert parse(line) == pair


def _id(line):
    """A stable test id: a memoryview's repr holds its address, which differs between xdist workers."""
    return f"memoryview({bytes(line)!r})" if isinstance(line, memoryview) else repr(line)


@pytest.mark.parametrize("line", REJECTED, ids=_id)
def test_anything_else_gives_none(line):
    assert parse(line) is None


def test_the_length_bound_counts_the_final_lf():
    # No valid frame is near 64 bytes, so the bound shows only on lines
    # malformed anyway; the oracle must still say None on both sides of it.
    assert len(b"EVENT " + b"1" * 58 + b"\n") == 65
    assert parse(b"EVENT " + b"1" * 57 + b"\n") is None  # 64 bytes: out of range, not too long
