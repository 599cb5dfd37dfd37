"""``tests/`` tests the project's own tools and ``resume/client.py``, whatever is chosen.

``--impl PATH`` and ``$RESUME_IMPL`` choose the file the CONTRACT's tests
(``properties/``, ``stateful/``) check. Here, for every test: the ``impl``
fixture and ``loader.chosen()`` are ``resume/client.py``, and ``RESUME_IMPL``
is removed from the environment, so neither the commands these tests call
in this process nor the processes they start see it. A test that means to
check another file names it (``--impl``, ``loader.load(path)``) or sets the
variable itself.
"""

import pytest

from resume.testing.drivers import loader


@pytest.fixture(scope="session")
def own_client():
    """The project's own implementation, ``resume/client.py``, loaded once."""
    return loader.load(loader.DEFAULT_PATH)


@pytest.fixture(autouse=True)
def _the_project_own_client(monkeypatch, own_client):
    monkeypatch.delenv(loader.ENV_VAR, raising=False)
    monkeypatch.setattr(loader, "_chosen", own_client)


@pytest.fixture
def impl(own_client):
    """Here, always ``resume/client.py`` (the plugin's fixture would give the chosen file)."""
    return own_client


@pytest.fixture
def one_lane(monkeypatch):
    """``resume check`` in one pytest process: for a check of a suite of a few lines
    (``tests/fake_suite.py``), where another process would cost more than its tests; how the
    lanes share the parts is tests/test_lanes.py's claim."""
    monkeypatch.setenv("RESUME_CHECK_JOBS", "1")
