"""Step 1, ``parse_line``: exactly one complete frame is accepted, everything else is ValueError.

One claim, drawn over the whole domain of ``line`` (``strategies.LINE_KINDS``,
one run per class so that every class gets the whole budget): what
``parse_line(line)`` returns or raises is what the model predicts
(``model.parse_line``: the strict grammar, no regex, no ``int()`` tolerance).
Valid frames at both ends of each range, one past each, every kind of
malformation, values that are not bytes, near misses and arbitrary bytes;
each after a call with a line of any kind, or none, and the rest of a split
frame after its start (``strategies.line_calls``): each call stands alone.

A second claim draws a composition whole: every field of the frame
(``model.FRAME_FIELDS``) with every malformation (``model.FIELD_MALFORMATIONS``),
each example a line per field, so that a parser that checks one field for a
malformation and not another is caught in every run, not by chance.

Not observable here, by design: the 64-byte limit on its own. The longest
valid frame is 23 bytes, so every longer line is also malformed in another
way, and an implementation that parses strictly but skips the length check
returns exactly what a correct one returns (see ``over_length_frames``).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resume.testing import model
from resume.testing.plugin.first_look import first_look, searching
from resume.testing.strategies import values as sts


@pytest.mark.parametrize("kind", sorted(sts.LINE_KINDS))
@searching(max(5, settings.default.max_examples // 2))  # 42 runs, each over one class
@given(data=st.data())
def test_parse_line_does_what_the_model_predicts(impl, kind, data):
    calls = data.draw(sts.line_calls(kind), label="lines, one call each")
    for number, line in enumerate(calls):
        after = f" after parse_line({calls[number - 1]!r})" if number else ""
        model.expect(model.outcome_of(impl, impl.parse_line, line), model.parse_line(line, calls[number - 1] if number else None),
                     f"parse_line({line!r}){after}")


test_parse_line_does_what_the_model_predicts_first_look = first_look(
    test_parse_line_does_what_the_model_predicts,
    data=st.data())




@pytest.mark.parametrize("malformation", sorted(model.FIELD_MALFORMATIONS))
@settings(max_examples=max(3, settings.default.max_examples // 2))  # 16 runs, each example every field
@given(data=st.data())
def test_every_field_with_each_malformation(impl, malformation, data):
    for line in data.draw(sts.every_field_malformed(malformation), label="a line per field of the frame"):
        model.expect(model.outcome_of(impl, impl.parse_line, line), model.parse_line(line), f"parse_line({line!r})")
