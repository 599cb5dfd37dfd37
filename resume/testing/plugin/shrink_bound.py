"""The bound on shrinking that ``resume check`` asks for (``suite.SHRINK_VAR``), handed to Hypothesis.

Hypothesis stops shrinking a failure after ``MAX_SHRINKING_SECONDS`` (300 s)
and prints a warning that says it stopped (``suite.SHRINK_STOPPED``). The
constant lives in ``hypothesis.internal.conjecture.engine``, whose comment
says it is there to be monkeypatched ("make it monkeypatchable, for the rare
users who need to keep on shrinking"): an internal, so this is the one
module that touches it, and tests/test_shrink_bound.py fails loudly if
Hypothesis renames it or rewords the warning.
"""

import os

from resume.testing import suite


def apply(environ=os.environ):
    """Set Hypothesis's shrinking bound from ``environ``, if it names one."""
    seconds = environ.get(suite.SHRINK_VAR)
    if seconds:
        from hypothesis.internal.conjecture import engine

        engine.MAX_SHRINKING_SECONDS = float(seconds)
