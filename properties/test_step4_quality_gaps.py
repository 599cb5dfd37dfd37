"""Step 4, ``replay``: boundaries that the mutation run of quality/ showed untested.

Claims:
* a log of exactly 128 events (the largest allowed) is accepted: replay
  returns the next ``limit`` events after the cursor, as for a shorter log;
* a cursor one below the smallest (``last == -2``) is ValueError, even where
  the log starts so late that ResyncRequired would otherwise apply.

Why a file of its own: cosmic-ray's mutants ``LOG_MAX > len(events)`` (128
items refused) and ``LAST_MIN = -2`` survived the rest of the suite, whose
random logs rarely reach exactly 128 items and whose bad cursors are not -2.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resume.testing import strategies as sts


@given(first=sts.seqs(max_value=sts.SEQ_MAX - (sts.LOG_MAX - 1)), data=st.data())
def test_a_log_of_exactly_128_events_is_accepted(impl, first, data):
    log = [(first + i, 0) for i in range(sts.LOG_MAX)]
    last = data.draw(st.integers(first - 1, first + sts.LOG_MAX - 1), label="last")
    limit = data.draw(st.integers(sts.LIMIT_MIN, sts.LIMIT_MAX), label="limit")
    start = last - first + 1
    assert impl.replay(log, last, limit) == log[start:start + limit]


@given(first=sts.seqs(), delta=sts.deltas(), limit=st.integers(sts.LIMIT_MIN, sts.LIMIT_MAX))
def test_a_cursor_below_minus_one_is_value_error_even_where_resync_would_apply(impl, first, delta, limit):
    with pytest.raises(ValueError):
        impl.replay([(first, delta)], sts.LAST_MIN - 1, limit)


@given(first=sts.seqs(), delta=sts.deltas(), limit=st.sampled_from([sts.LIMIT_MIN - 1, sts.LIMIT_MAX + 1]))
def test_a_limit_one_past_either_bound_is_value_error(impl, first, delta, limit):
    # A surviving mutant took LIMIT_MAX for 17.
    with pytest.raises(ValueError):
        impl.replay([(first, delta)], first - 1, limit)
