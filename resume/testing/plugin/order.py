"""The order the suite's tests run in: ``sort(items, args)``, conftest.py's collection hook.

Cheapest, highest-yield tests first, whatever the files are called.

1. every first look (``first_look.py``): each step's model property, its explicit examples and
   a few generated ones;
2. the steps' other tests, step by step: most cost milliseconds;
3. the steps' long searches, step by step: the model properties (the tests that have a first
   look) with the rest of their budgets;
4. the protocol machine and the deeper levels;

in the order of ``suite.step_paths`` (which ``resume check`` follows too), then the project's
own tool tests. Measured on the known bugs with random seeds (docs/BENCHMARKS.md), the looks
stop 136 of 163 runs with ``-x``, the steps' other tests 17, the long searches 1: they come last
of the steps. A run given test files or test ids keeps the order it was given after its first
looks (the known-bug meta-test puts the bug's own step first; ``resume check`` runs a step per
process). The meta-test's forks (quality/forks_plugin.py) sort each bug's tests here too.
"""

import pathlib

from resume.testing import suite
from resume.testing.plugin.first_look import SUFFIX, is_first_look


def sort(items, args):
    """Sort ``items`` (pytest's, in collection order) in place, for a run given ``args``."""
    if any(pathlib.Path(arg.split("::", 1)[0]).is_file() for arg in args):
        items.sort(key=lambda item: not is_first_look(item))
        return
    rank = {path.resolve(): index for index, path in enumerate(suite.suite_paths())}
    steps = {path.resolve() for label, files in suite.step_paths() if label.startswith("step ") for path in files}
    searches = {(item.path, item.originalname.removesuffix(SUFFIX)) for item in items if is_first_look(item)}

    def key(item):
        path = item.path.resolve()
        if is_first_look(item):
            group = 0
        elif path in steps:
            group = 2 if (item.path, getattr(item, "originalname", item.name)) in searches else 1
        else:
            group = 3
        return (path not in rank, group, rank.get(path, len(rank)))

    items.sort(key=key)  # stable: a file's own order is kept within each class
