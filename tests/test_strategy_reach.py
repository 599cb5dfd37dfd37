"""The range-end strategies reach every end of every range within the dev profile's budget.

SPEC.md's numeric ranges (seq, delta, last, limit, log length, frame length,
timeout) must be drawn at both ends and just outside, in combination
(``resume/testing/strategies.py``, "ranges at their ends, together";
``domains.py``). Each strategy says which ends a draw hit (the same labels it
records with ``event("range end: ...")``, which the fuzz summary lists). Here
each one is drawn as many times as a test of the ``dev`` profile draws it
(its ``max_examples``), derandomized so that the verdict is the same on
every run, and every end must have been reached. (Under random seeds: 30
dev runs of each strategy, measured on 2026-12-03, missed no end.)
"""

import pytest
from hypothesis import given, settings

from resume.testing import strategies as sts
from resume.testing import domains

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
    "timeout_ends(valid)": ([domains.timeout_ends().map(lambda pair: {pair[0]})], list(domains.TIMEOUT_ENDS)),
    "timeout_ends(invalid)": ([domains.timeout_ends(valid=False).map(lambda pair: {pair[0]})],
                              list(domains.TIMEOUTS_JUST_OUTSIDE)),
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
