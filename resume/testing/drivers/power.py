"""Power cuts after an ACK: record a receiver's disk operations, rebuild what a cut can leave, judge it.

SPEC.md decision 18: once ``ACK <seq>`` has been written, a power cut at any
later moment must not lose event ``seq`` or any event before it. A killed
process cannot show a breach (the kernel's page cache survives it); this
module rebuilds, from a real trace, the disk a power cut could leave.

Three parts (docs/POWER_LOSS.md says why each is as it is):

* ``record(impl_path, folder, lives)``: the lives of a session, each a real
  receiver process (``resume.testing.drivers.receiver``: the real interpreter,
  ``run_client`` against the real publisher) run under ``strace -f -y -xx``
  in ``folder``. Kept from the trace, in order, as ``Op``s: every operation
  that changes the disk under ``folder`` (an open that creates or truncates a
  file, a write with its bytes, a truncation, an unlink, a rename), every
  ``fsync``/``fdatasync`` of a file or of the folder, every shared ``mmap``
  (its file's content is not traced) and every ``ACK`` the receiver sent.
  A ``Trace`` is checked against the folder it left: replaying every
  operation must give the same files, byte for byte.
* ``Trace.units(cut)`` and ``Trace.rebuild(cut, keep)``: the persistence
  model, the POSIX minimum. A file's content operations (writes and
  truncations of one inode) are durable once an ``fsync``/``fdatasync`` of
  that file came after them; the folder's entry operations (create, unlink,
  rename) once an ``fsync`` of the folder came after them. At a cut, each
  file and the folder keep their durable operations and any in-order PREFIX
  of the others (``keep``: how many of its non-durable ones each unit kept);
  units lose theirs independently. ``keep`` all zero is the pessimistic
  state; ``Trace.states(cut)`` is every combination.
* ``judge(impl, state, ...)``: the state written to a fresh folder, opened
  with sqlite3's own recovery, then with the implementation's ``open_store``
  and ``state``; then a new receiver (``run_client`` in this process) resumes
  against a publisher whose ACK cursor is the highest ACK sent before the cut.
  The checks are the model's (resume/testing/model.py): the store is
  consistent (ledger exactly ``0..last`` as published, ``total`` their sum),
  ``last`` is at least every ACK sent, the resumed session sends ``RESUME
  last``, has every resent event ACKed and leaves each event applied once.
  A breach is a ``Breach`` whose ``story`` says, in plain words, which ACK,
  which operations the cut lost, what the store held after the restart, and
  which event the publisher will never resend.

Only the public names of SPEC.md are used on the implementation, and no file
beside the store is named: every file under the folder is treated alike.
"""

import asyncio
import contextlib
import dataclasses
import hashlib
import itertools
import os
import re
import signal
import sqlite3
import tempfile

from resume.publisher import Publisher
from resume.testing.drivers import crash, receiver, store_files
from resume.testing import model

# The system calls recorded: those that change what is on disk, the syncs, the
# shared mappings, the offsets `write` needs, and the socket sends (ACKs).
SYSCALLS = ("openat", "open", "creat", "write", "pwrite64", "pwritev", "pwritev2", "lseek",
            "ftruncate", "truncate", "fsync", "fdatasync", "unlink", "unlinkat", "rename", "renameat",
            "renameat2", "mmap", "sendto")
STRING_LIMIT = 1 << 20  # strace's -s: every write is kept whole (SQLite writes pages of 4 KiB)
TIMEOUT = 10.0  # seconds a receiver life may take under strace
# The publisher hangs up on a life silent this long after connecting: RESUME comes first thing
# (the store is open by then), and strace slows a life tenfold at most; a file that sends no
# RESUME then ends its life at once, not at its 5 s read timeout.
RESUME_WITHIN = 2.0

