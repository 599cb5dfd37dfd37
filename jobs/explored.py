"""What a fuzz run explored, read from Hypothesis's observability output.

With ``HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY`` set, Hypothesis writes one
JSON line per test case to ``<storage>/observed/<date>_testcases.jsonl``
(``<storage>`` is ``$HYPOTHESIS_STORAGE_DIRECTORY`` or ``.hypothesis``): the
test (``property``), its ``features`` (the ``event()`` labels it recorded)
and its ``representation`` (for a state machine: the rule steps it ran,
``state.RULE(...)`` one a line). ``python -m jobs.fuzz --observe`` turns it
on for its rounds and prints ``summary()`` of the test cases its rounds
wrote; ``python -m jobs.explored [FILE...]`` prints it for any such file.

Per test it shows how many test cases ran, how often each rule ran (steps,
and in how many runs), how often each event label was drawn (malformation
classes, fault kinds, cursor relations...), and which were NEVER reached:
for every family of labels the test drew from (``FAMILIES``: the labels a
strategy of resume/testing/strategies/values.py can draw; a state machine's rules),
the ones with no test case at all. The ends of the contract's ranges
(``strategies.RANGE_ENDS``) are counted over the whole run: those no test reached.

Hypothesis marks the format experimental: this module is the one place to
adapt if it changes.
"""

import argparse
import collections
import glob
import importlib
import inspect
import json
import os
import pathlib
import re
import sys

from hypothesis.stateful import RuleBasedStateMachine

from resume.testing.strategies import values as strategies

# Events Hypothesis records by itself (filters retried, runs given up): not the suite's mix.
HYPOTHESIS_OWN_EVENTS = ("Retried draw from", "gave up because", "Aborted test because")
_STEP = re.compile(r"^(?:\w+ = )?state\.(\w+)\(", re.MULTILINE)


def _families():
    """``{prefix: [labels]}``: every label a strategy can record with ``event()``, by family."""
    # None today: each class of a parameter's domain is a test id of its own
    # (LINE_KINDS, REPLAY_KINDS, TIMEOUT_CLASSES, HOOK_KINDS), so a class no
    # example reached cannot hide in a mix. A strategy that mixes classes again
    # and records each with event() names its family here.
    return {}


# The ends of the contract's ranges are spread over several tests (each draws
# some), so they are checked over the whole run rather than test by test.
RANGE_END = "range end: "
RANGE_ENDS = list(getattr(strategies, "RANGE_ENDS", []))


FAMILIES = _families()


def observation_files(storage=None):
    storage = storage or os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or ".hypothesis"
    return sorted(glob.glob(os.path.join(storage, "observed", "*_testcases.jsonl")))


class Explored:
    """What the test cases of one test drew."""

    def __init__(self, name):
        self.name = name
        self.cases = 0
        self.failed = 0
        self.events = collections.Counter()  # label -> test cases that recorded it
        self.steps = collections.Counter()  # rule -> steps run
        self.runs_with = collections.Counter()  # rule -> runs in which it ran

    def add(self, record):
        self.cases += 1
        self.failed += record.get("status") == "failed"
        # Hypothesis's own notes (a filter retried, a run given up) are not the suite's mix.
        self.events.update(label for label in (record.get("features") or {})
                           if not label.startswith(HYPOTHESIS_OWN_EVENTS))
        steps = _STEP.findall(record.get("representation") or "")
        self.steps.update(steps)
        self.runs_with.update(set(steps))


def read(paths, since=0.0):
    """``{test: Explored}`` from observation files; only test cases started at ``since`` or later."""
    found = {}
    for path in paths:
        with open(path) as file:
            for line in file:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:  # a line cut off by a killed round
                    continue
                if record.get("type") != "test_case" or record.get("run_start", 0) < since:
                    continue
                name = record.get("property", "?")
                found.setdefault(name, Explored(name)).add(record)
    return found


def machine_rules(test_name):
    """The rule names of the state machines in a test's module (``path.py::Class::runTest``)."""
    path = test_name.split("::")[0]
    if not path.endswith(".py"):
        return []
    module_name = path[:-3].replace("/", ".")
    try:
        module = importlib.import_module(module_name)
    except Exception:  # not importable from here: no rules to expect
        return []
    names = set()
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if issubclass(cls, RuleBasedStateMachine) and cls.__module__ == module.__name__:
            # Hypothesis marks each rule (and initialize rule) with these
            # attributes; it finds a machine's rules the same way.
            for _, member in inspect.getmembers(cls):
                for marker in ("hypothesis_stateful_rule", "hypothesis_stateful_initialize_rule"):
                    if (rule := getattr(member, marker, None)) is not None:
                        names.add(rule.function.__name__)
    return sorted(names)


def never_reached(explored):
    """``{family: [labels]}`` the test drew from but never reached, rules included."""
    missing = {}
    for prefix, labels in FAMILIES.items():
        seen = {label[len(prefix):] for label in explored.events if label.startswith(prefix)}
        if seen:
            missing[prefix.strip(": ")] = [label for label in labels if label not in seen]
    if explored.steps:
        rules = machine_rules(explored.name)
        missing["rule"] = [rule for rule in rules if rule not in explored.steps]
    return {family: labels for family, labels in missing.items() if labels}


def summary(found):
    """The text: per test, cases, rules, event labels, and what was never reached."""
    lines = [f"[explored] {sum(e.cases for e in found.values())} observed test cases over {len(found)} tests"]
    for name in sorted(found):
        explored = found[name]
        lines.append(f"{explored.cases:>7} cases {explored.failed:>4} failed  {name}")
        if explored.steps:
            lines.append("          rules (steps / runs): " + "; ".join(
                f"{rule} {count}/{explored.runs_with[rule]}" for rule, count in explored.steps.most_common()))
        if explored.events:
            lines.append("          events (cases): " + "; ".join(
                f"{label} {count}" for label, count in explored.events.most_common()))
        for family, labels in never_reached(explored).items():
            lines.append(f"          NEVER reached ({family}): {', '.join(labels)}")
    seen = {label[len(RANGE_END):] for e in found.values() for label in e.events if label.startswith(RANGE_END)}
    if seen:
        missing = [label for label in RANGE_ENDS if label not in seen]
        lines.append(f"[explored] range ends reached: {len(RANGE_ENDS) - len(missing)}/{len(RANGE_ENDS)}"
                     + (f"; NEVER reached by any test: {', '.join(missing)}" if missing else ""))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="observation files (default: the storage directory's)")
    options = parser.parse_args(argv)
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    print(summary(read(options.files or observation_files())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
