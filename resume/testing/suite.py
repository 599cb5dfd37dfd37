"""The suite's make-up, defined once: its Hypothesis profiles, its test files by step, its order.

conftest.py orders a plain ``pytest`` run by it and checks ``HYPOTHESIS_PROFILE``
against it; ``resume check`` (``grading.check``) runs and reports the suite
part by part in the same order; the meta-tests run a known bug's own step
first. Test files map to the contract's steps by name:
``properties/test_step<N>_*.py`` is step N; ``stateful/test_protocol.py`` is
the protocol as a whole (steps 2-7); the other files are the deeper levels.
Imports nothing but ``spec`` (no pytest, no Hypothesis).
"""

import pathlib
import re

from resume.testing import spec

# The checkout that holds conftest.py, properties/ and stateful/.
ROOT = spec.ROOT

# A property's first look is a test of its own, named after it with this suffix
# (``plugin.first_look``); the two are one test function wherever tests are counted.
FIRST_LOOK_SUFFIX = "_first_look"

# The Hypothesis profiles conftest.py registers for the suite.
PROFILES = ("dev", "ci", "fuzz")
# ``resume check`` bounds the shrinking of each failing test (seconds): the learner waits for the
# report, and a failing example whose every attempt waits out a bound makes each shrinking step
# cost that much. Handed to Hypothesis through SHRINK_VAR (plugin/shrink_bound.py); a report whose
# test reached it says so, from Hypothesis's own words then (SHRINK_STOPPED).
SHRINK_SECONDS = 5
SHRINK_VAR = "RESUME_SHRINK_SECONDS"
SHRINK_STOPPED = "stopped because it is making very slow progress"
# ``resume check`` stops a test function (a unit of ``grading.lanes``) still running after this
# many seconds, by profile: a call that never returns (a loop in the file under test holds the
# interpreter, and no bound of the test's own can cut it) would keep the learner waiting for ever.
# Under dev a unit takes 3 s at most here, 10 s failing and shrunk; under ci, 19 s (None: no bound).
UNIT_SECONDS = {"dev": 20, "ci": 300, "fuzz": None}
# The profiles whose examples do not depend on a seed (Hypothesis's ``derandomize``): a run
# under one prints no seed and its rerun line names none. tests/test_profiles keeps this true.
DERANDOMIZED = ("ci",)

STEP_NAMES = {
    1: "parse_line",
    2: "open_store, state",
    3: "apply_event",
    4: "replay",
    5: "consume_line",
    6: "consume_session",
    7: "run_client",
}
PROTOCOL = "protocol (steps 2-7)"
# The level beyond the lab (SPEC.md decision 18): its tests are marked POWER_MARK, wherever they are.
POWER = "power"
POWER_MARK = "power_loss"
DEEPER = "deeper levels (crashes, long runs, two receivers)"


def step_paths(root=ROOT):
    """``[(label, [paths])]`` in the suite's order: cheapest and highest-yield first.

    Steps 1-7, then the protocol machine (steps 2-7 together), then the
    deeper levels (crashes, long runs, foreign stores, two receivers), which
    cost the most and catch least that the steps have not caught already.
    The root conftest.py sorts a plain ``pytest`` run in this order too.
    """
    groups = []
    for step, name in STEP_NAMES.items():
        files = sorted((root / "properties").glob(f"test_step{step}_*.py"))
        groups.append((f"step {step}  {name}", files))
    stateful = root / "stateful"
    machines = sorted(stateful.glob("test_*.py")) + sorted(stateful.glob("*_test.py"))
    protocol = [path for path in machines if path.name == "test_protocol.py"]
    groups.append((PROTOCOL, protocol))
    deeper = [path for path in sorted((root / "properties").glob("test_*.py"))
              if not re.match(r"test_step[1-7]_", path.name)]
    deeper += [path for path in machines if path not in protocol]
    if deeper:
        groups.append((DEEPER, deeper))
    return groups


def suite_paths(root=ROOT, first_step=None):
    """Every test file of the suite: ``first_step``'s first, the state machines (slowest) last."""
    groups = step_paths(root)
    if first_step is not None:
        own = groups[first_step - 1]
        groups = [own] + [g for g in groups if g is not own]
    return [path for _, files in groups for path in files]


def test_function(nodeid):
    """``file::function`` of a pytest node id: its parameters dropped, a first look counted with
    its property. The one normaliser of every tool that counts which tests catch what."""
    return re.sub(r"\[.*\]$", "", nodeid).removesuffix(FIRST_LOOK_SUFFIX)


def step_of(path):
    """The step (1-7) whose tests the file at ``path`` holds, or None (the protocol, the deeper levels)."""
    found = re.match(r"test_step([1-7])_", pathlib.PurePath(path).name)
    return int(found[1]) if found else None


def part_key(label):
    """A part's short name, as ``--step`` takes it: "3" for "step 3  apply_event", "protocol", "deeper"."""
    words = label.split()
    return words[1] if words[0] == "step" else words[0]