_PID = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|0x[0-9a-f]+)(?:<(.*?)>)?(?:\s.*)?$")
_UNFINISHED = re.compile(r"^(\w+)\((.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
_ACK = re.compile(rb"^ACK (0|[1-9][0-9]*)\n$")


def _unhex(text):
    """The bytes of strace's -xx string body ``\\x41\\x42``."""
    return bytes.fromhex(text.replace("\\x", ""))


# A piece of an argument list: a quoted string whole (or what is left of one cut short), a run of
# characters that are none of the others, or one quote, comma or bracket.
_PIECE = re.compile(r'"[^"]*"?|[^",\[\](){}]+|.', re.S)


def _args(text):
    """strace's argument list split at top-level commas (not inside brackets or strings)."""
    parts, depth, current = [], 0, []
    for piece in _PIECE.findall(text):  # a page's hex string is one piece: no loop over its characters
        if piece == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        if piece in ("[", "{", "("):
            depth += 1
        elif piece in ("]", "}", ")"):
            depth -= 1
        current.append(piece)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _string(arg):
    """The bytes of a quoted -xx string argument, or None if it is not one (or was cut short)."""
    match = re.fullmatch(r'"((?:\\x[0-9a-f]{2})*)"', arg)
    return _unhex(match[1]) if match else None


def _fd(arg):
    """``(fd, path or None)`` of a -y descriptor argument ``3<\\x2f...>`` (AT_FDCWD<...> gives fd None)."""
    match = re.fullmatch(r"(\d+|AT_FDCWD)(?:<((?:\\x[0-9a-f]{2})*)(?: \(deleted\))?>)?", arg)
    if match is None:
        return None, None
    fd = None if match[1] == "AT_FDCWD" else int(match[1])
    return fd, (_unhex(match[2]).decode("utf-8", "surrogateescape") if match[2] is not None else None)


# ------------------------------------------------------------ operations


@dataclasses.dataclass(frozen=True)
class Op:
    """One recorded operation, in the order the lives made it.

    ``kind``: ``create`` (a new, empty file at ``name``), ``unlink`` (``name``),
    ``rename`` (``name`` to ``target``): the folder's entry operations;
    ``write`` (``data`` at ``offset``), ``truncate`` (to ``offset`` bytes):
    content operations of file ``inode``; ``fsync`` of file ``inode`` or, with
    ``inode`` None, of the folder; ``mapped``: file ``inode`` was mapped
    shared (its content is written in memory, not traced); ``ack``: the
    receiver sent ``ACK seq`` (``offset`` holds the seq).
    """

    kind: str
    life: int
    name: str = ""  # a name in the folder (create, unlink, rename; the file's name for content ops)
    inode: int | None = None
    offset: int = 0
    data: bytes = b""
    target: str = ""  # rename's new name

    def __str__(self):
        if self.kind == "create":
            return f"the creation of {self.name}"
        if self.kind == "unlink":
            return f"the unlink of {self.name}"
        if self.kind == "rename":
            return f"the rename of {self.name} to {self.target}"
        if self.kind == "write":
            return f"a write of {len(self.data)} bytes at offset {self.offset} of {self.name}"
        if self.kind == "truncate":
            return f"the truncation of {self.name} to {self.offset} bytes"
        if self.kind == "fsync":
            return f"an fsync of {self.name or 'the folder'}"
        if self.kind == "ack":
            return f"ACK {self.offset} sent"
        return f"{self.kind} {self.name}"


FOLDER = "folder"  # the unit key of the folder's entry operations


@dataclasses.dataclass
class Trace:
    """The operations of a recorded session, and the folder's files before it."""

    ops: list
    initial: dict  # name -> bytes: the folder before the first life (all durable)
    lives: list  # per life: (returncode, stderr's last line)
    log: list  # the (seq, delta) events the publisher served
    db: str = "store.db"  # the store's name in the folder
    final: dict = dataclasses.field(default_factory=dict)  # name -> bytes: the folder after the last life

    # ---------------------------------------------------- moments

    def cuts(self):
        """Every moment from the first ACK on (before it, decision 18 asks nothing)."""
        acks = self.acks()
        return range(acks[0][0], len(self.ops) + 1) if acks else range(0)

    def acks(self):
        """``[(cut, seq)]``: each ACK and the cut right after it (the number of ops before it, itself included)."""
        return [(index + 1, op.offset) for index, op in enumerate(self.ops) if op.kind == "ack"]

    def bound(self, cut):
        """The highest seq ACKed before ``cut`` (-1 if none): ``last`` may never be below it."""
        return max((op.offset for op in self.ops[:cut] if op.kind == "ack"), default=model.LAST_MIN)

    # ---------------------------------------------------- the persistence model

    def units(self, cut):
        """``{unit: (ops, durable)}`` at ``cut``: each file's content ops and the folder's entry ops
        among the first ``cut``, and how many of them (a prefix) an fsync made durable."""
        ops, synced = {FOLDER: []}, {FOLDER: 0}
        for op in self.ops[:cut]:
            if op.kind in ("create", "unlink", "rename"):
                ops[FOLDER].append(op)
            elif op.kind in ("write", "truncate"):
                ops.setdefault(op.inode, []).append(op)
            elif op.kind == "fsync":
                unit = FOLDER if op.inode is None else op.inode
                synced[unit] = len(ops.setdefault(unit, []))
        return {unit: (found, synced.get(unit, 0)) for unit, found in ops.items()}

    def choices(self, cut):
        """``{unit: number of non-durable ops}`` at ``cut``: a state keeps 0..that many of each."""
        return {unit: len(found) - durable for unit, (found, durable) in self.units(cut).items()}

    def rebuild(self, cut, keep=None):
        """The folder (``{name: bytes}``) a power cut at ``cut`` leaves when each unit kept
        ``keep[unit]`` of its non-durable ops (a prefix; missing: none, the pessimistic state)."""
        keep = keep or {}
        units = self.units(cut)
        kept = {unit: found[:durable + keep.get(unit, 0)] for unit, (found, durable) in units.items()}
        names = {name: ("initial", name) for name in self.initial}
        for op in kept[FOLDER]:
            if op.kind == "create":
                names[op.name] = op.inode
            elif op.kind == "unlink":
                names.pop(op.name, None)
            elif op.kind == "rename" and op.name in names:
                names[op.target] = names.pop(op.name)
        folder = {}
        for name, inode in names.items():
            content = bytearray(self.initial[inode[1]]) if isinstance(inode, tuple) else bytearray()
            for op in kept.get(inode, ()):
                if op.kind == "write":
                    end = op.offset + len(op.data)
                    if len(content) < op.offset:
                        content.extend(bytes(op.offset - len(content)))
                    content[op.offset:end] = op.data
                else:
                    del content[op.offset:]
                    content.extend(bytes(op.offset - len(content)))
            folder[name] = bytes(content)
        return folder

    def lost(self, cut, keep=None):
        """The ops a state at ``cut`` lost (each unit's non-durable ops beyond what it kept)."""
        keep = keep or {}
        return [op for unit, (found, durable) in self.units(cut).items()
                for op in found[durable + keep.get(unit, 0):]]

    def states(self, cut):
        """Every ``keep`` at ``cut``: each unit keeps any prefix of its non-durable ops."""
        choices = {unit: count for unit, count in self.choices(cut).items() if count}
        units = list(choices)
        for counts in itertools.product(*(range(choices[unit] + 1) for unit in units)):
            yield dict(zip(units, counts))


def key(folder):
    """A hashable digest of a rebuilt folder: equal folders are judged once."""
    return tuple(sorted((name, hashlib.sha1(data).hexdigest()) for name, data in folder.items()))


# ------------------------------------------------------------ recording


class _Reader:
    """Turns one life's strace output into Ops, keeping the folder's inodes across lives."""

    def __init__(self, folder, initial):
        self.folder = os.path.realpath(folder)
        self.names = {name: ("initial", name) for name in initial}  # name -> inode, as the lives see it
        self.next_inode = 0
        self.ops = []

    def _name(self, path):
        """The name in the folder of an absolute ``path``; None for anything else (the folder itself too)."""
        if path is None:
            return None
        parent, name = os.path.split(os.path.normpath(path))
        return name if parent == self.folder else None

    def _path(self, dirfd_path, path):
        return os.path.normpath(os.path.join(dirfd_path or os.getcwd(), path))

    def read(self, life, text):
        files = self.files = {}  # (pid, fd) -> [inode, name, offset]
        pending = {}  # pid -> an unfinished call's start
        for line in text.splitlines():
            match = _PID.match(line)
            pid, rest = (int(match[1]), match[2]) if match else (0, line)
            unfinished = _UNFINISHED.match(rest)
            if unfinished:
                pending[pid] = f"{unfinished[1]}({unfinished[2]}"
                continue
            resumed = _RESUMED.match(rest)
            if resumed:
                if pid not in pending:
                    continue
                rest = pending.pop(pid) + resumed[2].lstrip()
            call = _CALL.match(rest)
            if call is None or int(call[3], 0) < 0:
                continue  # a failed call changed nothing; signals and exits are not calls
            self._call(life, pid, call[1], _args(call[2]), int(call[3], 0), files)
        return self.ops

    def _call(self, life, pid, name, args, result, files):
        if name in ("openat", "open", "creat"):
            if name == "openat":
                _, dirpath = _fd(args[0])
                path, flags = _string(args[1]), args[2]
            else:
                dirpath, path = None, _string(args[0])
                flags = "O_CREAT|O_WRONLY|O_TRUNC" if name == "creat" else args[1]
            if path is None:
                return
            where = self._name(self._path(dirpath, os.fsdecode(path)))
            if where is None:
                return
            if where not in self.names:
                if "O_CREAT" not in flags:
                    return
                self.next_inode += 1
                self.names[where] = self.next_inode
                self.ops.append(Op("create", life, where, self.next_inode))
            elif "O_TRUNC" in flags:
                self.ops.append(Op("truncate", life, where, self.names[where], 0))
            offset = None if "O_APPEND" in flags else 0
            files[(pid, result)] = [self.names[where], where, offset]
            return
        if name in ("unlink", "unlinkat", "rename", "renameat", "renameat2", "truncate"):
            self._entry(life, name, args)
            return
        if name == "sendto":
            _, peer = _fd(args[0])
            sent = _ACK.match(_string(args[1]) or b"")
            if sent and (peer or "").startswith("socket:"):
                self.ops.append(Op("ack", life, offset=int(sent[1])))
            return
        fd, path = _fd(args[0]) if name != "mmap" else _fd(args[4])
        if name in ("fsync", "fdatasync") and path is not None and os.path.realpath(path) == self.folder:
            self.ops.append(Op("fsync", life))
            return
        opened = files.get((pid, fd))
        if opened is None or (path is not None and self._name(path) != opened[1]):
            return  # not a file of the folder (a descriptor number reused since, a pipe, a socket)
        inode, where, offset = opened
        if name in ("fsync", "fdatasync"):
            self.ops.append(Op("fsync", life, where, inode))
        elif name == "ftruncate":
            self.ops.append(Op("truncate", life, where, inode, int(args[1])))
        elif name == "lseek":
            opened[2] = result
        elif name in ("write", "pwrite64"):
            data = _string(args[1])
            if data is None or len(data) < result:
                raise ValueError(f"strace cut a write short (raise STRING_LIMIT): {name}({args[0]}, ...)")
            at = int(args[3]) if name == "pwrite64" else offset
            if at is None:
                raise ValueError(f"a write to {where} opened with O_APPEND: not modelled")
            self.ops.append(Op("write", life, where, inode, at, data[:result]))
            if name == "write":
                opened[2] = at + result
        elif name in ("pwritev", "pwritev2"):
            raise ValueError(f"{name} on {where}: vectored writes are not modelled")
        elif name == "mmap" and "MAP_SHARED" in args[3] and "PROT_WRITE" in args[2]:
            self.ops.append(Op("mapped", life, where, inode))

    def _entry(self, life, name, args):
        if name == "truncate":
            where = self._name(self._path(None, os.fsdecode(_string(args[0]))))
            if where in self.names:
                self.ops.append(Op("truncate", life, where, self.names[where], int(args[1])))
            return
        if name in ("unlink", "rename"):
            paths = [self._path(None, os.fsdecode(_string(arg))) for arg in args[:2 if name == "rename" else 1]]
        elif name == "unlinkat":
            paths = [self._path(_fd(args[0])[1], os.fsdecode(_string(args[1])))]
        else:
            paths = [self._path(_fd(args[0])[1], os.fsdecode(_string(args[1]))),
                     self._path(_fd(args[2])[1], os.fsdecode(_string(args[3])))]
        names = [self._name(path) for path in paths]
        if names[0] is None or names[0] not in self.names:
            return
        if len(names) == 1:
            self.ops.append(Op("unlink", life, names[0], self.names.pop(names[0])))
        elif names[1] is not None:
            self.names[names[1]] = self.names.pop(names[0])
            for opened in self.files.values():  # its descriptors now show the new name
                if opened[1] == names[0]:
                    opened[1] = names[1]
            self.ops.append(Op("rename", life, names[0], self.names[names[1]], target=names[1]))


def strace_argv(trace_path):
    """The strace wrapper of a receiver life: children followed, descriptors with paths, strings in hex."""
    return ["strace", "-f", "-qq", "--seccomp-bpf", "-y", "-xx", "-s", str(STRING_LIMIT), "-o", trace_path,
            "-e", "trace=" + ",".join(SYSCALLS), "--"]


def snapshot(folder):
    """``{name: bytes}`` of the regular files in ``folder``."""
    found = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            found[name] = store_files.raw_bytes(path)
    return found


@dataclasses.dataclass(frozen=True)
class Life:
    """One receiver process: killed from ``before_ack`` of ``crash_before_ack`` if given;
    the publisher sends ``raw`` after the log (a duplicate, say)."""

    crash_before_ack: int | None = None
    raw: bytes = b""

    @property
    def planned_exit(self):
        """The exit status of a life that ran as planned: killed (-9), or run_client returned (0)."""
        return 0 if self.crash_before_ack is None else -signal.SIGKILL

    def ended_otherwise(self, number, code, words):
        """A learner's sentence on life ``number`` that ended with ``code`` and last stderr ``words``."""
        plan = ("to be killed from before_ack before it sent ACK %d" % self.crash_before_ack
                if self.crash_before_ack is not None else "to run to the publisher's EOF and return")
        how = "was killed" if code < 0 else f"ended with exit status {code}"
        return (f"life {number} of the receiver was {plan}; it {how}"
                + (f" ({words})" if words else " (nothing on stderr)"))


async def record(impl_path, folder, log, lives, *, db_name="store.db"):
    """Run ``lives`` one after another on the store ``folder/db_name`` under strace; return the Trace.

    One publisher serves every life (its ACK cursor goes on across them, so an
    event committed and not ACKed is sent again). The folder must exist; what
    it holds already is the durable starting point.
    """
    db = os.path.join(folder, db_name)
    initial = snapshot(folder)
    reader = _Reader(folder, initial)
    ran = []
    with tempfile.TemporaryDirectory(prefix="resume-power-trace-") as scratch:
        async with Publisher(log, resume_within=RESUME_WITHIN) as publisher:
            for index, life in enumerate(lives):
                trace_path = os.path.join(scratch, f"life{index}")
                publisher.plan(raw=life.raw)
                code, _, err = await receiver.run(impl_path, publisher.port, db,
                                                  wrapper=strace_argv(trace_path),
                                                  crash_before_ack=life.crash_before_ack, timeout=5.0)
                await publisher.idle()
                ran.append((code, (err.strip().splitlines() or [""])[-1]))
                with open(trace_path, encoding="ascii", errors="replace") as file:
                    reader.read(index + 1, file.read())
                if code != life.planned_exit:  # the plan failed: a next life would only wait out its timeout
                    break
    trace = Trace(reader.ops, initial, ran, list(log), db_name, snapshot(folder))
    check_replay(trace)
    return trace


def check_replay(trace):
    """Replaying every op must give the folder the lives left (files mapped shared aside): else ValueError."""
    mapped = {op.name for op in trace.ops if op.kind == "mapped"}
    rebuilt = trace.rebuild(len(trace.ops), {unit: count for unit, count in trace.choices(len(trace.ops)).items()})
    if set(rebuilt) != set(trace.final):
        raise ValueError(f"the trace misses files: it rebuilds {sorted(rebuilt)}, the folder holds {sorted(trace.final)}")
    wrong = [name for name in rebuilt if name not in mapped and rebuilt[name] != trace.final[name]]
    if wrong:
        raise ValueError(f"the trace does not rebuild {wrong} byte for byte: an operation was not recorded")


# ------------------------------------------------------------ judging


@dataclasses.dataclass
class Breach:
    """A state that breaks decision 18, and its story."""

    cut: int
    keep: dict
    story: str

    def __str__(self):
        return self.story


def _write(folder, files):
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as file:
            file.write(data)


def _read(path):
    """``(state, ledger)`` of the store at ``path`` after sqlite3's own recovery (``(-1, 0), {}`` if none)."""
    found = store_files.read_as_recovered(path)
    if found is None:
        return model.INITIAL_STATE, {}
    return (found.state if found.state is not None else model.INITIAL_STATE), found.ledger


async def _resume(impl, path, log, acked):
    """A new receiver (``run_client``) against a publisher whose ACK cursor is ``acked``: its Session and outcome."""
    async with Publisher(log, acked=acked) as publisher:
        outcome = await model.async_outcome_of(impl, impl.run_client("127.0.0.1", publisher.port, path, 5.0))
        await publisher.idle()
    return publisher.sessions[-1], outcome


# Rebuilt states are judged in a RAM-backed folder where there is one: nothing
# there needs to survive a power cut, and judging costs no real sync.
def judge_state(impl, trace, cut, keep=None, scratch=None):
    """``(problems, held)`` of the state at ``cut`` with ``keep``: [] if it holds decision 18."""
    scratch = scratch or store_files.fast_tmp()
    files = trace.rebuild(cut, keep)
    with tempfile.TemporaryDirectory(prefix="resume-power-state-", dir=scratch) as folder:
        _write(folder, files)
        return _check(impl, os.path.join(folder, trace.db), dict(trace.log), trace.bound(cut))


def judge(impl, trace, cut, keep=None, scratch=None):
    """The Breach of the state at ``cut`` with ``keep``, or None if the state holds decision 18."""
    problems, held = judge_state(impl, trace, cut, keep, scratch)
    return Breach(cut, dict(keep or {}), story(trace, cut, keep or {}, held, problems)) if problems else None


def _check(impl, path, log, bound):
    """``(problems, held)``: what breaks decision 18 in the store at ``path``, and what it held."""
    try:
        state, ledger = _read(path)
    except sqlite3.DatabaseError as error:
        return [f"sqlite3 cannot read the store: {type(error).__name__}: {error}"], None
    held = (state, ledger)
    problems = model.inconsistencies(*state, ledger, log)
    if state[0] < bound:
        problems.append(f"its cursor {state[0]} is below ACK {bound}")
    if problems:
        return problems, held
    outcome = model.outcome_of(impl, impl.open_store, path)
    if not isinstance(outcome, model.Returned):
        return [f"open_store raised {outcome.kind}: {outcome.error}"], held
    with contextlib.closing(outcome.value) as con:
        found = model.outcome_of(impl, impl.state, con)
    if found != model.Returned(state):
        return [f"open_store then state() {found}, where sqlite3 reads {state}"], held
    final = max(log)
    session, outcome = asyncio.run(_resume(impl, path, [*sorted(log.items())], bound))
    expected = model.Store(state[0], state[1], dict(ledger))
    acks = []
    for seq in range(bound + 1, final + 1):  # the publisher sends from its ACK cursor on; an error ends it
        if not isinstance(expected.apply_event(seq, log[seq]), model.Returned):
            break
        acks.append(seq)
    if session.cursor != state[0]:
        problems.append(f"a new receiver sent RESUME {session.cursor}, its store holds last={state[0]}")
    if outcome != model.Returned(expected.state()) or session.acks != acks:
        problems.append(f"a new receiver resuming it {outcome} with ACKs {session.acks}, "
                        f"where the model expects it returns {expected.state()} with ACKs {acks}")
    after = _read(path)
    if after != expected.snapshot():
        problems.append(f"after the new receiver the store holds {after}, not {expected.snapshot()}: "
                        "an event applied twice or lost")
    return problems, held


def story(trace, cut, keep, held, problems):
    """The plain-words story of a breach."""
    acks = [index for index, op in enumerate(trace.ops[:cut]) if op.kind == "ack"]
    if acks:
        last = trace.ops[acks[-1]]
        moment = (f"Life {last.life} of the receiver sent ACK {last.offset}"
                  + (f" (ACK {trace.bound(cut)} had left before it)" if trace.bound(cut) != last.offset else "")
                  + ", then the power was cut")
        later = sum(op.kind not in ("ack", "mapped") for op in trace.ops[acks[-1] + 1:cut])
        if later:
            moment += f" {later} disk operation(s) later"
    else:
        moment = "The power was cut before any ACK left"
    mapped = {op.inode for op in trace.ops if op.kind == "mapped"}
    lost = sorted(trace.lost(cut, keep), key=lambda op: op.inode in mapped)  # a mapped file's ops matter least
    shown = "; ".join(str(op) for op in lost[:4]) + (f"; and {len(lost) - 4} more" if len(lost) > 4 else "")
    not_durable = f"Not yet durable, and lost in this state: {shown}." if lost else "Every operation was durable."
    if held is None:
        after = "After the restart the store could not be read."
    else:
        (last_seq, total), ledger = held
        after = f"After the restart the store held last={last_seq}, total={total}, ledger {ledger}."
    bound = trace.bound(cut)
    never = ""
    if held is not None and held[0][0] < bound:
        missing = ", ".join(str(seq) for seq in range(held[0][0] + 1, bound + 1))
        never = (f" The publisher has ACK {bound} and will never resend event {missing}: "
                 f"{'it is' if held[0][0] + 1 == bound else 'they are'} lost.")
    return f"{moment}. {not_durable} {after}{never} ({'; '.join(problems)})"


# ------------------------------------------------------------ helpers for the tests


def require_strace():
    """Skip (or, with CI set, fail) a test without a working strace: crash.py's check."""
    crash.require_strace()


@contextlib.contextmanager
def disk_folder():
    """A fresh folder on the real disk, for a recorded store (its syncs must be real)."""
    with crash.disk_folder() as folder:
        yield folder


class Judge:
    """``judge`` with a memory: a rebuilt folder already judged under the same bound is not judged again."""

    def __init__(self, impl, trace):
        self.impl, self.trace = impl, trace
        self.seen = {}  # (key of the folder, bound) -> (problems, held)
        self.judged = 0  # distinct states judged

    def __call__(self, cut, keep=None):
        keep = dict(keep or {})
        seen = (key(self.trace.rebuild(cut, keep)), self.trace.bound(cut))
        if seen not in self.seen:
            self.judged += 1
            self.seen[seen] = judge_state(self.impl, self.trace, cut, keep)
        problems, held = self.seen[seen]
        return Breach(cut, keep, story(self.trace, cut, keep, held, problems)) if problems else None


def shrink(judged, breach):
    """A breach with as few lost operations as this model can tell: each unit keeps as many of its
    non-durable ops as it can while the state still breaks decision 18 (greedy, one unit at a time)."""
    keep = dict(breach.keep)
    for unit, count in judged.trace.choices(breach.cut).items():
        for more in range(count, keep.get(unit, 0), -1):  # the most first
            trial = {**keep, unit: more}
            if judged(breach.cut, trial) is not None:
                keep = trial
                break
    return judged(breach.cut, keep)


def sweep(judged, cuts, every_state=True):
    """``(breach or None, states)``: each cut of ``cuts`` under every state (or the pessimistic one
    alone), the pessimistic state of a cut first; it stops at the first breach."""
    states = 0
    for cut in cuts:
        for keep in (judged.trace.states(cut) if every_state else [{}]):
            states += 1
            breach = judged(cut, keep)
            if breach is not None:
                return breach, states
    return None, states
