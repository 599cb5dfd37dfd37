"""Hypothesis strategies for the contract's values: frames, events, event logs.

One module, reused by ``properties/`` and ``stateful/``. Every strategy here
is built so that Hypothesis shrinks towards small, readable values: seqs and
deltas shrink to 0, a malformed frame shrinks to a near-miss of a good one.

The bounds are SPEC.md's; they are restated here (not imported from the
implementation) because the suite checks the implementation against them.
"""

from hypothesis import strategies as st

SEQ_MIN, SEQ_MAX = 0, 2147483647
DELTA_MIN, DELTA_MAX = -1000, 1000
LAST_MIN = -1
LIMIT_MIN, LIMIT_MAX = 1, 16
LOG_MAX = 128
FRAME_MAX = 64


def seqs(min_value=SEQ_MIN, max_value=SEQ_MAX):
    """Valid seqs, biased to the boundaries 0, 1 and 2147483647."""
    edges = [v for v in (0, 1, SEQ_MAX - 1, SEQ_MAX) if min_value <= v <= max_value]
    return st.integers(min_value, max_value) | st.sampled_from(edges) if edges else st.integers(min_value, max_value)


def deltas():
    """Valid deltas, biased to 0, +-1 and +-1000."""
    return st.integers(DELTA_MIN, DELTA_MAX) | st.sampled_from([0, 1, -1, DELTA_MAX, DELTA_MIN])


def frame(seq, delta):
    """The one valid frame for ``(seq, delta)``."""
    return b"EVENT %d %d\n" % (seq, delta)


def events():
    """Valid ``(seq, delta)`` pairs."""
    return st.tuples(seqs(), deltas())
