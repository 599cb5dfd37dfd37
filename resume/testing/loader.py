"""Load an implementation of the contract from a file path, and remember the choice.

The verification suite never imports ``resume.client`` by name: it checks
whichever file ``pytest --impl PATH`` (or ``RESUME_IMPL``) names, loaded here
by its path. Subprocesses that the suite starts load the same path.
"""

import importlib.util
import os
import pathlib
import sys

DEFAULT_PATH = pathlib.Path(__file__).resolve().parent.parent / "client.py"
ENV_VAR = "RESUME_IMPL"

# The public names of SPEC.md; a file lacking one of them is not an implementation.
PUBLIC_NAMES = (
    "parse_line",
    "open_store",
    "state",
    "Gap",
    "Conflict",
    "apply_event",
    "ResyncRequired",
    "replay",
    "consume_line",
    "consume_session",
    "run_client",
)


class ImplError(Exception):
    """The chosen implementation file is missing, broken or incomplete."""


def resolve(path=None):
    """The path to use: ``path``, else ``$RESUME_IMPL``, else ``resume/client.py``."""
    chosen = path or os.environ.get(ENV_VAR) or DEFAULT_PATH
    return pathlib.Path(chosen).expanduser().resolve()


def load(path):
    """Import the file at ``path`` as a fresh module and check its public names."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ImplError(f"implementation file not found: {path}")
    # A name of its own, so that the file never shadows or reuses another module.
    name = f"resume_impl_under_test_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise ImplError(f"cannot import {path}: {type(error).__name__}: {error}") from error
    missing = [n for n in PUBLIC_NAMES if not hasattr(module, n)]
    if missing:
        raise ImplError(f"{path} lacks the public names: {', '.join(missing)}")
    return module


_chosen = None


def choose(path=None):
    """Load and remember the implementation the suite checks; return the module."""
    global _chosen
    module = load(resolve(path))
    _chosen = module
    return module


def chosen():
    """The module chosen by ``choose()`` (loading the default if none was)."""
    return _chosen if _chosen is not None else choose()


def chosen_path():
    """The file of the chosen module, for subprocesses that must load the same one."""
    return pathlib.Path(chosen().__file__)
