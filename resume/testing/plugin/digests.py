"""Hypothesis's database key of a test: its source cleaned once per test in a process, not per case.

Hypothesis keys a test's saved examples by a digest of its source
(``hypothesis.internal.reflection.function_digest``), computed anew each
time a test runs, so once for every case of a parametrized test; most of
its cost is ``_clean_source``, which tokenizes the source again to drop its
comments. Over the contract suite under ``dev`` (which a learner's check
runs too): 564 calls, 2.7 s of about 32 s of CPU; 1.2 s with the memo. It
is a pure function of the source text, so it is memoized on that text: the
key, the examples saved under it and the seed ``derandomize`` draws from it
stay exactly Hypothesis's own.

Installed by the suite's conftest.py only, not by the package's pytest plugin,
which is active in every pytest run of the environment. If a Hypothesis
release moves the function, ``install`` does nothing and the suite runs as it
would without it.
"""

import functools

from hypothesis.internal import reflection


def install():
    clean = getattr(reflection, "_clean_source", None)
    if clean is not None and not hasattr(clean, "cache_info"):
        reflection._clean_source = functools.lru_cache(maxsize=None)(clean)
