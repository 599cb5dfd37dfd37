"""Load the file under check in a process of its own, and say what it defines: ``probe(path, room)``.

``resume check`` never imports the file it grades (issue 57): whatever the file does when it is
imported (``os._exit(0)``, an ``atexit`` hook, a thread that never ends, a changed file descriptor
1) happens in this child, and the command that reads the child's answer stays the learner's. The
child (``python -m resume.testing.grading.probe PATH ANSWER``) loads the file as the suite does
(``loader.load``: the same one-line errors, the import bounded to ``loader.IMPORT_LIMIT``), writes
its answer (the public names it defines, how long the import took) to ANSWER, and ends at once
with ``os._exit``: what it printed is dropped, and a thread the file started does not hold it. It runs in the check's room, in a
session of its own, ended with its whole process group.
"""

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

from resume.testing.drivers import loader
from resume.testing.grading import runner

SLOW_IMPORT = 3.0  # seconds: an import slower than this is named (every receiver process imports the file)
GRACE = 5.0  # seconds past loader.IMPORT_LIMIT before the child is killed (it ignored the alarm)


class Probe:
    """What the child found: ``names`` (the public names the file defines) or ``error`` (one line)."""

    def __init__(self, names=None, error=None, seconds=0.0):
        self.names, self.error, self.seconds = names, error, seconds

    def missing(self, names=loader.PUBLIC_NAMES):
        """The ones of ``names`` the file does not define (``loader.missing``'s answer)."""
        return [name for name in names if name not in self.names]


def probe(path, room):
    """Load ``path`` in a child process run in ``room`` (``grading.room``); return a ``Probe``."""
    answer = pathlib.Path(room.env["TMPDIR"]) / "probe.json"
    path = pathlib.Path(path).resolve()
    env = {**runner.environment(), **room.env}
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", __name__, str(path), str(answer)], cwd=room.work,
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        process.wait(timeout=loader.IMPORT_LIMIT + GRACE)
    except subprocess.TimeoutExpired:
        pass
    finally:  # the child's whole group: a process the file started goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    try:
        found = json.loads(answer.read_text())
    except (OSError, ValueError):
        found = None
    if found is None:
        if process.returncode == -signal.SIGKILL and time.monotonic() - started >= loader.IMPORT_LIMIT:
            return Probe(error=f"{path} was still being imported after {loader.IMPORT_LIMIT:g} s: does it "
                               "wait or loop at its top level? move that code into a function")
        return Probe(error=f"{path} ended the process that imported it ({runner.exit_status(process.returncode)}): "
                           "move the code at its top level that ends it under `if __name__ == \"__main__\":`")
    if found.get("error"):
        return Probe(error=found["error"])
    if found["seconds"] > SLOW_IMPORT:
        return Probe(error=f"importing {path} takes {found['seconds']:.1f} s: the check imports it in every "
                           "process it starts; move the slow code at its top level into a function")
    return Probe(names=found["names"], seconds=found["seconds"])


def main(path, answer):
    started = time.monotonic()
    try:
        module = loader.load(path, required=())
    except loader.ImplError as error:
        found = {"error": str(error)}
    else:
        found = {"names": [name for name in loader.PUBLIC_NAMES if hasattr(module, name)],
                 "seconds": time.monotonic() - started}
    pathlib.Path(answer).write_text(json.dumps(found))
    os._exit(0)  # now: neither a thread the file started nor an atexit hook of its own runs


if __name__ == "__main__":
    main(*sys.argv[1:3])
