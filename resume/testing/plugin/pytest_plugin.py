"""pytest plugin (entry point ``pytest11``): the implementation under test.

* ``--impl PATH``: the file to check (else ``$RESUME_IMPL``, else
  ``resume/client.py``). Declared by the package so that pytest knows the
  option takes a value before it reads the command line; otherwise
  ``pytest --impl PATH`` would take PATH for a test path.
* A file named by ``--impl`` or ``RESUME_IMPL`` is loaded when pytest starts,
  so a missing or broken file is one usage error, not a failure per test.
* The ``impl`` fixture hands the loaded module to the tests, and the tests
  hand it on: to the state machines (``run_state_machine_as_test(lambda:
  Machine(impl))``, as ``zarr.testing`` does) and, as its file, to the
  receiver processes they start. Nothing in the suite asks for a global.

Installed with the package, the plugin is active in every pytest run of the
environment; it loads nothing unless a test asks for ``impl`` or a file is
named, so other projects are not touched.
"""

import os
import pathlib

import pytest

from resume.testing import model, spec, suite
from resume.testing.drivers import loader
from resume.testing.plugin import shrink_bound

# The checkout that holds the suite: where the suite keeps its own files.
ROOT = spec.ROOT
STORAGE_VAR = "HYPOTHESIS_STORAGE_DIRECTORY"


def _named(config):
    return getattr(config.known_args_namespace, "impl", None) or os.environ.get(loader.ENV_VAR)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """With a file named (``--impl``, ``RESUME_IMPL``), Hypothesis keeps its files in the suite's folder.

    Hypothesis writes ``.hypothesis/`` in the folder pytest runs in: a learner
    who runs ``pytest --impl=client.py`` from their own folder would find it
    there (issue 19: their folder is left as found). Set before the suite's
    conftest.py builds its example database, and inherited by the processes
    the suite starts. A storage directory the user chose is kept.
    """
    if _named(early_config) and not os.environ.get(STORAGE_VAR):
        os.environ[STORAGE_VAR] = str(ROOT / ".hypothesis")


def pytest_addoption(parser):
    parser.addoption(
        "--impl",
        metavar="PATH",
        default=None,
        help=f"implementation file to check (default: ${loader.ENV_VAR}, else resume/client.py)",
    )


def pytest_configure(config):
    # The level beyond the lab (SPEC.md decision 18): ``resume check`` runs
    # the lab with ``-m "not power_loss"``, which --strict-markers refuses for
    # a marker nobody registered (before that level's tests exist, say).
    config.addinivalue_line("markers", "power_loss: the level beyond the lab, an ACK that survives "
                                       "a power cut (SPEC.md decision 18); not part of the lab's verdict")
    _keep_the_cache_out_of_the_learners_folder(config)
    shrink_bound.apply()
    named = config.getoption("impl", default=None)
    if named or os.environ.get(loader.ENV_VAR):
        try:
            loader.name(named) if os.environ.get(loader.LATE_VAR) else loader.choose(named)
        except loader.ImplError as error:
            raise pytest.UsageError(f"--impl / {loader.ENV_VAR}: {error}") from None


@pytest.fixture(scope="session")
def impl():
    """The implementation under test: the module loaded from --impl / RESUME_IMPL."""
    return loader.chosen()


@pytest.fixture(autouse=True)
def _written(request):
    """A test that uses ``impl`` fails at once, in one line, where its step is not written yet:
    the public names its step builds on (``model.names_for``) are not all defined. A file half
    written is checked step by step; its other steps fail here, not deep inside a test."""
    if "impl" not in request.fixturenames:
        return
    step = suite.step_of(request.node.path)
    lacking = loader.missing(loader.chosen(), model.names_for(step))
    if lacking:
        where = f"step {step}" if step else "this part of the suite"
        pytest.fail(f"not written yet: define {', '.join(lacking)} ({where} needs them; see SPEC.md)", pytrace=False)


def _keep_the_cache_out_of_the_learners_folder(config):
    """pytest's ``.pytest_cache`` goes to the suite's folder, never to the named file's.

    pytest writes it under its root folder, which is the file's folder when
    ``--impl PATH`` is written with a space (pytest issue #8846) or when
    pytest runs there with no test path. The cache plugin has made
    ``config.cache`` by now (its own pytest_configure runs first); it writes
    nothing before the run ends.
    """
    named = _named(config)
    cache = getattr(config, "cache", None)
    if not named or cache is None or not hasattr(cache, "_cachedir"):
        return
    folder = pathlib.Path(named).expanduser().resolve().parent
    if pathlib.Path(cache._cachedir).resolve().is_relative_to(folder) and not ROOT.is_relative_to(folder):
        cache._cachedir = ROOT / ".pytest_cache"


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A KeyboardInterrupt or SystemExit that a test's own hook raised (``model.drawn_error``)
    and that reaches pytest escaped the call under test (from a task of the implementation's
    own, say) instead of propagating from it: that test fails; the run goes on. A Ctrl-C of
    the user's is not marked, and still ends the run."""
    outcome = yield
    error = outcome.exception
    from resume.testing import model  # here: the plugin loads in every pytest run of the environment

    if isinstance(error, (KeyboardInterrupt, SystemExit)) and model.is_drawn(error):
        outcome.force_exception(model.Mismatch(
            "the call under test, whose hook raised it", f"raises that very {type(error).__name__}({str(error)!r})",
            "it escaped the event loop (raised in a task of the implementation's own?) and never came out of the call",
            clause="S6.propagate"))  # "Errors and cancellation propagate": out of the call

