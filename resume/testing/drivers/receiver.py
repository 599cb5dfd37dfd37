"""Run ``run_client`` in a separate process, so that a test can kill it for real.

The process is ``python -m resume.testing.drivers.receiver IMPL HOST PORT DB TIMEOUT
[CRASH_SEQ]``: it loads the implementation from a file path (the same one the
suite checks), runs ``run_client`` and prints ``last=L total=T``. With
``crash_before_ack=SEQ`` it sends itself SIGKILL from ``before_ack`` when event
SEQ is committed and not yet ACKed: the window the lab's final check targets.
No ``finally`` runs in the killed process. Whatever ``run_client`` raises
ends the process with its traceback (exit 1), so the last line of stderr
names the error as raised: the harness's receiver is not the command line,
whose ``consume`` turns errors into advice for a person.
"""

import asyncio
import os
import signal
import sys
import traceback

from resume.testing import spec

KILLED = -9  # returncode of a process ended by SIGKILL
TIMEOUT = 5.0  # run_client's timeout, unless the test says otherwise

_PACKAGE_PARENT = str(spec.ROOT)


def command(impl_path, port, db_path, *, timeout=TIMEOUT, crash_before_ack=None, host="127.0.0.1"):
    """The argv of a receiver process."""
    argv = [sys.executable, "-m", "resume.testing.drivers.receiver", str(impl_path), host, str(port), str(db_path),
            str(timeout)]
    if crash_before_ack is not None:
        argv.append(str(crash_before_ack))
    return argv


def environment():
    """The environment of a receiver: this one, with this package importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    return env


async def run(impl_path, port, db_path, *, wrapper=(), **options):
    """Run one receiver to its end; return ``(returncode, stdout, stderr)`` as text.

    ``wrapper``: argv put before the receiver's own (``strace ... --``, say).
    """
    process = await asyncio.create_subprocess_exec(
        *wrapper, *command(impl_path, port, db_path, **options),
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


async def run_here(impl, port, db_path, *, timeout=TIMEOUT, host="127.0.0.1"):
    """``run_client`` called in this process, as a receiver process calls it; ``(returncode,
    stdout, stderr)`` as ``run`` gives them: ``(0, "last=L total=T\\n", "")``, or ``(1, "", its
    exception's last line)``. For a receiver that takes over after one killed for real: it needs
    no process of its own (one costs a tenth of a second of CPU: the interpreter, the file's import)."""
    try:
        last, total = await impl.run_client(host, port, str(db_path), timeout)
    except Exception as error:  # as the process's traceback would end
        return 1, "", traceback.format_exception_only(error)[-1]
    return 0, f"last={last} total={total}\n", ""


def main(argv):
    from resume.testing.drivers import loader

    impl_path, host, port, db_path, timeout, *crash = argv
    impl = loader.load(impl_path)
    crash_at = int(crash[0]) if crash else None

    def before_ack(seq):
        if seq == crash_at:
            # Committed, not yet ACKed: die here, with no cleanup at all.
            os.kill(os.getpid(), signal.SIGKILL)

    last, total = asyncio.run(impl.run_client(host, int(port), db_path, float(timeout),
                                              before_ack if crash_at is not None else None))
    print(f"last={last} total={total}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
