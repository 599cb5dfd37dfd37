"""Async rules for Hypothesis state machines: ``AsyncRuleBasedStateMachine``.

Hypothesis has no async rules (its issue #4107 proposes them and does not
ship them). With this base class a machine's ``@rule``, ``@initialize`` and
``@invariant`` methods may be ``async def``; ``@precondition`` and bundles work
as usual. Every coroutine of one machine run goes through ONE event loop (an
``asyncio.Runner`` made with the machine), so that servers, sockets and tasks
made in one step live on into the next. A plain ``def`` rule still runs as a
plain method and may call ``self.run(coro)``.

At teardown the machine's own ``async def aclose()`` runs on the loop first
(close what the run opened: servers, connections). Then any task still
pending on the loop is cancelled, and the run FAILS (``TasksLeftRunning``,
shared with ``resume.testing.drivers.hygiene``), naming the tasks: a task
that outlives its machine run is a leak of the system under test or of the
test, and either would go unnoticed otherwise.

    class Machine(AsyncRuleBasedStateMachine):
        @initialize()
        async def start(self):
            self.server = await asyncio.start_server(...)

        @rule(n=st.integers(0, 3))
        async def send(self, n):
            ...

        async def aclose(self):
            self.server.close()
            await self.server.wait_closed()
"""

import asyncio
import dataclasses
import functools
import inspect

from hypothesis.stateful import INITIALIZE_RULE_MARKER, INVARIANT_MARKER, RULE_MARKER, RuleBasedStateMachine

from resume.testing.drivers.hygiene import TasksLeftRunning, cancel_left_running  # noqa: F401 (TasksLeftRunning: raised here, importable from here)

_MARKERS = (RULE_MARKER, INITIALIZE_RULE_MARKER, INVARIANT_MARKER)


def _on_the_loop(coroutine_function):
    """A plain method that runs ``coroutine_function`` on its machine's loop."""

    @functools.wraps(coroutine_function)
    def run_it(self, *args, **kwargs):
        return self.run(coroutine_function(self, *args, **kwargs))

    del run_it.__wrapped__  # so that nothing takes the wrapper for a coroutine function
    return run_it


class AsyncRuleBasedStateMachine(RuleBasedStateMachine):
    """A ``RuleBasedStateMachine`` whose rules, initializers and invariants may be async."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The decorators hang a Rule / Invariant record on the method; Hypothesis
        # calls ``record.function(machine, **arguments)``. Give the records of
        # async methods a plain function that runs the coroutine on the loop.
        for _name, member in inspect.getmembers(cls):
            for marker in _MARKERS:
                record = getattr(member, marker, None)
                if record is not None and inspect.iscoroutinefunction(record.function):
                    setattr(member, marker, dataclasses.replace(record, function=_on_the_loop(record.function)))

    def __init__(self):
        super().__init__()
        self._runner = asyncio.Runner()

    @property
    def loop(self):
        """The machine run's event loop."""
        return self._runner.get_loop()

    def run(self, coro):
        """Run ``coro`` to its end on the machine's loop and return its result."""
        return self._runner.run(coro)

    async def aclose(self):
        """Override: close what the run opened, on the loop. Runs first at teardown."""

    def teardown(self):
        try:
            self.run(self.aclose())
            left = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
            problem = self.run(cancel_left_running(left, "the machine run"))
            if problem is not None:
                raise problem
        finally:
            self._runner.close()
