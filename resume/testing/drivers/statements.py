"""FAKE statement failures: a connection whose chosen statement raises instead of running.

A real disk fails at a system call, inside a statement SQLite has half run;
``test_crash_syscalls.py`` injects those, in a receiver process. To fail ANY
statement of ``open_store`` or ``apply_event`` with ANY kind of error, at a
moment a test draws, in the test's own process (and the statements of a
session, ``consume_session``'s, after a read it draws), the connection is made by a
factory of ours: ``failing_connections()`` wraps ``sqlite3.connect`` (decision
3: ``open_store`` connects with it) so that it makes a ``Failing``
connection, and ``arm(n, error)`` makes the n-th statement from then on
raise ``error`` before it runs, once. Statements are counted over
``execute``, ``executemany``, ``executescript`` and ``commit()``, the connection's and its
cursors'. A ROLLBACK is never failed and not counted: a failure of the undo
itself is no moment the contract speaks of.

The errors are ``ERRORS``: an Exception of no database's making, a
ValueError, or a BaseException that is not an Exception; the failure must propagate ("On
failure, roll back every change, let the original error propagate"; "If
initialisation fails, close the connection and let the error propagate").
Not sqlite3's own errors: an implementation may expect one and recover (a
probe whose OperationalError means "not set up yet"), as it could not from
a real failure but can from a FAKE that fails once.

An implementation that makes its connection otherwise (its own factory,
``from sqlite3 import connect`` taken at import) gets a plain connection,
which is never armed: the test then runs without the fake.
"""

import contextlib
import sqlite3

from resume.testing.drivers.errors import STATEMENT_ERRORS as ERRORS  # noqa: F401 - the classes a statement raises


class Failing(sqlite3.Connection):
    armed = None  # [statements to go, the error]
    fired = None  # the error, once it was raised

    def arm(self, n, error):
        self.armed, self.fired = [n, error], None

    def disarm(self):
        self.armed = None

    def count(self, sql):
        if self.armed is None or not isinstance(sql, str) or sql.lstrip()[:8].upper() == "ROLLBACK":
            return
        self.armed[0] -= 1
        if self.armed[0] == 0:
            self.fired, self.armed = self.armed[1], None
            raise self.fired

    def execute(self, sql, *args):
        self.count(sql)
        return super().execute(sql, *args)

    def executemany(self, sql, *args):
        self.count(sql)
        return super().executemany(sql, *args)

    def executescript(self, script):
        self.count(script)
        return super().executescript(script)

    def commit(self):  # a COMMIT by the method, not by SQL text
        self.count("COMMIT")
        return super().commit()

    def cursor(self, factory=None):
        return super().cursor(factory or _Cursor)


class _Cursor(sqlite3.Cursor):
    def execute(self, sql, *args):
        self.connection.count(sql)
        return super().execute(sql, *args)

    def executemany(self, sql, *args):
        self.connection.count(sql)
        return super().executemany(sql, *args)

    def executescript(self, script):
        self.connection.count(script)
        return super().executescript(script)


@contextlib.contextmanager
def failing_connections(n=None, error=None):
    """While inside, ``sqlite3.connect`` makes ``Failing`` connections (unless given a factory),
    each armed at once with ``(n, error)`` if given: a statement of ``open_store`` fails.
    Yields a list that holds the error once it was raised."""
    real = sqlite3.connect
    made, fired = [], []

    def connect(*args, **kwargs):
        if len(args) < 6:  # factory is connect's sixth parameter
            kwargs.setdefault("factory", Failing)
        con = real(*args, **kwargs)
        if n is not None and arm(con, n, error):
            made.append(con)
        return con

    sqlite3.connect = connect
    try:
        yield fired
    finally:
        sqlite3.connect = real
        fired.extend(con.fired for con in made if con.fired is not None)
        for con in made:
            con.disarm()


def arm(con, n, error):
    """Arm ``con`` if it is a ``Failing`` connection; False if it is not (the fake cannot reach it)."""
    if not isinstance(con, Failing):
        return False
    con.arm(n, error)
    return True


_FAR = 10**9  # statements to go: never reached


def statements_of(call, *args):
    """How many statements ``call(*args)`` runs on the connection it returns, as ``Failing``
    counts them (None if it is not a ``Failing`` connection); the connection is closed."""
    with failing_connections(_FAR, RuntimeError("never raised")):
        con = call(*args)
        left = con.armed[0] if isinstance(con, Failing) and con.armed else None
    con.close()
    return None if left is None else _FAR - left
