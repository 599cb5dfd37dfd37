"""Run ``run_client`` in a separate process, so that a test can kill it for real.

The process is ``python -m resume consume ...``: it loads the implementation
from a file path (the same one the suite checks) and, with
``crash_before_ack=SEQ``, sends itself SIGKILL from ``before_ack`` when event
SEQ is committed and not yet ACKed: the window the lab's final check targets.
No ``finally`` runs in the killed process.
"""

import asyncio
import os
import pathlib
import sys

KILLED = -9  # returncode of a process ended by SIGKILL

_PACKAGE_PARENT = str(pathlib.Path(__file__).resolve().parents[2])


def command(impl_path, port, db_path, *, timeout=5.0, crash_before_ack=None, host="127.0.0.1"):
    """The argv of a receiver process."""
    argv = [sys.executable, "-m", "resume", "consume", host, str(port), str(db_path),
            "--impl", str(impl_path), "--timeout", str(timeout)]
    if crash_before_ack is not None:
        argv += ["--crash-before-ack", str(crash_before_ack)]
    return argv


def environment():
    """The environment of a receiver: this one, with this package importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    return env


async def run(impl_path, port, db_path, **options):
    """Run one receiver to its end; return ``(returncode, stdout, stderr)`` as text."""
    process = await asyncio.create_subprocess_exec(
        *command(impl_path, port, db_path, **options),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment(),
    )
    try:
        out, err = await process.communicate()
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")
