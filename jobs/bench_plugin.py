"""pytest plugin for ``python -m jobs.bench``: what each test ran, and how long it took.

Loaded with ``-p jobs.bench_plugin`` in a serial run,
with ``--hypothesis-show-statistics`` so that Hypothesis computes its
statistics. For every test it appends one JSON line to ``$BENCH_RESULTS``:
the node id, the seconds of its call phase, the Hypothesis test cases it ran
(all phases, from Hypothesis's statistics) and, for a state machine, the
rule steps it executed.

Steps are counted by wrapping ``RuleBasedStateMachine.check_invariants``:
Hypothesis calls it once when a machine starts and once after every step
(hypothesis/stateful.py, ``run_state_machine``), so the steps of a run are its
calls less one per machine. Neither statistics nor any public hook give the
step count; this wrapper is the smallest way to read it and changes nothing
the machine does.
"""

import json
import os

import pytest
from hypothesis.stateful import RuleBasedStateMachine

from jobs import hypothesis_stats

_counts = {"steps": 0, "machines": 0}


def _counting(check_invariants):
    def counted(self, *args, **kwargs):
        if self.__dict__.get("_bench_started"):
            _counts["steps"] += 1
        else:
            self.__dict__["_bench_started"] = True
            _counts["machines"] += 1
        return check_invariants(self, *args, **kwargs)

    return counted


def pytest_configure(config):
    RuleBasedStateMachine.check_invariants = _counting(RuleBasedStateMachine.check_invariants)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _counts.update(steps=0, machines=0)
    yield
    item.bench_counts = dict(_counts)


_durations = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "call":
        _durations[item.nodeid] = (report.duration, report.outcome)
    elif call.when == "teardown" and item.nodeid in _durations:
        _record(item, *_durations.pop(item.nodeid))
    return report


def _record(item, seconds, outcome):
    stats = hypothesis_stats.parse(getattr(item, "hypothesis_statistics", "")).get(item.nodeid)
    counts = getattr(item, "bench_counts", {"steps": 0, "machines": 0})
    record = {
        "nodeid": item.nodeid,
        "seconds": seconds,
        "outcome": outcome,
        "cases": stats.total_cases if stats else None,
        "steps": counts["steps"] if counts["machines"] else None,
        "machines": counts["machines"],
    }
    with open(os.environ["BENCH_RESULTS"], "a") as results:
        results.write(json.dumps(record) + "\n")
