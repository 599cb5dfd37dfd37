"""The verification kit: ``resume.testing``. Its folders are its parts.

* ``spec`` and ``model``: the contract. ``spec`` reads SPEC.md's sentences;
  ``model`` predicts the outcome of every call (Rule 1: every rule lives there).
* ``strategies/``: what the tests draw. ``values`` (frames, events, event
  logs), ``arguments`` (the whole domain of each argument, valid or not),
  ``foreign_stores`` (stores other writers made), ``runs`` (a publisher's runs).
* ``drivers/``: how the tests reach an implementation and its world.
  ``loader`` (the file under test), ``peers`` (sockets), ``receiver`` and
  ``crash`` (a receiver process, killed), ``power`` (a power cut),
  ``statements`` (a statement that fails), ``tasks``, ``busy``, ``leaks``,
  ``hygiene``, ``store_files`` (the one reader of a store file).
* ``plugin/``: the pytest and Hypothesis side. ``pytest_plugin`` (the
  ``impl`` fixture, ``--impl``), ``first_look``, ``async_machine`` (async
  rules for state machines), ``example_database``.
* ``suite``: the suite's make-up (its test files by step, its order, its
  Hypothesis profiles), defined once for conftest.py and the grader.
* ``grading/``: ``resume check``. ``check`` (the suite's parts, run and
  graded), ``runner`` and ``report_plugin`` (one pytest run, recorded),
  ``lanes`` and ``lanes_plugin`` (the parts shared out among a few pytest
  processes), ``verdict`` (the report).

Imports flow one way: everything may import ``spec`` and ``model``;
``drivers`` import no ``strategies``; ``strategies`` and ``drivers`` never
import ``plugin`` or ``grading``; ``grading`` never imports Hypothesis
(``tests/test_import_direction.py``). The implementation under test is never
imported by name: ``drivers.loader`` loads the file that ``--impl`` /
``RESUME_IMPL`` names. Needs the ``test`` extra (Hypothesis, pytest,
pytest-asyncio).
"""
