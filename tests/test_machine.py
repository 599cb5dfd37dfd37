"""The async state machine base (``resume.testing.plugin.async_machine.AsyncRuleBasedStateMachine``).

Async rules, initializers and invariants run, on ONE loop per machine run
(what one step opens is there in the next); ``aclose()`` runs at teardown;
a task left running fails the run.
"""

import asyncio

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule, run_state_machine_as_test

from resume.testing.drivers.hygiene import TasksLeftRunning
from resume.testing.plugin.async_machine import AsyncRuleBasedStateMachine

QUICK = settings(max_examples=5, stateful_step_count=5, database=None, deadline=None)


class Counter(AsyncRuleBasedStateMachine):
    closed = []

    @initialize()
    async def start(self):
        self.queue = asyncio.Queue()
        self.loop_at_start = asyncio.get_running_loop()
        self.count = 0

    @rule(n=st.integers(0, 3))
    async def put(self, n):
        assert asyncio.get_running_loop() is self.loop_at_start, "one loop per machine run"
        for _ in range(n):
            await self.queue.put(1)
        self.count += n

    @rule()
    def plain_rule(self):
        self.count += 0

    @invariant()
    async def the_queue_holds_the_count(self):
        assert self.queue.qsize() == self.count

    async def aclose(self):
        Counter.closed.append(self.count)


def test_async_rules_run_on_one_loop_and_aclose_runs_at_teardown():
    Counter.closed.clear()
    run_state_machine_as_test(Counter, settings=QUICK)
    assert Counter.closed, "aclose() never ran"


class Leaky(AsyncRuleBasedStateMachine):
    @rule()
    async def start_a_task_and_forget_it(self):
        asyncio.get_running_loop().create_task(asyncio.sleep(60))


def test_a_task_left_running_fails_the_run():
    with pytest.raises(TasksLeftRunning, match="sleep"):
        run_state_machine_as_test(Leaky, settings=settings(QUICK, max_examples=1))


def test_the_hypothesis_internals_the_async_machine_leans_on_are_still_there():
    """``plugin/async_machine.py`` is the one module that uses Hypothesis's internals: the marker
    attributes its decorators hang on a method, and their records (dataclasses with a ``function``
    field), which it replaces for async methods (Hypothesis has no async rules: its issue #4107).
    If a Hypothesis release changes them, this fails here, by name, before any machine misbehaves."""
    import dataclasses

    from hypothesis import stateful

    for marker in ("RULE_MARKER", "INITIALIZE_RULE_MARKER", "INVARIANT_MARKER"):
        assert isinstance(getattr(stateful, marker, None), str), f"hypothesis.stateful.{marker} is gone"

    class Machine(stateful.RuleBasedStateMachine):
        @stateful.rule()
        def step(self):
            pass

        @stateful.invariant()
        def holds(self):
            pass

    for method, marker in ((Machine.step, stateful.RULE_MARKER), (Machine.holds, stateful.INVARIANT_MARKER)):
        record = getattr(method, marker)
        assert dataclasses.is_dataclass(record) and "function" in {f.name for f in dataclasses.fields(record)}
