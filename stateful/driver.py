"""Drive coroutines from the synchronous rules of a Hypothesis state machine.

Hypothesis has no native async rules or state machines (its issue #4107), and
this project does not use pytest-asyncio. A machine's rules are plain
methods, so each one hands its coroutine to ``AsyncDriver.run``.

All of a machine run's coroutines go through ONE ``asyncio.Runner``, made
when the machine starts and closed in its ``teardown``: the publisher's
listening socket and its session tasks belong to that runner's event loop and
must live across steps. ``asyncio.run`` per step would make a new loop each
time and strand them.
"""

import asyncio


class AsyncDriver:
    """One event loop for one machine run: ``run(coro)`` from sync code, ``close()`` once."""

    def __init__(self):
        self._runner = asyncio.Runner()

    def run(self, coro):
        """Run ``coro`` to its end on the machine's loop and return its result."""
        return self._runner.run(coro)

    def close(self):
        """Cancel whatever is left on the loop, then close it (idempotent)."""
        self._runner.close()
