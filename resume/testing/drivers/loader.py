"""Load an implementation of the contract from a file path, and remember the choice.

The verification suite never imports ``resume.client`` by name: it checks
whichever file ``pytest --impl PATH`` (or ``RESUME_IMPL``) names, loaded here
by its path. Subprocesses that the suite starts load the same path.
"""

import contextlib
import importlib.util
import os
import pathlib
import signal
import sys
import tempfile
import threading
import time

from resume.testing import model

DEFAULT_PATH = pathlib.Path(__file__).resolve().parents[2] / "client.py"
ENV_VAR = "RESUME_IMPL"
IMPORT_LIMIT = 10.0  # seconds a file may take to be imported (its top level)
MODULE_PREFIX = "resume_impl_under_test_"  # the name of the module loaded from the file, its hash after

# The public names of SPEC.md (the model's); a file lacking one of them is not an implementation.
PUBLIC_NAMES = tuple(name for names in model.PUBLIC_NAMES.values() for name in names)


class ImplError(Exception):
    """The chosen implementation file is missing, broken or incomplete."""


def resolve(path=None):
    """The path to use: ``path``, else ``$RESUME_IMPL``, else ``resume/client.py``."""
    chosen = path or os.environ.get(ENV_VAR) or DEFAULT_PATH
    return pathlib.Path(chosen).expanduser().resolve()


def load(path, required=PUBLIC_NAMES):
    """Import the file at ``path`` as a fresh module and check that it has the ``required`` public names.

    Every way a file can be unusable raises ImplError with ONE line that names
    the file, says what is wrong and what to do: missing, a folder, not a
    ``.py`` file, empty, a syntax error, an error or ``sys.exit()`` while it
    is imported, an import still running after ``IMPORT_LIMIT`` seconds (in
    the main thread, where a timer can interrupt it), ``required`` names
    missing (``required=()``: a file half written, checked step by step;
    ``missing(module)`` says what it lacks). The file's top level runs in a
    scratch folder of its own, removed after: a store it opens there (a
    stray ``open_store("store.db")``) lands neither in the learner's folder
    nor in the checkout. No bytecode is written: the file's folder gets no
    ``__pycache__``. What
    the file prints when it is imported goes to stderr: it is shown, and
    never mixed into a command's own output (a report, ``last=L total=T``).
    """
    path = pathlib.Path(path)
    if path.is_dir():
        raise ImplError(f"{path} is a folder: give the path of your implementation file")
    if not path.is_file():
        raise ImplError(f"implementation file not found: {path}; give the path of your implementation (a client.py)")
    if path.suffix != ".py":
        raise ImplError(f"{path} is not a .py file: Python imports only a file whose name "
                        "ends in .py; rename it (client.py, say)")
    try:
        source = path.read_bytes()
    except OSError as error:
        raise ImplError(f"cannot read {path}: {error.strerror}") from None
    if not source.strip():
        raise ImplError(f"{path} is empty: write the public names of SPEC.md in it "
                        "(resume/client.py is one implementation)")
    # A name of its own, so that the file never shadows or reuses another module.
    name = f"{MODULE_PREFIX}{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    # No __pycache__ beside the learner's file: their folder is left as found.
    writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        with _bounded(IMPORT_LIMIT), contextlib.redirect_stdout(sys.stderr), _scratch_folder():
            spec.loader.exec_module(module)
    except _TooLong:
        del sys.modules[name]
        raise ImplError(f"{path} was still being imported after {IMPORT_LIMIT:g} s: does it "
                        "wait or loop at its top level? move that code into a function") from None
    except SyntaxError as error:
        del sys.modules[name]
        raise ImplError(f"{path}, line {error.lineno}: SyntaxError: {error.msg}; "
                        "fix it and try again") from None
    except SystemExit as error:  # sys.exit() at import would end the caller
        del sys.modules[name]
        raise ImplError(f"{path} calls sys.exit({error.code!r}) when it is imported: "
                        "the suite imports it; move that call under "
                        "`if __name__ == \"__main__\":`") from None
    except Exception as error:
        del sys.modules[name]
        first = (str(error).splitlines() or [""])[0]
        raise ImplError(f"cannot import {path}: {type(error).__name__}: {first}; "
                        "fix it and try again") from error
    finally:
        sys.dont_write_bytecode = writes_bytecode
    lacking = missing(module, required)
    if lacking:
        del sys.modules[name]
        raise ImplError(f"{path} lacks the public names: {', '.join(lacking)}; "
                        "define them as SPEC.md says")
    return module


def missing(module, names=PUBLIC_NAMES):
    """The ones of ``names`` that ``module`` does not define."""
    return [name for name in names if not hasattr(module, name)]


@contextlib.contextmanager
def _scratch_folder():
    """The working folder, for the file's top level: a new empty one, removed after. In the main
    thread only: the working folder is the whole process's, and a thread must not move it under
    the others (the grader's own tests check files from threads)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with tempfile.TemporaryDirectory(prefix="resume-import-") as scratch, contextlib.chdir(scratch):
        yield


class _TooLong(BaseException):
    """The import ran past its limit (a BaseException: ``except Exception`` in the file lets it through)."""


@contextlib.contextmanager
def _bounded(seconds):
    """Raise ``_TooLong`` in the main thread after ``seconds``; elsewhere, no bound."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def too_long(signum, frame):
        raise _TooLong()

    started = time.monotonic()
    handler = signal.signal(signal.SIGALRM, too_long)
    other_timer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, handler)
        if other_timer:  # someone else's timer: give it back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(other_timer - (time.monotonic() - started), 0.001))


_chosen = None
_named = None  # the path ``name()`` remembered, loaded at the first ``chosen()``
# Set by ``resume check`` for its lanes: the file is named when pytest starts and loaded after the
# tests are collected (``grading.lanes_plugin``), so nothing it does can change what is collected.
LATE_VAR = "RESUME_IMPL_LATE"


def choose(path=None):
    """Load and remember the implementation the suite checks; return the module. A file half
    written is taken: each test needs the names of its own step (the plugin says which are missing)."""
    global _chosen
    module = load(resolve(path), required=())
    _chosen = module
    return module


def name(path=None):
    """Remember the implementation the suite checks, to be loaded at the first ``chosen()``."""
    global _named
    _named = resolve(path)


def chosen():
    """The module chosen by ``choose()`` (loading the one ``name()`` named, or the default, if none was)."""
    return _chosen if _chosen is not None else choose(_named)


def chosen_path():
    """The file of the chosen module, for subprocesses that must load the same one (a file
    ``name()`` named is not loaded for this)."""
    if _chosen is None and _named is not None:
        return _named
    return pathlib.Path(chosen().__file__)
