"""Crash points of a receiver process: found, named and hit with strace.

A *crash point* is one system call of a receiver process (``python -m resume
consume``, resume/testing/drivers/receiver.py) that touches the store or the socket:

* ``pwrite64``  - SQLite writing the store or a file beside it (a journal, a WAL);
* ``fdatasync`` - SQLite making those writes durable (its sync on Linux);
* ``sendto``    - RESUME or an ACK leaving on the socket;
* ``recvfrom``  - the next line read from the socket: a kill here is a kill
  just after the previous ACK left.

Each kind is used by nothing else in that process (Python's own output is
``write``), so the K-th call of a kind is well defined. ``strace -f -e
inject=KIND:signal=KILL:when=K`` delivers SIGKILL on ENTERING the K-th call:
the call itself never runs, everything before it did. ``error=EIO`` (or
``ENOSPC``) instead makes that one call fail as a sick disk would.

``run()`` runs one receiver under strace with at most one injected point and
returns its trace; ``timeline()`` reads a trace into the session's phases, so
that a point can be named as it is seen: "killed at fdatasync #2, during
event 1's commit". ``consistency()`` says what is wrong with a store, as the
next process would find it (a plain read-write connection first recovers
what a crash left, whatever the journal mode; it reads a copy, so that the
next receiver finds the store as the crash left it), against the log that
was published and the ACKs the publisher received.

Stores for these runs must be on a real disk folder (not /dev/shm), so that
SQLite's syncs are real ones; ``disk_folder()`` makes one.
"""

import contextlib
import dataclasses
import functools
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from resume.testing import model
from resume.testing.drivers import receiver, store_files

KINDS = ("pwrite64", "fdatasync", "sendto", "recvfrom")
STORE_KINDS = ("pwrite64", "fdatasync")
FAULTS = ("EIO", "ENOSPC")
INSTALL = "apt-get install -y strace"  # Debian's package

