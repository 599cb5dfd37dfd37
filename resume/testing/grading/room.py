"""The room a file under check runs in: folders of its own, removed afterwards (issue 57).

The file ``resume check`` grades is a guest: it runs with the learner's rights, and what it does
with relative paths, the temporary folder or the home folder must land neither in the checkout
of the suite nor in the learner's folder, nor reach the harness's own files. Every process that
loads it (the probe, the lanes, the receivers they start) runs with

* its working folder ``work/``, a new empty folder: relative paths land there;
* ``TMPDIR`` (``tmp/``) and ``HOME`` (``home/``), new empty folders beside it, not inside it: a
  file that empties its working folder does not reach the stores the tests keep in ``tmp/``;
* ``RESUME_FAST_TMP``: the RAM-backed folder for stores (``/dev/shm`` where there is one), a new
  folder of its own there.

All of it is removed when the check of the file ends, however it ends (a lane killed at its
bound, Ctrl-C): nothing the file or the harness made there is left behind.
"""

import contextlib
import dataclasses
import os
import pathlib
import shutil
import stat
import sys
import tempfile


from resume.testing.drivers.store_files import FAST_TMP_VAR, SHM

SHM_VAR = "RESUME_CHECK_SHM"  # where the room's RAM-backed folder is made (/dev/shm; a test names its own)


@dataclasses.dataclass
class Room:
    work: pathlib.Path  # the working folder
    env: dict  # TMPDIR, HOME and RESUME_FAST_TMP, for the processes' environment


@contextlib.contextmanager
def room():
    """A new ``Room``, removed with all it holds on the way out."""
    folders = []
    try:
        top = pathlib.Path(tempfile.mkdtemp(prefix="resume-check-"))
        folders.append(top)
        for name in ("work", "tmp", "home"):
            (top / name).mkdir()
        env = {"TMPDIR": str(top / "tmp"), "HOME": str(top / "home")}
        base = os.environ.get(SHM_VAR) or SHM
        if os.path.isdir(base) and os.access(base, os.W_OK):
            shm = pathlib.Path(tempfile.mkdtemp(prefix="resume-check-", dir=base))
            folders.append(shm)
            env[FAST_TMP_VAR] = str(shm)
        else:
            env[FAST_TMP_VAR] = str(top / "tmp")
        yield Room(top / "work", env)
    finally:
        for folder in folders:
            remove(folder)


def remove(folder):
    """Remove ``folder`` whatever the guest did to it: a folder it made unwritable or unreadable
    is given its rights back first."""
    def again(function, path, error):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), stat.S_IRWXU)
            os.chmod(path, stat.S_IRWXU)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    with contextlib.suppress(OSError):
        os.chmod(folder, stat.S_IRWXU)
    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=again)
    else:
        shutil.rmtree(folder, onerror=again)
