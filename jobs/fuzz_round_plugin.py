"""pytest plugin for one round of the fuzz job (``python -m jobs.fuzz``): caps max_examples.

``fuzz.py`` loads it with ``-p jobs.fuzz_round_plugin`` and sets
``FUZZ_ROUND_MAX_EXAMPLES``. After conftest.py has loaded the ``fuzz``
profile, this re-registers ``fuzz`` with that cap (never above the profile's
own ``max_examples``) and loads it again, so every
test of the round (tests that scale their examples from the profile included)
runs at most that many examples, and a round's length can be chosen to fit the
job's time budget. The profile keeps its name, so code that asks which
profile is in force still reads ``fuzz``. Without the variable it does nothing.
"""

import os

import pytest
from hypothesis import settings


@pytest.hookimpl(trylast=True)  # after conftest.py's module-level load_profile
def pytest_configure(config):
    cap = os.environ.get("FUZZ_ROUND_MAX_EXAMPLES")
    if not cap:
        return
    name = settings.get_current_profile_name()
    profile = settings.get_profile(name)
    settings.register_profile(name, profile, max_examples=min(int(cap), profile.max_examples))
    settings.load_profile(name)
