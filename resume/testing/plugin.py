"""pytest plugin (entry point ``pytest11``): the ``--impl PATH`` option.

Declared by the package so that pytest knows ``--impl`` takes a value before
it reads the command line; otherwise ``pytest --impl PATH`` would take PATH
for a test path. The root ``conftest.py`` loads the chosen file.
"""

from resume.testing import loader


def pytest_addoption(parser):
    parser.addoption(
        "--impl",
        metavar="PATH",
        default=None,
        help=f"implementation file to check (default: ${loader.ENV_VAR}, else resume/client.py)",
    )
