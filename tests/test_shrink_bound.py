"""``resume check``'s bound on shrinking (``suite.SHRINK_SECONDS``), handed to Hypothesis by
``resume.testing.plugin.shrink_bound``: it stops a slow shrink, and the report says so.

It leans on an internal of Hypothesis (``engine.MAX_SHRINKING_SECONDS``) and on the words of its
warning: the first test fails loudly when either changes.
"""

import inspect

from hypothesis.internal.conjecture import engine

from resume.testing import suite
from resume.testing.drivers import loader
from resume.testing.grading import check, verdict

SLOW = '''\
import time
from hypothesis import given, note, settings, strategies as st


@settings(database=None, max_examples=200)
@given(st.lists(st.integers(0, 1000), min_size=5))
def test_slow_to_shrink(impl, xs):
    note(f"sum({xs})")
    time.sleep(0.02)  # every attempt waits, as one that waits out a bound does
    assert sum(xs) < 500
'''


def test_hypothesis_still_has_the_bound_and_says_so_when_it_stops():
    assert isinstance(engine.MAX_SHRINKING_SECONDS, (int, float))
    assert suite.SHRINK_STOPPED in " ".join(inspect.getsource(engine).replace('"', "").split())


def test_a_shrink_cut_at_the_bound_is_reported_as_such(tmp_path):
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "test_slow.py").write_text(SLOW)
    outcome = check.run_suite(loader.DEFAULT_PATH, [tmp_path / "test_slow.py"], root=tmp_path,
                              extra_env={suite.SHRINK_VAR: "0.3"})
    assert outcome.status == "failed", outcome.output[-2000:]
    found = verdict.from_outcome("1", "step 1", outcome, loader.DEFAULT_PATH, 0)
    assert found.shrink_cut, outcome.output[-2000:]
    assert "a smaller one may exist" in verdict.render(found)
