"""Invalid ``timeout`` values for consume_session and run_client (SPEC.md decision 10).

A valid timeout is an ``int`` or ``float``, not ``bool``, with
``0 < timeout < inf``; NaN is invalid, and so is an int too large to become a
float. ``LISTED`` names every kind once (the brief's list and a few more);
``invalid_timeouts()`` adds generated ones around them, +inf made at run
time among them.
"""

import math
import sys

from hypothesis import event
from hypothesis import strategies as st

LISTED = [0, 0.0, -0.0, -1, -0.5, math.inf, -math.inf, math.nan, True, False, "1", None, 10**400, b"1", 1j]


# +inf made at run time: a new float object each time, not the math.inf object
# of LISTED, so that an implementation that tests ``seconds is not math.inf`` is caught.
RUN_TIME_INFINITIES = st.sampled_from(["inf", "1e309", "Infinity"]).map(float)


def invalid_timeouts():
    return (
        st.sampled_from(LISTED)
        | RUN_TIME_INFINITIES
        | st.integers(max_value=0)
        | st.floats(max_value=0.0)  # -inf included
        | st.integers(min_value=2**1024)  # too large to become a float
        | st.text(max_size=3)
    )


# ---------------------------------------------------------------- the ends of the range

# The valid range 0 < timeout < inf, at its ends: the smallest positive float,
# the largest finite float, and the largest int that still becomes a float.
VALID_ENDS = {"timeout low": 5e-324, "timeout high": sys.float_info.max, "timeout high (int)": int(sys.float_info.max)}
# One step outside: zero, the largest negative float, infinity, and the first
# int too large to become a float.
JUST_OUTSIDE = {"timeout below": 0.0, "timeout below (negative)": -5e-324, "timeout above": math.inf,
                "timeout above (int)": 2**1024}


def timeout_ends(valid=True):
    """``(label, timeout)`` at an end of the valid range (``valid``) or just outside it; records the label."""
    ends = VALID_ENDS if valid else JUST_OUTSIDE

    def record(label):
        event(f"range end: {label}")
        return label, ends[label]

    return st.sampled_from(sorted(ends)).map(record)
