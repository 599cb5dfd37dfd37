"""Properties of the harness's strategies: each reaches the values a known hole needed.

A strategy that never draws a value cannot catch the bug that value shows.
These were once separate "gap" tests beside the strategies (from mutation runs
and the known-bug meta-test); now each strategy draws the value itself, and
this file checks that it can (``hypothesis.find`` fails if no example does).
"""

import math
import unicodedata

from hypothesis import Phase, find, given, settings

from resume.testing import model
from resume.testing.strategies import values as sts
from resume.testing.strategies import arguments

# Generation only: the first value found will do, shrinking it would only cost time.
SEARCH = settings(max_examples=2000, database=None, phases=[Phase.generate])

# The four digit sets the strategy knew before it drew from every Unicode one.
OLD_SETS = {"FULLWIDTH", "ARABIC-INDIC", "DEVANAGARI", "MATHEMATICAL BOLD"}


def foreign_digits(line):
    return [c for c in line.decode("utf-8") if c.isdecimal() and not c.isascii()]


def test_a_foreign_digit_frame_always_holds_a_non_ascii_digit_and_is_no_frame():
    @settings(max_examples=200, database=None)
    @given(sts.foreign_digit_frames())
    def check(line):
        assert foreign_digits(line), line
        assert model.parse(line) is None

    check()


def test_foreign_digits_come_from_outside_the_four_old_sets():
    def from_a_new_set(line):
        return any(not any(unicodedata.name(c).startswith(s) for s in OLD_SETS) for c in foreign_digits(line))

    find(sts.foreign_digit_frames(), from_a_new_set, settings=SEARCH)


def test_invalid_timeouts_include_an_infinity_that_is_not_the_math_inf_object():
    find(arguments.timeouts("infinity"), lambda t: isinstance(t, float) and t == math.inf and t is not math.inf,
         settings=SEARCH)


def test_windows_reach_the_largest_log():
    find(sts.windows(), lambda window: len(window) == sts.LOG_MAX, settings=SEARCH)



def test_window_deltas_reach_both_ends_of_their_range():
    for end in (sts.DELTA_MIN, sts.DELTA_MAX):
        find(sts.windows(), lambda window, e=end: any(delta == e for _, delta in window), settings=SEARCH)
