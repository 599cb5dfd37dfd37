"""The range-end strategies reach every end of every range within the dev profile's budget.

SPEC.md's numeric ranges (seq, delta, last, limit, log length, frame length,
timeout) must be drawn at both ends and just outside, in combination
(``resume/testing/strategies/values.py``, "ranges at their ends, together";
``arguments.py``). Each strategy says which ends a draw hit (the same labels it
records with ``event("range end: ...")``, which the fuzz summary lists). Here
each one is drawn as many times as a test of the ``dev`` profile draws it
(its ``max_examples``), derandomized so that the verdict is the same on
every run, and every end must have been reached. (Under random seeds: 30
dev runs of each strategy, measured on 2026-12-03, missed no end.)
"""

import collections

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resume.testing.strategies import values as sts
from resume.testing.strategies import arguments
from resume.testing import model

IN_RANGE = [label for label in sts.RANGE_ENDS
            if not label.startswith(("timeout", "frame length"))
            and not label.endswith((" below", " above"))]
OUTSIDE_REPLAY = [f"{name} {side}" for name in ("seq", "delta", "last", "limit", "log length")
                  for side in ("below", "above")]
FRAME_ENDS = ["seq low", "seq high", "delta low", "delta high", "frame length low", "frame length high",
              "seq above", "delta below", "delta above", "frame length above"]

# name -> ([strategies, each drawn with the dev budget: one per parametrization
# of the property test that uses it], the labels they must reach together).
CASES = {
    "replay_at_ends": ([sts.replay_at_ends(corner).map(lambda args: args[0]) for corner in [None, *sts.CORNERS]],
                       IN_RANGE),
    "replay_just_outside": ([sts.replay_just_outside(label).map(lambda args: {args[0]})
                             for label in sts.JUST_OUTSIDE], OUTSIDE_REPLAY),
    "frames_at_ends": ([sts.frames_at_ends(shape).map(lambda args: args[0]) for shape in sts.FRAME_SHAPES],
                       FRAME_ENDS),
    "timeout_ends(valid)": ([arguments.timeout_ends().map(lambda pair: {pair[0]})], list(arguments.TIMEOUT_ENDS)),
    "timeout_ends(invalid)": ([arguments.timeout_ends(valid=False).map(lambda pair: {pair[0]})],
                              list(arguments.TIMEOUTS_JUST_OUTSIDE)),
}


def dev_budget():
    return settings.get_profile("dev").max_examples


def reached(strategy, **options):
    """The labels that one test's worth of examples of ``strategy`` hit."""
    seen = set()

    @settings(max_examples=dev_budget(), database=None, **options)
    @given(strategy)
    def draw(labels):
        seen.update(labels)

    draw()
    return seen


def test_every_label_is_one_of_range_ends():
    for _, expected in CASES.values():
        assert set(expected) <= set(sts.RANGE_ENDS)


@pytest.mark.parametrize("name", CASES)
def test_each_end_is_reached_within_the_dev_budget(name):
    strategies, expected = CASES[name]
    seen = set().union(*(reached(strategy, derandomize=True) for strategy in strategies))
    missing = set(expected) - seen
    assert not missing, f"{name}: {dev_budget()} examples never reach {sorted(missing)}"


def test_every_field_with_every_malformation_in_the_first_example_at_both_ends_within_the_budget():
    """The product field x malformation (step 1's second property): each example of a malformation's
    run draws a line per field, so every cell is drawn by the first example (N = 1); and within the
    run's budget the text goes in at each end of each field (before it and after it)."""
    budget = max(3, dev_budget() // 2)  # test_every_field_with_each_malformation's own
    for malformation in model.FIELD_MALFORMATIONS:
        examples = []
        cells = st.tuples(*(sts.malformed_field(field, malformation).map(lambda drawn, field=field: (field, drawn[0]))
                            for field in model.FRAME_FIELDS))

        @settings(max_examples=budget, database=None, derandomize=True)
        @given(cells)
        def draw(drawn):
            examples.append(drawn)

        draw()
        assert [field for field, _ in examples[0]] == list(model.FRAME_FIELDS)
        if malformation in model.FIELD_REPLACEMENTS:
            continue
        places = collections.defaultdict(set)
        for drawn in examples:
            for field, place in drawn:
                places[field].add(place)
        missing = {field: {"before", "after"} - places[field] for field in model.FRAME_FIELDS
                   if not {"before", "after"} <= places[field]}
        assert not missing, f"{malformation}: {budget} examples never put the text at these ends: {missing}"
