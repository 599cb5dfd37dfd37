"""Step 3, ``apply_event``: a property that the known-bug meta-test (quality/) showed was too rare.

Claim: a committed seq redelivered with ANOTHER delta raises Conflict, leaves
the state and the ledger exactly as they were, and leaves no transaction open.

Why a test of its own: the known bug "conflict-ignored" (a redelivery with
another delta taken for a duplicate) escaped the model-based step 3 test in
about 1 run in 10 under the ``dev`` profile (its random plans rarely revisit a
committed seq with a changed delta), and then only the state machine caught
it, after minutes of shrinking real processes. Here every example is such a
redelivery.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resume.testing import strategies as sts
from resume.testing.store import opened, read, temp_store_path


@st.composite
def redeliveries(draw):
    """Deltas committed as seqs 0..n-1, one of those seqs, and a different delta for it."""
    deltas = draw(st.lists(sts.deltas(), min_size=1, max_size=4))
    seq = draw(st.integers(0, len(deltas) - 1))
    other = draw(sts.deltas().filter(lambda delta: delta != deltas[seq]))
    return deltas, seq, other


@given(redeliveries())
def test_a_committed_seq_redelivered_with_another_delta_raises_conflict_and_changes_nothing(impl, case):
    deltas, seq, other = case
    with temp_store_path() as path, opened(impl, path) as con:
        for applied, delta in enumerate(deltas):
            assert impl.apply_event(con, applied, delta) is True
        before = read(path)
        with pytest.raises(impl.Conflict):
            impl.apply_event(con, seq, other)
        assert not con.in_transaction
        assert read(path) == before
