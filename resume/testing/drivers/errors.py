"""The errors the tests raise into an implementation: from a hook it was handed (``fault``,
``before_ack``), or from a statement of its store (``statements``).

Every kind of BaseException a hook may raise (decision 5 and step 6), in four
classes, so that every run of a class meets its kind: Exceptions; a
ValueError, the steps' own error for a bad argument, which an implementation
must not take for its own (wrap it in one of its own, skip the rollback for
"its" argument check); the BaseExceptions that are not Exceptions (which
``except Exception`` lets through); and sqlite3's errors, a hook's that does
SQL of its own, which an implementation must not take for its own
statements' (a duplicate, a lock).
"""

import asyncio
import sqlite3


class HookFailure(Exception):
    """The test's own exception class, raised by a hook; it must come out as that very object."""


HOOK_ERRORS = {
    "raises an Exception": [HookFailure, RuntimeError, TypeError, OSError, ConnectionResetError, TimeoutError],
    "raises a ValueError": [ValueError, UnicodeError],
    "raises a BaseException": [KeyboardInterrupt, SystemExit, asyncio.CancelledError, GeneratorExit],
    "raises an sqlite3 error": [sqlite3.IntegrityError, sqlite3.OperationalError],
}

# A FAKE failure of a statement: any class but sqlite3's own (docs/DOMAINS.md, "Not drawn yet").
STATEMENT_ERRORS = {kind: errors for kind, errors in HOOK_ERRORS.items() if kind != "raises an sqlite3 error"}
