"""Step 1, ``parse_line``: exactly one complete frame is accepted, everything else is ValueError.

Claims:
* every valid ``(seq, delta)`` round-trips through its frame, also as a bytes subclass;
* every kind of malformed frame, and every value that is not bytes, raises ValueError;
* parse_line agrees with the strict grammar oracle (``resume.testing.grammar``:
  no regex, no int() tolerance) on near-misses, frame-shaped bytes and
  arbitrary bytes: what the grammar rejects is rejected, what it accepts
  gives the same tuple.

Not observable here, by design: the 64-byte limit on its own. The longest
valid frame is 23 bytes, so every longer line is also malformed in another
way, and an implementation that parses strictly but skips the length check
returns exactly what a correct one returns (see ``over_length_frames``).
"""

import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from resume.testing import grammar
from resume.testing import strategies as sts


@given(sts.events())
def test_every_valid_event_round_trips_through_its_frame(impl, pair):
    line = sts.frame(*pair)
    assert impl.parse_line(line) == pair
    assert isinstance(impl.parse_line(line), tuple)


@given(sts.bytes_subclass_frames())
def test_a_bytes_subclass_instance_is_accepted(impl, line):
    assert impl.parse_line(line) == grammar.parse(bytes(line))


@pytest.mark.parametrize("kind", sorted(sts.FRAME_MALFORMATIONS))
@given(data=st.data())
def test_each_kind_of_malformed_frame_raises_value_error(impl, kind, data):
    line = data.draw(sts.FRAME_MALFORMATIONS[kind], label="line")
    with pytest.raises(ValueError):
        impl.parse_line(line)


ONE_PAST_EACH_BOUND = [("seq", sts.SEQ_MIN - 1), ("seq", sts.SEQ_MAX + 1), ("delta", sts.DELTA_MIN - 1), ("delta", sts.DELTA_MAX + 1)]


@pytest.mark.parametrize("field,value", ONE_PAST_EACH_BOUND)
@given(pair=sts.events())
def test_a_number_one_past_its_bound_raises_value_error(impl, field, value, pair):
    # Every bound in every run (the mixed "out of range" kind may miss one in 25 examples).
    seq, delta = (value, pair[1]) if field == "seq" else (pair[0], value)
    with pytest.raises(ValueError):
        impl.parse_line(b"EVENT %d %d\n" % (seq, delta))


# One kind per run, so that each gets the whole budget (a mix left bytearray
# undrawn in about one dev run in 100).
@pytest.mark.parametrize("kind", sts.NON_BYTES_KINDS)
@given(data=st.data())
def test_a_value_that_is_not_bytes_raises_value_error(impl, kind, data):
    value = data.draw(sts.non_bytes_frames(kind))
    with pytest.raises(ValueError):
        impl.parse_line(value)


@given(st.one_of(sts.valid_frames(), sts.invalid_frames(), sts.mutated_frames(), sts.frame_like_bytes()))
def test_parse_line_agrees_with_a_strict_grammar_on_near_misses(impl, line):
    check_against_grammar(impl, line)


@given(st.binary(max_size=2 * sts.FRAME_MAX))
def test_parse_line_agrees_with_a_strict_grammar_on_arbitrary_bytes(impl, line):
    check_against_grammar(impl, line)


def check_against_grammar(impl, line):
    expected = grammar.parse(line)
    event("grammar accepts" if expected is not None else "grammar rejects")
    note(f"grammar: {expected!r}")
    if expected is None:
        with pytest.raises(ValueError):
            impl.parse_line(line)
    else:
        assert impl.parse_line(line) == expected


@pytest.mark.parametrize("shape", sts.FRAME_SHAPES)
@given(data=st.data())
def test_at_and_one_past_the_ends_of_seq_delta_and_frame_length_parse_line_is_exact(impl, shape, data):
    """seq 0 and 2147483647, delta -1000 and 1000, the shortest and the longest frame are parsed;
    seq 2147483648, delta +-1001 and a frame-shaped line of 65 bytes are ValueError."""
    _, line, expected = data.draw(sts.frames_at_ends(shape))
    if expected is None:
        with pytest.raises(ValueError):
            impl.parse_line(line)
    else:
        assert impl.parse_line(line) == expected
