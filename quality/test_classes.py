"""Every class the strategies draw has a known bug, or a stated reason why none (quality/classes.py).

Static: that each bug is CAUGHT is the meta-test's check (test_known_bugs.py);
that each class's own run catches it, ``python -m quality.classes``.
"""

import pytest

from quality import bugs as known
from quality import classes

pytestmark = pytest.mark.quality


def test_every_class_drawn_has_a_bug_or_a_reason_and_nothing_else_is_listed():
    for parameter, kinds in classes.drawn().items():
        listed = set(classes.EXPOSES.get(parameter, {})) | {k for p, k in classes.NO_BUG if p == parameter}
        assert set(kinds) == listed, f"{parameter}: drawn but not listed {set(kinds) - listed}, " \
                                     f"listed but not drawn {listed - set(kinds)}"
        both = set(classes.EXPOSES.get(parameter, {})) & {k for p, k in classes.NO_BUG if p == parameter}
        assert not both, f"{parameter}: both a bug and a reason for none: {both}"


def test_every_bug_named_is_a_known_bug():
    ids = {bug.id for bug in known.BUGS}
    named = {bug for bugs in classes.EXPOSES.values() for bug in bugs.values()}
    assert not named - ids, f"not in quality/bugs.py: {named - ids}"


def test_every_class_run_alone_names_a_test_that_exists():
    """``python -m quality.classes`` runs each class by its node id: each must still be collected."""
    import subprocess
    import sys

    nodes = {classes.NODES[parameter].format(kind) for parameter, kind, _ in classes.claims()}
    files = sorted({node.split("::")[0] for node in nodes})
    done = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *files],
                          cwd=classes.ROOT, capture_output=True, text=True, timeout=120)
    collected = set(done.stdout.splitlines())
    assert not nodes - collected, f"no such test: {sorted(nodes - collected)}"
