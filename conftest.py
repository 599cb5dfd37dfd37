"""Hypothesis profiles for the whole suite, and this project's pytest settings.

Profiles (``--hypothesis-profile NAME`` or ``HYPOTHESIS_PROFILE=NAME``):

* ``dev``  - the default: quick, randomized, with the local example database.
* ``ci``   - Hypothesis's built-in ``ci`` profile (derandomized, no database,
  ``print_blob``) with more examples and longer state machine runs. In force
  wherever ``CI`` is set (as in ``.ci/run``) and nothing else was chosen.
* ``fuzz`` - many examples, long runs, randomized, the database on: for a
  fuzzing job with a time budget.

The implementation under test (``--impl PATH``, else ``$RESUME_IMPL``, else
``resume/client.py``) and the ``impl`` fixture come from the ``resume`` pytest
plugin (``resume/testing/plugin/pytest_plugin.py``); tests never import ``resume.client``.
The example database comes from the environment (``resume/testing/plugin/example_database.py``).
"""

import os

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import InvalidArgument

from resume.testing.plugin import digests, example_database, order
from resume.testing.drivers import loader
from resume.testing.suite import PROFILES

# Hypothesis's database key of a test: its source cleaned once per test, not per case (see there).
digests.install()

# Real sockets, real SQLite files and real processes: a per-example deadline
# would only measure the machine, so none of the profiles has one. One
# counterexample per test, shrunk (the first failure is the verdict; shrinking
# a second kind of failure doubles the wait), and no explain phase: its line
# tracer runs through the whole shrink and it re-runs the failing example many
# times to say little that the model's report does not (it took 3-16 s of the
# time to catch a known bug under dev; without it 3.0 s for bool-is-int, was 12.9 s).
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], report_multiple_bugs=False,
               phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink])


# HYPOTHESIS_DATABASE (Redis) and HYPOTHESIS_GITHUB_ARTIFACT (the nightly fuzz
# job's artifact, read-only): see resume/testing/plugin/example_database.py. Under every
# profile, ci included (Hypothesis's ci has none): CI workers are meant to share.
if (_database := example_database.example_database(os.environ)) is not None:
    _COMMON["database"] = _database

# dev and fuzz start from Hypothesis's own default profile, not from whatever is
# the default now: where CI is set, that is Hypothesis's ci (derandomized, no
# database), and dev inherited it, so --hypothesis-seed meant nothing in CI.
settings.register_profile("dev", settings.get_profile("default"), max_examples=25, stateful_step_count=15,
                          **_COMMON)
settings.register_profile(
    "ci", settings.get_profile("ci"), max_examples=100, stateful_step_count=30, **_COMMON
)
settings.register_profile(
    "fuzz", settings.get_profile("default"), max_examples=2000, stateful_step_count=60, derandomize=False, print_blob=True, **_COMMON
)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
_PROFILE_ERROR = None
try:
    settings.load_profile(_PROFILE)
except InvalidArgument:  # said in one line when pytest starts (a UsageError), not as a traceback
    _PROFILE_ERROR = (f"HYPOTHESIS_PROFILE={_PROFILE} is not a profile of the suite: "
                      f"use one of {', '.join(PROFILES)} (or unset it)")


def pytest_configure(config):
    if _PROFILE_ERROR:
        raise pytest.UsageError(_PROFILE_ERROR)
    # These live here rather than in pyproject.toml: with a bare `--impl PATH`
    # pytest roots itself at PATH's folder before any plugin can say that the
    # option takes a value (pytest issue #8846) and does not read
    # pyproject.toml; this file is still loaded from the folder pytest runs in.
    # Warnings are errors, ResourceWarning (an unclosed socket or DB) included.
    config.addinivalue_line("filterwarnings", "error")
    # pytest-asyncio's settings (pyproject.toml) need no copy here: without
    # that file its defaults are the same (strict mode, one loop per test),
    # only the default fixture loop scope goes unstated (a deprecation notice
    # at start; the suite's one async fixture states its own loop scope). tests/test_async_config.py checks it.
    config.addinivalue_line("markers", "quality: the meta-tests of quality/ (run with -m quality)")


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent without it
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core and one more, as ``resume check`` has a lane more than cores.
    Many tests wait (a busy timeout, a silent peer, a receiver starting, a subprocess's check):
    the extra worker runs meanwhile. Figures: docs/BENCHMARKS.md, "The README's test command"."""
    return (os.cpu_count() or 1) + 1


def pytest_report_header(config):
    return [
        f"resume implementation: {loader.chosen_path()}",
        f"hypothesis profile in force: {settings.get_current_profile_name()}",
    ]


def pytest_collection_modifyitems(config, items):
    """Cheapest, highest-yield tests first: ``resume/testing/plugin/order.py`` says how and why."""
    order.sort(items, config.args)