_CALL = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\w+)\((.*)")  # "PID " before each line with -f -o
_LINE = re.compile(rb"(EVENT|ACK|RESUME) (-?[0-9]+)")
_OPENED = re.compile(r'^\w+, "([^"]*)".*= (\d+)$')  # openat(AT_FDCWD, "PATH", ...) = FD
_FD = re.compile(r"^(\d+),?")


@functools.cache
def strace_problem():
    """None if strace can trace and inject here; else why not (missing, or ptrace refused)."""
    strace = shutil.which("strace")
    if strace is None:
        return f"strace is not installed (install it: {INSTALL})"
    try:
        trial = subprocess.run([strace, "-f", "-qq", "-o", os.devnull, "-e", "trace=none",
                                "-e", "inject=getppid:error=EPERM:when=1", "true"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"strace did not run: {error}"
    if trial.returncode != 0:
        return f"strace cannot trace here (ptrace not allowed?): {trial.stderr.strip()[-300:]}"
    return None


def require_strace():
    """In a test: skip it without a working strace, naming the install command; fail it with ``CI`` set."""
    import pytest  # only the tests call this; the rest of the module needs no pytest

    problem = strace_problem()
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI needs strace for the crash tests: {problem}")
    pytest.skip(f"{problem}; install it with: {INSTALL}")


@contextlib.contextmanager
def disk_folder():
    """A fresh temporary folder on the real disk (the default temp dir, never /dev/shm)."""
    with tempfile.TemporaryDirectory(prefix="resume-crash-") as folder:
        yield folder


@dataclasses.dataclass(frozen=True, order=True)
class Point:
    """The ``index``-th call (from 1) of ``kind``, where ``fault`` is injected."""

    kind: str
    index: int
    fault: str = "KILL"  # or an errno name: "EIO", "ENOSPC"

    def option(self):
        if self.fault == "KILL":
            return f"inject={self.kind}:signal=KILL:when={self.index}"
        return f"inject={self.kind}:error={self.fault}:when={self.index}"

    def __str__(self):
        return f"{self.kind} #{self.index}"


@dataclasses.dataclass
class Call:
    """One traced system call: its name and the phase of the session it fell in."""

    name: str
    text: str  # the rest of strace's line: arguments and result
    phase: str  # "open_store", "event 1's commit", "sending ACK 1", "reading the next line, after ACK 0 left", ...
    path: str | None = None  # the file its descriptor was opened on (None: the socket)


@dataclasses.dataclass
class TracedRun:
    """A receiver process run under strace."""

    returncode: int
    out: str
    err: str
    calls: list  # every traced Call, in order (the injected one included)

    def count(self, kind):
        return sum(call.name == kind for call in self.calls)

    def points(self, kinds=KINDS, fault="KILL"):
        """Every point of ``kinds`` this run went through, in the order they happened."""
        seen = dict.fromkeys(kinds, 0)
        found = []
        for call in self.calls:
            if call.name in seen:
                seen[call.name] += 1
                found.append(Point(call.name, seen[call.name], fault))
        return found

    def call(self, point):
        """The Call at which the run reached ``point`` (None if it never did)."""
        index = 0
        for call in self.calls:
            if call.name == point.kind:
                index += 1
                if index == point.index:
                    return call
        return None

    def phase(self, point):
        """The phase in which the run reached ``point`` (None if it never did)."""
        call = self.call(point)
        return call.phase if call else None

    def describe(self, point):
        """``"killed at fdatasync #2 on store.db, during event 1's commit"``, from this run's own trace."""
        verb = "killed at" if point.fault == "KILL" else f"{point.fault} at"
        call = self.call(point)
        if call is None:
            return f"{verb} {point}, a point the run never reached"
        on = f" on {os.path.basename(call.path)}" if call.path else ""
        return f"{verb} {point}{on}, during {call.phase}"


def timeline(text):
    """The traced calls of ``text`` (strace's output), each with its phase."""
    calls = []
    phase = "open_store"
    paths = {}  # descriptor -> the path it was last opened on
    for line in text.splitlines():
        match = _CALL.match(line)
        if match is None:
            continue
        name, rest = match[1], match[2]
        if name == "openat":
            opened = _OPENED.match(rest)
            if opened:
                paths[int(opened[2])] = opened[1]
            continue
        message = _LINE.search(rest.encode("ascii", "replace").replace(b"\\n", b"\n"))
        if name == "sendto":
            what = f"{message[1].decode()} {message[2].decode()}" if message else "a send"
            calls.append(Call(name, rest, f"sending {what}"))
            if message and message[1] == b"ACK":
                phase = f"after ACK {message[2].decode()} left"
            elif message and message[1] == b"RESUME":
                phase = "after RESUME left"
            continue
        if name == "recvfrom":
            calls.append(Call(name, rest, f"reading the next line, {phase}"))
            if message and message[1] == b"EVENT":
                phase = f"event {message[2].decode()}'s commit"
            continue
        fd = _FD.match(rest)
        calls.append(Call(name, rest, phase, paths.get(int(fd[1])) if fd else None))
    return calls


async def run(impl_path, port, db_path, point=None, *, timeout=10.0):
    """Run one receiver against ``port`` under strace, injecting ``point`` if given."""
    with tempfile.TemporaryDirectory(prefix="resume-strace-") as folder:
        trace = os.path.join(folder, "trace")
        # openat too, to tell the store, the files beside it and its folder apart. --seccomp-bpf:
        # the receiver stops only at these calls, so its start-up runs at full speed (it halves a
        # run); but strace 6.1 then never delivers an injected signal, so not for a kill.
        fast = [] if point is not None and point.fault == "KILL" else ["--seccomp-bpf"]
        argv = ["strace", "-f", "-qq", *fast, "-s", "256", "-o", trace, "-e", "trace=openat," + ",".join(KINDS)]
        if point is not None:
            argv += ["-e", point.option()]
        code, out, err = await receiver.run(impl_path, port, db_path, wrapper=[*argv, "--"], timeout=timeout)
        with open(trace, encoding="ascii", errors="replace") as lines:
            calls = timeline(lines.read())
    return TracedRun(code, out, err, calls)


def read_store(path):
    """``(last, total, {seq: delta})`` as the next opener finds the store: (-1, 0, {}) if not set up yet.

    Through ``store_files.read_as_recovered``: a copy is read, so the store itself
    is left exactly as the crash left it, for the next receiver to recover (or not).
    """
    found = store_files.read_as_recovered(path)
    if found is None:
        return -1, 0, {}
    if found.state is None:
        return -1, 0, found.ledger  # a crash inside open_store: no checkpoint yet is the old state
    return found.last, found.total, found.ledger


def consistency(path, log, acks=()):
    """What is wrong with the store at ``path`` (``model.inconsistencies``): ``[]`` if nothing.

    ``log`` is ``{seq: delta}`` as published (from seq 0), ``acks`` the seq of
    every ACK the publisher received.
    """
    try:
        last, total, ledger = read_store(path)
    except sqlite3.DatabaseError as error:
        return [f"the store cannot be read: {type(error).__name__}: {error}"]
    return model.inconsistencies(last, total, ledger, log, acks)
