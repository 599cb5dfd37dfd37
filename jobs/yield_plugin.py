"""pytest plugin for ``python -m jobs.bench --yield``: the profile in force, without shrinking.

Which tests catch a bug does not depend on how small its example shrinks,
and shrinking is most of a failing test's time; the explain phase re-runs
the example. Loaded with ``-p jobs.yield_plugin``; the root conftest.py has
loaded the profile by the time this runs, and the test modules, collected
afterwards, take their settings from it.
"""

import pytest
from hypothesis import Phase, settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    current = settings.get_current_profile_name()
    settings.register_profile(f"{current}-no-shrink", settings.get_profile(current),
                              phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile(f"{current}-no-shrink")
