r"""The known bugs: each one a small patch that puts ONE realistic bug into resume/client.py.

A bug is a list of exact text replacements applied to the current
``resume/client.py`` at test time (``apply()``), so the collection follows the
implementation and each entry stays a few lines long. Every ``old`` text must
occur exactly once in the file: if the implementation changed so that a patch
no longer applies, ``apply()`` fails loudly instead of testing something else.

The patched files are written to a temporary folder by the meta-test and by
``python -m quality.report``; nothing here is importable as an implementation.

The list starts from the lab's own warnings (SPEC.md's hints) and adds the
classic pitfalls: int() tolerance, ``$`` anchors, ``\d`` on decoded text,
off-by-one bounds, ``except Exception`` where any BaseException must roll
back, an open transaction on the duplicate path, unbounded waits, leaked
sockets and connections, swallowed cancellation, validation after side effects.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Bug:
    id: str  # short, stable, used in reports and file names
    step: int  # the step of SPEC.md whose contract it breaks
    what: str  # one line: the bug, as a reviewer would describe it
    edits: tuple  # ((old, new), ...): exact replacements, each old text found once
    base: str = "client"  # the file patched: resume/client.py, or "independent" (quality/variants/)


class PatchError(Exception):
    """A known bug's patch no longer matches resume/client.py."""


def apply(bug, source):
    """Return ``source`` with ``bug``'s edits applied; PatchError if one does not match once."""
    for old, new in bug.edits:
        count = source.count(old)
        if count != 1:
            raise PatchError(f"{bug.id}: the text to replace occurs {count} times, not once "
                             f"(did resume/client.py change?):\n{old}")
        source = source.replace(old, new)
    return source


def _bug(id, step, what, *edits):
    return Bug(id, step, what, tuple(edits))


def _independent(id, step, what, *edits):
    """A bug written into quality/variants/independent.py: the same mistake in code of another
    shape (a byte scanner, other SQL, other deadlines), as a learner's own file has it."""
    return Bug(id, step, what, tuple(edits), base="independent")


BUGS = [
    # ------------------------------------------------------------ step 1: parse_line
    _bug("strip-before-check", 1,
         "strips the line ending before checking the frame: a cut-off last line or CRLF passes",
         (r'''    # Check that this is one complete frame before looking inside it.
''', r'''    line = line.rstrip(b"\r\n") + b"\n"  # normalise the line ending first
''')),
    _bug("int-tolerance", 1,
         "splits on spaces and trusts int(): '+1', '1_0', '01', '-0' and spaces are accepted",
         (r'''    match = _FRAME.fullmatch(line)
    if match is None:
        raise ValueError(f"not a frame 'EVENT <seq> <delta>\\n': {line!r}")
    seq, delta = int(match[1]), int(match[2])
''', r'''    fields = line.split()
    if len(fields) != 3 or fields[0] != b"EVENT":
        raise ValueError(f"not a frame 'EVENT <seq> <delta>\\n': {line!r}")
    seq, delta = int(fields[1]), int(fields[2])
''')),
    _bug("dollar-anchor", 1,
         "checks the frame with one regex ending in `$`, which also matches with no final LF",
         (r'''    if not line.endswith(b"\n"):
        raise ValueError(f"frame has no final LF (cut off?): {line!r}")
    if line.count(b"\n") != 1:
        raise ValueError(f"frame holds more than one line: {line!r}")
''', ""),
         (r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")''',
          r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)$")'''),
         (r'''    match = _FRAME.fullmatch(line)''', r'''    match = _FRAME.match(line)''')),
    _bug("unicode-digits", 1,
         r"decodes the frame and matches `\d` on text: full-width and Arabic-Indic digits pass",
         (r'''    if not line.isascii():
        raise ValueError(f"frame is not ASCII: {line!r}")
    match = _FRAME.fullmatch(line)
''', r'''    match = re.fullmatch(r"EVENT (0|[1-9]\d*) (0|-?[1-9]\d*)\n", line.decode("utf-8", "replace"))
''')),
    _bug("crlf-accepted", 1,
         "allows an optional CR before the LF",
         (r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")''',
          r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\r?\n")''')),
    _bug("minus-zero", 1,
         "the delta pattern admits '-0'",
         (r'''(0|-?[1-9][0-9]*)\n")''', r'''(-?0|-?[1-9][0-9]*)\n")''')),
    _bug("leading-zero", 1,
         "the seq pattern admits leading zeros ('007')",
         (r'''rb"EVENT (0|[1-9][0-9]*) ''', r'''rb"EVENT ([0-9]+) ''')),
    _bug("delta-unbounded", 1,
         "never checks the delta's range after parsing (1001 passes)",
         (r'''    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    return seq, delta
''', r'''    return seq, delta
''')),
    _bug("seq-off-by-one", 1,
         "the seq bound is exclusive: 2147483647 is refused",
         (r'''    _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    return seq, delta
''', r'''    _check_int("seq", seq, SEQ_MIN, SEQ_MAX - 1)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    return seq, delta
''')),
    _bug("bytearray-accepted", 1,
         "accepts bytearray as well as bytes",
         (r'''    if not isinstance(line, bytes):''', r'''    if not isinstance(line, (bytes, bytearray)):''')),
    _bug("fragment-joined", 1,
         "keeps a line cut off before its LF (refused) and joins it to the next call's line, as a reader split mid-frame",
         (r'''# ---------------------------------------------------------------- step 1


def parse_line(line):''', r'''# ---------------------------------------------------------------- step 1

_fragment = [b""]  # the start of a frame a previous call got without its LF


def parse_line(line):'''),
         (r'''    if not line.endswith(b"\n"):
        raise ValueError(f"frame has no final LF (cut off?): {line!r}")''',
          r'''    line, _fragment[0] = _fragment[0] + line, b""
    if not line.endswith(b"\n"):
        _fragment[0] = line
        raise ValueError(f"frame has no final LF (cut off?): {line!r}")''')),
    # ------------------------------------------------- step 2: open_store, state
    _bug("state-in-two-reads", 2,
         "reads the cursor and the total with a query each: another connection's commit between them gives a pair the store never held",
         (r'''    row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("the checkpoint row is missing")
    return row[0], row[1]''', r'''    last = con.execute("SELECT last FROM checkpoint WHERE id = 1").fetchone()
    total = con.execute("SELECT total FROM checkpoint WHERE id = 1").fetchone()
    if last is None or total is None:
        raise sqlite3.DatabaseError("the checkpoint row is missing")
    return last[0], total[0]''')),
    _bug("reinit-cursor", 2,
         "re-initialises the cursor on every open (INSERT OR REPLACE)",
         (r'''    "INSERT OR IGNORE INTO checkpoint''', r'''    "INSERT OR REPLACE INTO checkpoint''')),
    _bug("drop-on-open", 2,
         "recreates the tables on every open, losing the ledger and the cursor",
         (r'''_SCHEMA = (
''', r'''_SCHEMA = (
    "DROP TABLE IF EXISTS ledger",
    "DROP TABLE IF EXISTS checkpoint",
''')),
    _bug("default-busy-timeout", 2,
         "keeps sqlite3's default 5 s busy timeout instead of 1 s",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    con = sqlite3.connect(path, isolation_level=None)''')),
    _bug("implicit-transactions", 2,
         "leaves isolation_level at sqlite3's default (implicit transactions)",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    con = sqlite3.connect(path, timeout=1.0)''')),
    _bug("leak-on-init-failure", 2,
         "does not close the connection when initialisation fails",
         (r'''    except BaseException:
        con.close()
        raise
    return con
''', r'''    except BaseException:
        raise
    return con
''')),
    # The tables as SPEC.md writes them: a constraint left out changes no result of
    # a correct run, so only the test that reads the schema and tries the
    # constraints (test_the_tables_have_specs_columns_keys_and_constraints) sees it.
    _bug("checkpoint-id-unchecked", 2,
         "creates the checkpoint table without CHECK(id=1): a second checkpoint row can be written",
         (r'''"id INTEGER PRIMARY KEY CHECK(id=1), last''', r'''"id INTEGER PRIMARY KEY, last''')),
    _bug("ledger-seq-unique-not-key", 2,
         "declares the ledger's seq UNIQUE instead of its INTEGER PRIMARY KEY",
         (r'''ledger(seq INTEGER PRIMARY KEY,''', r'''ledger(seq INTEGER UNIQUE,''')),
    _bug("ledger-delta-nullable", 2,
         "declares the ledger's delta without NOT NULL",
         (r'''delta INTEGER NOT NULL)",''', r'''delta INTEGER)",''')),
    _bug("foreign-schema-text-refused", 2,
         "refuses a store whose tables another program spelled otherwise (compares the CREATE text with its own)",
         (r'''            for statement in _SCHEMA:
                con.execute(statement)
''', r'''            for statement in _SCHEMA:
                con.execute(statement)
            # A store made by something else is refused: its tables must be ours.
            for (sql,) in con.execute(
                    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ('checkpoint', 'ledger')"):
                if "CREATE TABLE IF NOT EXISTS " + sql[len("CREATE TABLE "):] not in _SCHEMA:
                    raise sqlite3.DatabaseError(f"not a store of ours: {sql}")
''')),
    _bug("empty-file-not-initialised", 2,
         "creates the tables only when no file is at the path: an existing empty file is never initialised",
         (r'''import math
''', r'''import math
import os
'''),
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                con.execute(statement)
''', r'''    fresh = path == ":memory:" or not os.path.exists(path)
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            if fresh:  # an existing store already has its tables and its checkpoint row
                for statement in _SCHEMA:
                    con.execute(statement)
''')),
    _bug("half-made-store-kept", 2,
         "takes a store with a ledger table for a whole one: a store whose writer died before its checkpoint table fails to open",
         (r'''            for statement in _SCHEMA:
                con.execute(statement)
''', r'''            fresh = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger'").fetchone() is None
            if fresh:  # the tables are made together: a store with a ledger has its checkpoint table
                for statement in _SCHEMA[:2]:
                    con.execute(statement)
            con.execute(_SCHEMA[2])
''')),
    _bug("half-made-store-by-checkpoint", 2,
         "takes a store with a checkpoint table for a whole one: a store whose writer died before its ledger table fails",
         (r'''            for statement in _SCHEMA:
                con.execute(statement)
''', r'''            fresh = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoint'").fetchone() is None
            if fresh:  # the tables are made together: a store with a checkpoint has its ledger
                for statement in _SCHEMA:
                    con.execute(statement)
''')),
    _bug("row-only-with-new-table", 2,
         "inserts the checkpoint row only when it has just created the checkpoint table: a store missing its row stays so",
         (r'''            for statement in _SCHEMA:
                con.execute(statement)
''', r'''            new = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoint'").fetchone() is None
            for statement in _SCHEMA[:2]:
                con.execute(statement)
            if new:  # a new store: its first row
                con.execute(_SCHEMA[2])
''')),
    # Was crash-only (a process killed between the autocommit statements leaves
    # a half-made store it never repairs); a half-made store is now a path form
    # of step 2's, which shows it without a crash.
    _bug("init-once-autocommit", 2,
         "initialises a store only when it has no checkpoint table, one autocommit statement at a time",
         (r'''        con.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA:
                con.execute(statement)''', r'''        con.execute("BEGIN IMMEDIATE")
        try:
            known = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoint'").fetchone()
            con.execute("COMMIT")
            if known is None:  # a new store: set it up (each statement commits at once)
                for statement in _SCHEMA:
                    con.execute(statement)
            con.execute("BEGIN IMMEDIATE")''')),
    _bug("state-swapped", 2,
         "state() returns (total, last)",
         (r'''    return row[0], row[1]''', r'''    return row[1], row[0]''')),
    # ----------------------------------------------------- step 3: apply_event
    _bug("cursor-first", 3,
         "commits the cursor first, then the ledger row and the total: a fault leaves them apart",
         (r'''        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
''', r'''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
        con.execute("COMMIT")
''')),
    _bug("total-separately", 3,
         "commits the ledger row and the total on their own, before the cursor",
         (r'''        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
''', r'''        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        con.execute("COMMIT")
        con.execute("BEGIN IMMEDIATE")
        if fault is not None:
''')),
    _bug("except-exception", 3,
         "rolls back on Exception only: KeyboardInterrupt from fault() leaves the transaction open",
         (r'''    except BaseException:
        _rollback(con)
        raise


# ---------------------------------------------------------------- step 4''',
          r'''    except Exception:
        _rollback(con)
        raise


# ---------------------------------------------------------------- step 4''')),
    _bug("duplicate-open-transaction", 3,
         "returns False for a duplicate without ending its transaction",
         (r'''            con.execute("ROLLBACK")
            return False
''', r'''            return False
''')),
    _bug("gap-applied", 3,
         "off by one in the gap test: an event two past the cursor is applied",
         (r'''        if seq > last + 1:''', r'''        if seq > last + 2:''')),
    _bug("conflict-ignored", 3,
         "a redelivery with another delta is taken for a duplicate",
         (r'''            if row[0] != delta:
                raise Conflict(f"event {seq} was applied with delta {row[0]}, now {delta}")
''', "")),
    _bug("missing-row-is-duplicate", 3,
         "a seq at or before the cursor with no ledger row is taken for a duplicate",
         (r'''            if row is None:
                raise Conflict(f"event {seq} is at or before the cursor {last} but has no ledger row")
''', r'''            if row is None:
                con.execute("ROLLBACK")
                return False
''')),
    _bug("bool-is-int", 3,
         "takes bool for int (True is seq 1)",
         (r'''    return isinstance(value, int) and not isinstance(value, bool)''',
          r'''    return isinstance(value, int)''')),
    _bug("delta-bound-off-by-one", 3,
         "apply_event's delta bounds are one too wide",
         (r'''    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try''', r'''    _check_int("delta", delta, DELTA_MIN - 1, DELTA_MAX + 1)
    # Outside the try''')),
    _bug("valueerror-not-rolled-back", 3,
         "lets a ValueError through without a rollback, taking it for its own argument check (nothing written yet)",
         (r'''    except BaseException:
        _rollback(con)
        raise


# ---------------------------------------------------------------- step 4''', r'''    except ValueError:
        raise  # a bad argument: nothing was written
    except BaseException:
        _rollback(con)
        raise


# ---------------------------------------------------------------- step 4''')),
    _bug("commit-outside-try", 3,
         "commits after the block that rolls back on failure: a COMMIT that fails leaves the transaction open",
         (r'''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True
    except BaseException:
        _rollback(con)
        raise
''', r'''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
    except BaseException:
        _rollback(con)
        raise
    con.execute("COMMIT")
    return True
''')),
    # ---------------------------------------------------------- step 4: replay
    _bug("truncated-log-as-recovery", 4,
         "passes a truncated log off as a recovery: no ResyncRequired, replays from the log's start",
         (r'''    if last < first - 1:
        raise ResyncRequired(f"the log starts at {first}; cursor {last} needs {last + 1}")
    start = last - first + 1
''', r'''    start = max(0, last - first + 1)
''')),
    _bug("resync-off-by-one", 4,
         "raises ResyncRequired when the cursor is exactly first - 1 (nothing is missing)",
         (r'''    if last < first - 1:''', r'''    if last < first:''')),
    _bug("limit-off-by-one", 4,
         "returns limit + 1 events",
         (r'''    return list(events[start:start + limit])''', r'''    return list(events[start:start + limit + 1])''')),
    _bug("replay-list-reused", 4,
         "refills and returns one module-level list: the list a caller kept from an earlier call changes",
         (r'''def replay(events, last, limit):''', r'''_window = []  # replay's result, reused: the publisher calls it for every reconnect


def replay(events, last, limit):'''),
         (r'''    return list(events[start:start + limit])''', r'''    _window[:] = events[start:start + limit]
    return _window''')),
    _bug("seq-wraps-at-top", 3,
         "expects the seq after 2147483647 to be 0 (seqs wrap): a resend of event 0 on a store at the top is applied again",
         (r'''        if seq > last + 1:
            raise Gap''', r'''        expected = (last + 1) % (SEQ_MAX + 1)  # the publisher's seq wraps after 2**31 - 1
        if seq != expected and seq > last + 1:
            raise Gap'''),
         (r'''        if seq <= last:
            row = con.execute''', r'''        if seq != expected and seq <= last:
            row = con.execute''')),
    _bug("consecutive-by-span", 4,
         "checks that the seqs are consecutive by their span alone (final - first == len - 1)",
         (r'''        if previous is not None and seq != previous + 1:
            raise ValueError(f"events[{index}] has seq {seq} after {previous}: not consecutive")
''', ""),
         (r'''    first, final = events[0][0], events[-1][0]
    if last > final:''', r'''    first, final = events[0][0], events[-1][0]
    if final - first != len(events) - 1:  # n consecutive seqs span exactly n - 1
        raise ValueError(f"seqs {first}..{final} are not {len(events)} consecutive seqs")
    if last > final:''')),
    _bug("holes-accepted", 4,
         "checks that seqs ascend but not that they are consecutive",
         (r'''        if previous is not None and seq != previous + 1:''',
          r'''        if previous is not None and seq <= previous:''')),
    _bug("log-unbounded", 4,
         "no upper bound on the log's length (129 items pass)",
         (r'''    if not LOG_MAX >= len(events) >= 1:''', r'''    if not len(events) >= 1:''')),
    _bug("resync-before-validation", 4,
         "decides ResyncRequired from the first item before validating the rest",
         (r'''    previous = None
    for index, item in enumerate(events):''', r'''    if _is_int(last) and isinstance(events[0], tuple) and _is_int(events[0][0]) \
            and last < events[0][0] - 1:
        raise ResyncRequired(f"the log starts at {events[0][0]}")
    previous = None
    for index, item in enumerate(events):''')),
    _bug("log-max-exclusive", 4,
         "off by one in the length bound: a log of exactly 128 events is refused",
         (r'''    if not LOG_MAX >= len(events) >= 1:''', r'''    if not LOG_MAX > len(events) >= 1:''')),
    _bug("cursor-floor-off-by-one", 4,
         "off by one in the cursor's lower bound: last = -2 is taken for a cursor",
         (r'''    _check_int("last", last, LAST_MIN, SEQ_MAX)''', r'''    _check_int("last", last, LAST_MIN - 1, SEQ_MAX)''')),
    _bug("limit-max-off-by-one", 4,
         "off by one in the limit's upper bound: limit 17 is accepted",
         (r'''LIMIT_MIN, LIMIT_MAX = 1, 16''', r'''LIMIT_MIN, LIMIT_MAX = 1, 17''')),
    _bug("past-end-accepted", 4,
         "a cursor past the log's final seq returns [] instead of ValueError",
         (r'''    if last > final:
        raise ValueError(f"last {last} is past the log's final seq {final}")
''', r'''    if last > final:
        return []
''')),
    # ---------------------------------------------------- step 5: consume_line
    _bug("no-ack-for-duplicate", 5,
         "returns no ACK for a duplicate",
         (r'''    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq''', r'''    if not apply_event(con, seq, delta, fault):
        return None
    return b"ACK %d\n" % seq''')),
    _bug("fault-dropped", 5,
         "does not pass fault through to apply_event",
         (r'''    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq''', r'''    apply_event(con, seq, delta)
    return b"ACK %d\n" % seq''')),
    _bug("ack-after-gap", 5,
         "ACKs a gap as if it had been seen",
         (r'''    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq''', r'''    try:
        apply_event(con, seq, delta, fault)
    except Gap:
        pass
    return b"ACK %d\n" % seq''')),
    _bug("ack-without-lf", 5,
         "the ACK line lacks its final LF",
         (r'''    return b"ACK %d\n" % seq''', r'''    return b"ACK %d" % seq''')),
    _bug("total-kept-in-32-bits", 3,
         "refuses an event that would take the total past a 32-bit int, as the seq is bounded (ValueError): a total of billions is valid",
         (r'''        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))''',
          r'''        (total,) = con.execute("SELECT total FROM checkpoint WHERE id = 1").fetchone()
        if not -2**31 <= total + delta < 2**31:  # the total is an int32, as the seq is
            raise ValueError(f"total {total} + {delta} out of range")
        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))''')),
    _bug("gap-frame-kept-for-later", 5,
         "keeps a frame refused as a Gap (a publisher that reorders) and applies it once the line before it is committed",
         (r'''    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq
''', r'''    seq, delta = parse_line(line)
    try:
        apply_event(con, seq, delta, fault)
    except Gap:
        _early.setdefault(id(con), {})[seq] = delta  # ahead of a hole: kept until the hole is filled
        raise
    early = _early.get(id(con), {})
    if seq + 1 in early:
        apply_event(con, seq + 1, early.pop(seq + 1))
    return b"ACK %d\n" % seq


_early = {}  # frames that came ahead of a hole, by connection
'''),),
    _bug("consume-line-takes-a-batch", 5,
         "takes a line that holds several frames (a publisher that batches) for several events: each applied, the ACKs joined",
         (r'''    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq
''', r'''    if isinstance(line, bytes) and line.count(b"\n") > 1:  # a batch: one frame per line
        return b"".join(consume_line(con, frame + b"\n", fault) for frame in line.split(b"\n")[:-1])
    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq
''')),
    _bug("consume-line-valueerror-rewrapped", 5,
         "wraps every ValueError in one of its own that names the frame: a fault's ValueError is no longer that object",
         (r'''    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq''', r'''    try:
        seq, delta = parse_line(line)
        apply_event(con, seq, delta, fault)
    except ValueError as error:
        raise ValueError(f"refused frame {line!r}: {error}") from error
    return b"ACK %d\n" % seq''')),
    # ------------------------------------------------- step 6: consume_session
    _bug("ack-before-commit", 6,
         "writes the ACK before the commit",
         (r'''            ack = consume_line(con, line)
''', r'''            writer.write(b"ACK %d\n" % parse_line(line)[0])
            consume_line(con, line)
            ack = b""
''')),
    _bug("hook-before-commit", 6,
         "calls before_ack before the commit, not after it",
         (r'''            ack = consume_line(con, line)
            if before_ack is not None:
                seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
                result = before_ack(seq)
                if inspect.isawaitable(result):
                    await result
''', r'''            if before_ack is not None:
                seq, _ = parse_line(line)
                result = before_ack(seq)
                if inspect.isawaitable(result):
                    await result
            ack = consume_line(con, line)
''')),
    _bug("unbounded-read", 6,
         "readline is not bounded by the timeout: a silent publisher hangs the session",
         (r'''            async with asyncio.timeout(timeout):
                line = await reader.readline()''',
          r'''            line = await reader.readline()''')),
    _bug("unbounded-close", 6,
         "wait_closed is not bounded: a peer that never closes hangs the session",
         (r'''        async with asyncio.timeout(timeout):
            await writer.wait_closed()''',
          r'''        await writer.wait_closed()''')),
    _bug("no-close-on-error", 6,
         "leaks the socket when the session fails",
         (r'''    except BaseException:
        await _reclaim_after_error(writer, close_timeout)
        raise
''', r'''    except BaseException:
        raise
''')),
    _bug("swallowed-cancellation", 6,
         "treats cancellation as a normal end and returns the state",
         (r'''    except BaseException:
        await _reclaim_after_error(writer, close_timeout)
        raise
''', r'''    except asyncio.CancelledError:
        await _reclaim_after_error(writer, close_timeout)
        return state(con)
    except BaseException:
        await _reclaim_after_error(writer, close_timeout)
        raise
''')),
    _bug("timeout-unchecked", 6,
         "consume_session never validates its timeout",
         (r'''        _check_timeout(timeout)
        while True:''', r'''        while True:''')),
    _bug("awaitable-hook-ignored", 6,
         "an awaitable returned by before_ack is never awaited",
         (r'''                if inspect.isawaitable(result):
                    await result
''', "")),
    _bug("only-coroutines-awaited", 6,
         "awaits what before_ack returns only if it is a coroutine: a Future or another awaitable is dropped",
         (r'''                if inspect.isawaitable(result):''', r'''                if asyncio.iscoroutine(result):''')),
    _bug("session-deadline", 6,
         "bounds the whole session by one deadline instead of each read: a session longer than the timeout fails",
         (r'''        _check_timeout(timeout)
        while True:
            async with asyncio.timeout(timeout):
                line = await reader.readline()''', r'''        _check_timeout(timeout)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            async with asyncio.timeout_at(deadline):
                line = await reader.readline()''')),
    _bug("hook-awaitable-bounded", 6,
         "bounds before_ack's awaitable by the timeout: a slow one is cut off with TimeoutError",
         (r'''                if inspect.isawaitable(result):
                    await result''', r'''                if inspect.isawaitable(result):
                    async with asyncio.timeout(timeout):
                        await result''')),
    _bug("locked-line-skipped", 6,
         "takes any sqlite3 error while handling a line for a passing lock and goes on to the next line",
         (r'''            ack = consume_line(con, line)
            if before_ack is not None:
                seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
                result = before_ack(seq)
                if inspect.isawaitable(result):
                    await result
            writer.write(ack)''', r'''            try:
                ack = consume_line(con, line)
                if before_ack is not None:
                    seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
                    result = before_ack(seq)
                    if inspect.isawaitable(result):
                        await result
            except sqlite3.Error:
                continue  # the store was busy or locked: the publisher resends what was not ACKed
            writer.write(ack)''')),
    _bug("reclaim-on-exception-only", 6,
         "reclaims the connection after an Exception only: a KeyboardInterrupt or a cancellation leaves it open",
         (r'''                await writer.drain()
    except BaseException:
        await _reclaim_after_error(writer, close_timeout)
        raise''', r'''                await writer.drain()
    except Exception:
        await _reclaim_after_error(writer, close_timeout)
        raise''')),
    _bug("ack-bytearray", 5,
         "builds the ACK in a bytearray: equal to the bytes, but not bytes",
         (r'''    return b"ACK %d\n" % seq''', r'''    ack = bytearray(b"ACK ")
    ack += str(seq).encode("ascii")
    ack += b"\n"
    return ack''')),
    _bug("hook-kind-learnt-once", 6,
         "learns from before_ack's first call whether it returns awaitables: later ones of a hook that first returned None are dropped",
         (r'''async def consume_session(''', r'''_hook_is_async = {}  # before_ack -> whether it returns awaitables (learnt on its first call)


async def consume_session('''),
         (r'''                if inspect.isawaitable(result):
                    await result''', r'''                if before_ack not in _hook_is_async:
                    _hook_is_async[before_ack] = inspect.isawaitable(result)
                if _hook_is_async[before_ack]:
                    await result''')),
    _bug("eof-word-ends-session", 6,
         "takes a line 'EOF' for the end of the stream: the session returns instead of failing with ValueError",
         (r'''            if not line:
                break
            ack = consume_line(con, line)''', r'''            if not line or line == b"EOF\n":
                break  # the publisher closed, or said so ("server -> client EOF")
            ack = consume_line(con, line)''')),
    _bug("per-byte-read-timeout", 6,
         "reads a line a byte at a time, each byte bounded by the timeout: a frame trickled slower than the timeout is taken",
         (r'''async def consume_session(''', r'''async def _read_line(reader, timeout):
    # An idle timeout: a publisher may trickle a frame as long as it keeps sending.
    line = b""
    while not line.endswith(b"\n"):
        async with asyncio.timeout(timeout):
            chunk = await reader.read(1)
        if not chunk:
            break  # EOF (a cut-off frame is left to parse_line)
        line += chunk
        if len(line) > FRAME_MAX:
            raise ValueError(f"line over the {FRAME_MAX}-byte limit")
    return line


async def consume_session('''),
         (r'''            async with asyncio.timeout(timeout):
                line = await reader.readline()''', r'''            line = await _read_line(reader, timeout)''')),
    _bug("duplicate-acked-from-ledger", 5,
         "ACKs a frame the ledger already holds without apply_event: no write lock, so a locked store does not show",
         (r'''    apply_event(con, seq, delta, fault)
''', r'''    # A resend the ledger already holds needs no write lock: ACK it at once.
    row = con.execute("SELECT delta FROM ledger WHERE seq = ?", (seq,)).fetchone()
    if row is not None and row[0] == delta:
        return b"ACK %d\n" % seq
    apply_event(con, seq, delta, fault)
''')),
    _bug("blank-line-skipped", 6,
         "skips a blank line as a publisher's keep-alive instead of failing with ValueError",
         (r'''            if not line:
                break
            ack = consume_line(con, line)''', r'''            if not line:
                break
            if not line.strip():
                continue  # a keep-alive
            ack = consume_line(con, line)''')),
    _bug("closing-wait-always-fallback", 6,
         "bounds the closing wait by the 1 s fallback whatever the timeout: a valid short timeout is not kept",
         (r'''    close_timeout = timeout if valid else CLOSE_TIMEOUT_FALLBACK''',
          r'''    close_timeout = CLOSE_TIMEOUT_FALLBACK  # closing a socket is quick: a fixed bound is enough''')),
    _bug("abort-at-once-on-bad-timeout", 6,
         "with an invalid timeout, gives the closing wait no time at all and aborts",
         (r'''CLOSE_TIMEOUT_FALLBACK = 1.0''', r'''CLOSE_TIMEOUT_FALLBACK = 0.0''')),
    _bug("fallback-wait-unbounded", 6,
         "with an invalid timeout, waits for the closing wait without any bound",
         (r'''CLOSE_TIMEOUT_FALLBACK = 1.0''', r'''CLOSE_TIMEOUT_FALLBACK = None''')),
    _bug("closing-error-wins", 6,
         "a failure while closing replaces the session's own error",
         (r'''        await _reclaim_after_error(writer, close_timeout)
        raise
''', r'''        await _reclaim(writer, close_timeout)
        raise
''')),
    # ------------------------------------------------------- step 7: run_client
    _bug("connect-deadline-before-store", 7,
         "starts the connection's deadline before open_store: a store that waits for a lock eats the connection's bound",
         (r'''    con = open_store(path)
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''    deadline = asyncio.get_running_loop().time() + timeout  # the setup's bound, taken at the start
    con = open_store(path)
    try:
        async with asyncio.timeout_at(deadline):
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''')),
    _bug("inf-by-identity", 7,
         "tests the timeout with `is not math.inf`: float('inf') made at run time passes",
         (r'''    return 0 < seconds < math.inf''', r'''    return 0 < seconds is not math.inf''')),
    _bug("connect-unbounded", 7,
         "does not bound the connection attempt: a peer that never completes it hangs run_client",
         (r'''        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''        reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''')),
    _bug("run-client-path-made-absolute", 7,
         "hands open_store the path made absolute (so that a later chdir cannot move the store): ':memory:' becomes a file",
         (r'''import math
''', r'''import math
import os
'''),
         (r'''    _check_timeout(timeout)
    con = open_store(path)''', r'''    _check_timeout(timeout)
    con = open_store(os.path.abspath(path))  # a later chdir must not move the store''')),
    _bug("run-client-falsy-hook-dropped", 7,
         "hands consume_session `before_ack or None`: a falsy callable before_ack is never called",
         (r'''        return await consume_session(reader, writer, con, timeout, before_ack)''',
          r'''        return await consume_session(reader, writer, con, timeout, before_ack or None)''')),
    _bug("connect-bound-floored", 7,
         "bounds the connection attempt by the timeout but never less than a second (a connect on a busy machine needs a moment)",
         (r'''        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''        async with asyncio.timeout(max(timeout, 1.0)):
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''')),
    _bug("connect-retried", 7,
         "tries the connection again after a refusal (the publisher may be restarting): a publisher that comes up half a second later is reached",
         (r'''            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)
        try:''', r'''            try:
                reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)
            except ConnectionRefusedError:  # the publisher may be restarting
                await asyncio.sleep(min(timeout / 2, 0.5))
                reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)
        try:''')),
    _bug("run-clients-share-a-store", 7,
         "keeps the open store in a module global and closes that one: two run_clients at once close one store twice",
         (r'''async def run_client(host, port, path, timeout, before_ack=None):''', r'''_store = None  # the receiver's open store, so that a signal handler can close it


async def run_client(host, port, path, timeout, before_ack=None):'''),
         (r'''    _check_timeout(timeout)
    con = open_store(path)''', r'''    global _store
    _check_timeout(timeout)
    con = _store = open_store(path)'''),
         (r'''        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()''', r'''        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        _store.close()''')),
    _bug("top-cursor-no-connect", 7,
         "returns at once when the store's cursor is at the top seq: nothing can follow it, so it never connects or ACKs a resend",
         (r'''    _check_timeout(timeout)
    con = open_store(path)
    try:
''', r'''    _check_timeout(timeout)
    con = open_store(path)
    try:
        if state(con)[0] >= SEQ_MAX:
            return state(con)  # the store took the last seq there is: nothing can follow it
''')),
    _bug("resume-minus-one", 7,
         "always sends RESUME -1",
         (r'''            writer.write(b"RESUME %d\n" % last)''', r'''            writer.write(b"RESUME -1\n")''')),
    _bug("delete-store", 7,
         "deletes the store at every run",
         (r'''import math
''', r'''import math
import os
'''),
         (r'''    _check_timeout(timeout)
    con = open_store(path)''', r'''    _check_timeout(timeout)
    if os.path.exists(path):
        os.remove(path)
    con = open_store(path)''')),
    _bug("validate-after-open", 7,
         "validates the timeout after opening the store (the DB file appears)",
         (r'''    _check_timeout(timeout)
    con = open_store(path)
    try:
''', r'''    con = open_store(path)
    try:
        _check_timeout(timeout)
''')),
    _bug("db-leaked", 7,
         "closes the DB connection only on success",
         (r'''        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()''', r'''        result = await consume_session(reader, writer, con, timeout, before_ack)
        con.close()
        return result
    finally:
        pass''')),
    _bug("socket-leaked-before-session", 7,
         "leaks the socket when the RESUME write or its drain fails",
         (r'''        except BaseException:
            await _reclaim_after_error(writer, timeout)
            raise
''', r'''        except BaseException:
            raise
''')),
    _bug("stale-resume", 7,
         "sends the cursor minus one (an off-by-one in RESUME)",
         (r'''            writer.write(b"RESUME %d\n" % last)''', r'''            writer.write(b"RESUME %d\n" % (last - 1 if last >= 0 else last))''')),

    # ------------------------------------------------------------ depth (issue 14)
    # Bugs that show only where the other examples never go: past the N-th
    # event, with a second receiver on the store, on a store another writer
    # made, in a process that lives several lives, at the instant of an
    # error. Caught by properties/test_depth_*.py and stateful/test_two_receivers.py.
    _bug("ledger-pruned", 3,
         "prunes ledger rows 200 behind the cursor to keep the store small: an old resend is then Conflict",
         (r"""        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")""", r"""        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        # Keep the store small: the publisher never resends that far back.
        con.execute("DELETE FROM ledger WHERE seq < ?", (seq - 200,))
        con.execute("COMMIT")""")),
    _bug("hook-awaited-in-a-task", 6,
         "awaits what before_ack returns as a task of its own: a KeyboardInterrupt from it escapes the event loop, not the call",
         (r'''                if inspect.isawaitable(result):
                    await result''', r'''                if inspect.isawaitable(result):
                    await asyncio.ensure_future(result)  # run it as a task of its own''')),
    _bug("closing-wait-floored", 6,
         "bounds the closing wait by the timeout but never less than half a second (to give the peer a moment to close)",
         (r'''        writer.close()
        async with asyncio.timeout(timeout):
            await writer.wait_closed()''', r'''        writer.close()
        async with asyncio.timeout(max(timeout, 0.5)):  # give the peer a moment to close
            await writer.wait_closed()''')),
    _bug("timeout-checked-after-first-read", 6,
         "checks the timeout only once the first line has arrived: with an invalid timeout and a silent peer it waits for ever",
         (r'''    try:
        _check_timeout(timeout)
        while True:
            async with asyncio.timeout(timeout):
                line = await reader.readline()
            if not line:
                break''', r'''    try:
        while True:
            async with asyncio.timeout(timeout if valid else None):
                line = await reader.readline()
            _check_timeout(timeout)  # once there is something to bound
            if not line:
                break''')),
    _bug("session-line-cap", 6,
         "caps a session at 256 lines (against a runaway publisher): the rest is silently left unread",
         (r"""        while True:
            async with asyncio.timeout(timeout):
                line = await reader.readline()""", r"""        for _ in range(256):  # a runaway publisher cannot keep us forever
            async with asyncio.timeout(timeout):
                line = await reader.readline()""")),
    _bug("cursor-cached-per-connection", 3,
         "caches each connection's cursor to save a SELECT: stale once another connection writes the store",
         (r"""    con.execute("BEGIN IMMEDIATE")
    try:
        last, _ = state(con)
        if seq > last + 1:""", r"""    con.execute("BEGIN IMMEDIATE")
    try:
        cached = _cursors.get(id(con))
        last = cached[1] if cached is not None and cached[0] is con else state(con)[0]
        if seq > last + 1:"""),
         (r"""        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True""", r"""        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        _cursors[id(con)] = (con, seq)
        return True"""),
         (r"""def apply_event(con, seq, delta, fault=None):""", r"""_cursors = {}  # id(con) -> (con, last): only this connection moves its cursor


def apply_event(con, seq, delta, fault=None):""")),
    # (the cursor read before BEGIN IMMEDIATE: `last-read-before-begin`, below)
    _bug("reinit-lost-ledger", 2,
         "re-initialises a store whose ledger is empty while its cursor is not -1 (taken for a broken store)",
         (r"""            con.execute("SELECT seq, delta FROM ledger LIMIT 0").fetchall()
            con.execute("COMMIT")""", r"""            con.execute("SELECT seq, delta FROM ledger LIMIT 0").fetchall()
            # A cursor with no ledger behind it is a broken store: start it over.
            if con.execute("SELECT COUNT(*) FROM ledger").fetchone()[0] == 0:
                con.execute("UPDATE checkpoint SET last = -1, total = 0 WHERE id = 1")
            con.execute("COMMIT")""")),
    _bug("journal-removed", 2,
         "deletes a leftover -journal file before opening (taken for a stale lock): a hot journal is lost",
         (r"""    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)""",
          r"""    import os
    if os.path.exists(f"{path}-journal"):  # a stale journal from a crashed run
        os.remove(f"{path}-journal")
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)""")),
    _bug("schema-memo-per-path", 2,
         "remembers which paths it initialised and skips the schema there: a store re-created at that path has no tables",
         (r"""    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    try:""", r"""    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    if path in _initialised:
        return con  # its tables exist: this process made them
    try:"""),
         (r"""    except BaseException:
        con.close()
        raise
    return con""", r"""    except BaseException:
        con.close()
        raise
    _initialised.add(path)
    return con"""),
         (r"""def open_store(path):""", r"""_initialised = set()  # paths whose tables this process has made


def open_store(path):""")),
    _bug("replay-memo-per-list", 4,
         "memoises replay per (list, last, limit): a log that grew since gets the old answer",
         (r"""    if not isinstance(events, list):
        raise ValueError(f"events must be a list, not {type(events).__name__}")""",
          r"""    memo = _replayed.get((id(events), last, limit))
    if memo is not None and memo[0] is events:
        return list(memo[1])  # the publisher asks for the same window again and again
    if not isinstance(events, list):
        raise ValueError(f"events must be a list, not {type(events).__name__}")"""),
         (r"""    start = last - first + 1
    return list(events[start:start + limit])""", r"""    start = last - first + 1
    _replayed[(id(events), last, limit)] = (events, events[start:start + limit])
    return list(events[start:start + limit])"""),
         (r"""def replay(events, last, limit):""", r"""_replayed = {}  # (id(list), last, limit) -> (list, answer)


def replay(events, last, limit):""")),
    _bug("errors-deferred-to-eof", 6,
         "skips a gap or conflict, finishes the session and raises the first such error at EOF",
         (r"""            if not line:
                break
            ack = consume_line(con, line)""", r"""            if not line:
                if skipped is not None:
                    raise skipped  # report the bad event once the session is done
                break
            try:
                ack = consume_line(con, line)
            except (Gap, Conflict) as error:
                skipped = skipped or error
                continue"""),
         (r"""    close_timeout = timeout if valid else CLOSE_TIMEOUT_FALLBACK
    try:""", r"""    close_timeout = timeout if valid else CLOSE_TIMEOUT_FALLBACK
    skipped = None
    try:""")),
    _bug("hook-error-after-ack", 6,
         "ACKs first when before_ack fails (so the publisher is not stuck), then raises its error",
         (r"""                result = before_ack(seq)
                if inspect.isawaitable(result):
                    await result
            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()""", r"""                try:
                    result = before_ack(seq)
                    if inspect.isawaitable(result):
                        await result
                except Exception as error:
                    hook_error = error
                else:
                    hook_error = None
            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()
            if before_ack is not None and hook_error is not None:
                raise hook_error""")),

    # ======== issue 12: one bug per clause of SPEC.md that had none (see quality/clauses.py) ========
    _bug("tuple-swapped", 1,
         "returns (delta, seq) instead of (seq, delta)",
         (r'''    return seq, delta''', r'''    return delta, seq''')),
    _bug("plus-accepted", 1,
         "the delta pattern admits a leading '+'",
         (r'''(0|-?[1-9][0-9]*)\n")''', r'''(0|[-+]?[1-9][0-9]*)\n")''')),
    _bug("first-line-only", 1,
         "parses the first line of a buffer that holds more than one",
         (r'''    if line.count(b"\n") != 1:
        raise ValueError(f"frame holds more than one line: {line!r}")
''', r'''    line = line[: line.index(b"\n") + 1]  # the first line
''')),
    _bug("keyword-any-case", 1,
         "matches the keyword case-insensitively ('event 1 2')",
         (r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")''',
          r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n", re.IGNORECASE)''')),
    _bug("exact-bytes-only", 1,
         "checks `type(line) is bytes`: a bytes subclass is refused",
         (r'''    if not isinstance(line, bytes):''', r'''    if type(line) is not bytes:''')),
    _bug("gap-base-exception", 3,
         "declares Gap as a BaseException (so that `except Exception` does not swallow it)",
         (r'''class Gap(Exception):''', r'''class Gap(BaseException):''')),
    _bug("applied-returns-none", 3,
         "forgets to return True after applying a new event",
         (r'''        con.execute("COMMIT")
        return True
''', r'''        con.execute("COMMIT")
''')),
    _bug("duplicate-is-conflict", 3,
         "compares the ledger row itself with the delta: every duplicate is a Conflict",
         (r'''            if row[0] != delta:''', r'''            if row != delta:''')),
    _bug("last-read-before-begin", 3,
         "reads `last` before BEGIN IMMEDIATE: another connection can apply last + 1 in between",
         (r'''    con.execute("BEGIN IMMEDIATE")
    try:
        last, _ = state(con)
''', r'''    last, _ = state(con)
    con.execute("BEGIN IMMEDIATE")
    try:
''')),
    _bug("locked-is-duplicate", 3,
         "takes a locked store for an event another receiver is applying and returns False",
         (r'''    # Outside the try: if BEGIN fails, there is no transaction of ours to undo.
    con.execute("BEGIN IMMEDIATE")
''', r'''    try:
        con.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:  # busy: another receiver has it
        return False
''')),
    _bug("resync-base-exception", 4,
         "declares ResyncRequired as a BaseException",
         (r'''class ResyncRequired(Exception):''', r'''class ResyncRequired(BaseException):''')),
    _bug("exact-list-only", 4,
         "checks `type(events) is list`: a list subclass is refused",
         (r'''    if not isinstance(events, list):''', r'''    if type(events) is not list:''')),
    _bug("list-items-accepted", 4,
         "takes a 2-item list for a (seq, delta) tuple",
         (r'''        if not isinstance(item, tuple) or len(item) != 2:''',
          r'''        if not isinstance(item, (tuple, list)) or len(item) != 2:''')),
    _bug("log-delta-unchecked", 4,
         "never checks the deltas of the log's items",
         (r'''        _check_int(f"events[{index}] delta", delta, DELTA_MIN, DELTA_MAX)
''', "")),
    _bug("returns-the-log-itself", 4,
         "returns the caller's own list when the whole log is to be replayed",
         (r'''    start = last - first + 1
''', r'''    start = last - first + 1
    if start == 0 and limit >= len(events):
        return events  # nothing to cut
''')),
    _bug("end-cursor-refused", 4,
         "off by one in the past-the-end test: a cursor at the final seq is ValueError instead of []",
         (r'''    if last > final:''', r'''    if last >= final:''')),
    _bug("items-normalised-in-place", 4,
         "turns the caller's namedtuple items into plain tuples, in the caller's list",
         (r'''        seq, delta = item
''', r'''        seq, delta = item
        events[index] = (seq, delta)
''')),
    _bug("stale-eof-state", 6,
         "returns the state read when the session began, not the state at EOF",
         (r'''    valid = _is_valid_timeout(timeout)
''', r'''    initial = state(con)
    valid = _is_valid_timeout(timeout)
'''),
         (r'''    await _reclaim(writer, close_timeout)
    return state(con)''', r'''    await _reclaim(writer, close_timeout)
    return initial''')),
    _bug("unbounded-drain", 6,
         "the ACK's drain is not bounded by the timeout: a peer that never reads hangs the session",
         (r'''            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()''', r'''            writer.write(ack)
            await writer.drain()''')),
    _bug("no-abort-on-close-timeout", 6,
         "a closing wait that times out is given up without abort(): the transport is left open",
         (r'''    except (TimeoutError, ConnectionError):
        writer.transport.abort()
    except BaseException:''', r'''    except (TimeoutError, ConnectionError):
        pass
    except BaseException:''')),
    _bug("closes-db", 6,
         "closes the DB connection at the end of the session",
         (r'''    await _reclaim(writer, close_timeout)
    return state(con)''', r'''    await _reclaim(writer, close_timeout)
    result = state(con)
    con.close()
    return result''')),
    _bug("hook-skips-duplicates", 6,
         "calls before_ack only for newly applied events, not for duplicates",
         (r'''            ack = consume_line(con, line)
            if before_ack is not None:''', r'''            fresh = parse_line(line)[0] > state(con)[0]
            ack = consume_line(con, line)
            if before_ack is not None and fresh:''')),
    _bug("partial-line-is-eof", 6,
         "takes a last line without LF for the end of the session and returns the state",
         (r'''            if not line:
                break''', r'''            if not line.endswith(b"\n"):
                break  # EOF, possibly in the middle of a frame''')),
    _bug("cut-off-line-mended", 6,
         "puts the LF back on a last line cut off by EOF and commits it",
         (r'''            if not line:
                break''', r'''            if not line:
                break
            if not line.endswith(b"\n"):
                line += b"\n"  # the publisher closed right after its last frame''')),
    _bug("over-long-line-skipped", 6,
         "skips a line longer than the reader's limit and reads on",
         (r'''            async with asyncio.timeout(timeout):
                line = await reader.readline()''', r'''            try:
                async with asyncio.timeout(timeout):
                    line = await reader.readline()
            except ValueError:  # over the reader's limit: skip it
                continue''')),
    _bug("closing-timeout-raises", 6,
         "after aborting a closing wait that timed out, raises TimeoutError instead of returning the state",
         (r'''    except (TimeoutError, ConnectionError):
        writer.transport.abort()
    except BaseException:''', r'''    except (TimeoutError, ConnectionError):
        writer.transport.abort()
        raise
    except BaseException:''')),
    _bug("no-abort-on-other-closing-error", 6,
         "a closing wait that fails with anything but TimeoutError or ConnectionError is not aborted",
         (r'''    except BaseException:
        writer.transport.abort()
        raise
''', r'''    except BaseException:
        raise
''')),
    _bug("huge-int-timeout-overflows", 6,
         "converts the timeout with float() unguarded: an int too large for a float raises OverflowError",
         (r'''    try:
        seconds = float(timeout)
    except OverflowError:  # an int too large to become a float
        return False
''', r'''    seconds = float(timeout)
''')),
    _bug("connect-before-store", 7,
         "connects before opening the store",
         (r'''    con = open_store(path)
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)
''', r'''    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)
    con = open_store(path)
    try:
''')),
    _bug("session-resumed-after-reset", 7,
         "takes a reset in the session for a publisher that restarted: connects once more and resumes from the store, on a second connection",
         (r'''        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()''', r'''        try:
            return await consume_session(reader, writer, con, timeout, before_ack)
        except ConnectionResetError:  # the publisher restarted: the store knows where we are
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)
            writer.write(b"RESUME %d\n" % state(con)[0])
            return await consume_session(reader, writer, con, timeout, before_ack)
    finally:
        con.close()''')),
    _bug("reader-limit-default", 7,
         "opens the connection with asyncio's default reader limit (64 KiB): a line past 64 bytes whose LF never comes waits for the timeout",
         (r'''            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''            reader, writer = await asyncio.open_connection(host, port)''')),
    _bug("resume-drain-unbounded", 7,
         "the RESUME line's drain is not bounded by the timeout",
         (r'''            writer.write(b"RESUME %d\n" % last)
            async with asyncio.timeout(timeout):
                await writer.drain()''', r'''            writer.write(b"RESUME %d\n" % last)
            await writer.drain()''')),
    _bug("hook-not-passed", 7,
         "does not hand before_ack over to consume_session",
         (r'''consume_session(reader, writer, con, timeout, before_ack)''',
          r'''consume_session(reader, writer, con, timeout)''')),
    _bug("run-client-swallows-cancellation", 7,
         "run_client takes a cancellation for the end of the session and returns the state",
         (r'''        return await consume_session(reader, writer, con, timeout, before_ack)
    finally:''', r'''        try:
            return await consume_session(reader, writer, con, timeout, before_ack)
        except asyncio.CancelledError:
            return state(con)
    finally:''')),

    # ------------------------------------------------------------ the domains' corners (docs/DOMAINS.md)
    _bug("int-subclass-refused", 3,
         "takes only exact ints: an IntEnum or a user's int subclass is refused as a seq or delta",
         (r'''    return isinstance(value, int) and not isinstance(value, bool)''',
          r'''    return type(value) is int''')),
    _bug("index-accepted", 3,
         "converts seq and delta with operator.index (numpy's integers too): any object with __index__ passes as an int",
         (r'''    _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try''', r'''    if not isinstance(seq, bool) and not isinstance(delta, bool):
        try:  # numpy integers and other int-like values
            seq, delta = operator.index(seq), operator.index(delta)
        except TypeError:
            pass
    _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try'''),
         (r'''import asyncio
''', r'''import asyncio
import operator
''')),
    _bug("seq-formatted-into-sql", 3,
         "writes the cursor with an f-string (seq is a checked int): a user's int subclass, whose str() is not its digits, breaks the SQL",
         (r'''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))''',
          r'''        con.execute(f"UPDATE checkpoint SET last = {seq} WHERE id = 1")  # seq is a checked int''')),
    _bug("falsy-fault-skipped", 3,
         "calls fault only if it is truthy: a falsy callable is never called",
         (r'''        if fault is not None:
            fault()''', r'''        if fault:
            fault()''')),
    _bug("fault-result-as-failure", 3,
         "reads what fault() returns and fails the event (rolled back) when it is truthy",
         (r'''        if fault is not None:
            fault()''', r'''        if fault is not None and fault():
            raise RuntimeError("fault() asked for a failure")''')),
    _bug("hook-integrity-error-as-conflict", 3,
         "takes any sqlite3.IntegrityError in the transaction for a duplicate seq: a fault's own becomes Conflict",
         (r'''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True
''', r'''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True
    except sqlite3.IntegrityError as error:  # the ledger already holds this seq
        _rollback(con)
        raise Conflict(f"event {seq} is already in the ledger") from error
''')),
    _bug("fault-error-returns-false", 3,
         "takes an Exception from fault for 'not applied': rolls back and returns False instead of raising it",
         (r'''        if fault is not None:
            fault()''', r'''        if fault is not None:
            try:
                fault()
            except Exception:
                _rollback(con)
                return False''')),
    _bug("uncallable-fault-ignored", 3,
         "skips a fault that cannot be called instead of failing (and rolling back) when calling it",
         (r'''        if fault is not None:
            fault()''', r'''        if callable(fault):
            fault()''')),
    _bug("falsy-hook-skipped", 6,
         "calls before_ack only if it is truthy: a falsy callable is never called",
         (r'''            if before_ack is not None:
                seq, _ = parse_line(line)''', r'''            if before_ack:
                seq, _ = parse_line(line)''')),
    _bug("awaitable-by-function-kind", 6,
         "awaits before_ack's result only when before_ack is an async def: an awaitable from a plain callable is dropped",
         (r'''                if inspect.isawaitable(result):''',
          r'''                if inspect.iscoroutinefunction(before_ack):''')),
    _bug("timeout-subclass-refused", 6,
         "takes only exact int and float timeouts: an int or float subclass is refused",
         (r'''    if not _is_int(timeout) and not isinstance(timeout, float):''',
          r'''    if type(timeout) not in (int, float):''')),
    _bug("store-beside-module", 2,
         "puts a relative store path beside the module, not in the working folder",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    if isinstance(path, str) and path not in ("", ":memory:"):
        import os
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), path)
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''')),
    _bug("path-as-uri", 2,
         "opens the store through a file: URI built from the path: '?', '#' and '%' in a name change the file",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    if isinstance(path, str) and path not in ("", ":memory:"):
        con = sqlite3.connect(f"file:{path}", timeout=1.0, isolation_level=None, uri=True)
    else:
        con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''')),
    _bug("ipv4-only", 7,
         "connects over IPv4 only (family=AF_INET): an IPv6 host is never reached",
         (r'''            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''            import socket
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX, family=socket.AF_INET)''')),
    _bug("port-must-be-int", 7,
         "refuses a port given as a string of digits",
         (r'''    _check_timeout(timeout)
    con = open_store(path)''', r'''    _check_timeout(timeout)
    if not isinstance(port, int):
        raise ValueError(f"port must be an int, not {port!r}")
    con = open_store(path)''')),
    _bug("timeout-any-real", 6,
         "takes any number with __float__ as a timeout: a Fraction or a Decimal is accepted",
         (r'''    if not _is_int(timeout) and not isinstance(timeout, float):''',
          r'''    if isinstance(timeout, bool) or not hasattr(timeout, "__float__"):''')),

    # ------------------------------------------------------------ one per class of docs/DOMAINS.md (issue 22)
    # line
    _bug("non-ascii-dropped", 1,
         "drops stray non-ASCII bytes (line noise) instead of refusing the line",
         (r'''    if not line.isascii():
        raise ValueError(f"frame is not ASCII: {line!r}")''', r'''    line = bytes(byte for byte in line if byte < 0x80)  # drop line noise''')),
    _bug("any-whitespace-separator", 1,
         "takes any run of spaces or tabs between the fields",
         (r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")''',
          r'''_FRAME = re.compile(rb"EVENT[ \t]+(0|[1-9][0-9]*)[ \t]+(0|-?[1-9][0-9]*)\n")''')),
    _bug("underscore-accepted", 1,
         "allows underscores between digits, as Python literals do ('1_000')",
         (r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")''',
          r'''_FRAME = re.compile(rb"EVENT (0|[1-9](?:_?[0-9])*) (0|-?[1-9](?:_?[0-9])*)\n")''')),
    _bug("blank-line-is-none", 1,
         "returns None for a blank line (a keep-alive) instead of raising ValueError",
         (r'''    # Check that this is one complete frame before looking inside it.
''', r'''    if not line.strip():
        return None  # a keep-alive: nothing to apply
    # Check that this is one complete frame before looking inside it.
''')),
    _bug("sign-stripped", 1,
         "splits the frame on spaces and strips the delta's minus signs with lstrip: '--5' reads as -5",
         (r'''    match = _FRAME.fullmatch(line)
    if match is None:
        raise ValueError(f"not a frame 'EVENT <seq> <delta>\\n': {line!r}")
    seq, delta = int(match[1]), int(match[2])
''', r'''    fields = line[:-1].split(b" ")
    if len(fields) != 3 or fields[0] != b"EVENT":
        raise ValueError(f"not a frame 'EVENT <seq> <delta>\\n': {line!r}")
    seq_text, delta_text = fields[1], fields[2]
    negative = delta_text.startswith(b"-")
    digits = delta_text.lstrip(b"-")
    for text in (seq_text, digits):
        if not text.isdigit() or (text[:1] == b"0" and len(text) > 1):
            raise ValueError(f"not a canonical number in {line!r}")
    if negative and digits == b"0":
        raise ValueError(f"-0 is not a delta: {line!r}")
    seq = int(seq_text)
    delta = -int(digits) if negative else int(digits)
''')),
    _bug("eof-word-is-none", 1,
         "returns None for a line 'EOF' (the end of the stream spelled out) instead of raising ValueError",
         (r'''    # Check that this is one complete frame before looking inside it.
''', r'''    if line == b"EOF\n":
        return None  # the publisher says the stream is over
    # Check that this is one complete frame before looking inside it.
''')),
    _bug("hex-accepted", 1,
         "reads the seq with int(x, 0), so a 0x-prefixed hex seq passes",
         (r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")''',
          r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*|0[xX][0-9a-fA-F]+) (0|-?[1-9][0-9]*)\n")'''),
         (r'''    seq, delta = int(match[1]), int(match[2])''', r'''    seq, delta = int(match[1], 0), int(match[2])''')),
    _bug("extra-fields-ignored", 1,
         "takes the first three fields and ignores any after them (room for future fields)",
         (r'''    match = _FRAME.fullmatch(line)''',
          r'''    match = _FRAME.fullmatch(b" ".join(line[:-1].split(b" ")[:3]) + b"\n")''')),
    _bug("long-frame-overflow-error", 1,
         "refuses a frame over 64 bytes with OverflowError, not ValueError",
         (r'''        raise ValueError(f"frame is {len(line)} bytes, over the {FRAME_MAX}-byte limit")''',
          r'''        raise OverflowError(f"frame is {len(line)} bytes, over the {FRAME_MAX}-byte limit")''')),
    _bug("bom-stripped", 1,
         "drops a UTF-8 byte-order mark before the frame (Windows tools write one at a text's start)",
         (r'''    # Check that this is one complete frame before looking inside it.
''', r'''    if line.startswith(b"\xef\xbb\xbf"):  # a BOM from a Windows tool
        line = line[3:]
    # Check that this is one complete frame before looking inside it.
''')),
    _bug("nul-stripped", 1,
         "removes NUL bytes (a C publisher's padding) before checking the frame",
         (r'''    # Check that this is one complete frame before looking inside it.
''', r'''    line = line.replace(b"\0", b"")  # padding from C publishers
''')),
    _bug("str-encoded", 1,
         "accepts a str and encodes it as ASCII",
         (r'''    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes''', r'''    if isinstance(line, str):
        line = line.encode("ascii")
    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes''')),
    _bug("memoryview-accepted", 1,
         "accepts a memoryview (a zero-copy read) as well as bytes",
         (r'''    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes''', r'''    if isinstance(line, memoryview):
        line = line.tobytes()
    if not isinstance(line, bytes):
        raise ValueError(f"a frame must be bytes''')),
    _bug("non-bytes-typeerror", 1,
         "raises TypeError, not ValueError, for a line that is not bytes",
         (r'''        raise ValueError(f"a frame must be bytes''', r'''        raise TypeError(f"a frame must be bytes''')),
    _bug("zero-refused", 1,
         "the no-leading-zero pattern forgets 0 itself: seq 0 and delta 0 are refused",
         (r'''_FRAME = re.compile(rb"EVENT (0|[1-9][0-9]*) (0|-?[1-9][0-9]*)\n")''',
          r'''_FRAME = re.compile(rb"EVENT ([1-9][0-9]*) (-?[1-9][0-9]*)\n")''')),
    _bug("seq-max-off-by-one", 1,
         "parse_line's seq bound is one too high: 2147483648 passes",
         (r'''    _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    return seq, delta''', r'''    _check_int("seq", seq, SEQ_MIN, SEQ_MAX + 1)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    return seq, delta''')),
    # seq, delta, last, limit (one check shared by steps 3 and 4)
    _bug("integral-float-accepted", 3,
         "accepts a float with an integral value (3.0) where an int is asked for",
         (r'''    if not _is_int(value):
        raise ValueError(f"{name} must be an int''', r'''    if not (_is_int(value) or isinstance(value, float) and value.is_integer()):
        raise ValueError(f"{name} must be an int''')),
    _bug("decimal-accepted", 3,
         "accepts a Decimal with no fractional part (as a database driver returns numbers) where an int is asked for",
         (r'''    if not _is_int(value):
        raise ValueError(f"{name} must be an int''', r'''    import decimal
    if not (_is_int(value) or isinstance(value, decimal.Decimal) and value.is_finite()
            and value == value.to_integral_value()):
        raise ValueError(f"{name} must be an int''')),
    _bug("rational-accepted", 3,
         "accepts any rational number whose denominator is 1 (Fraction(3)) where an int is asked for",
         (r'''    if not _is_int(value):
        raise ValueError(f"{name} must be an int''', r'''    import numbers
    if isinstance(value, bool) or not isinstance(value, numbers.Rational) or value.denominator != 1:
        raise ValueError(f"{name} must be an int''')),
    _bug("non-int-typeerror", 3,
         "raises TypeError, not ValueError, for an argument that is not an int",
         (r'''        raise ValueError(f"{name} must be an int''', r'''        raise TypeError(f"{name} must be an int''')),
    _bug("apply-delta-unchecked", 3,
         "apply_event never checks the delta's range (parse_line did, for frames)",
         (r'''    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try''', r'''    _check_int("delta", delta, -(2**63), 2**63 - 1)
    # Outside the try''')),
    _bug("delta-checked-late", 3,
         "checks delta only just before writing it: on a gap or a duplicate an invalid delta gives Gap, Conflict or False",
         (r'''    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try''', r'''    # Outside the try'''),
         (r'''        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))''',
          r'''        _check_int("delta", delta, DELTA_MIN, DELTA_MAX)  # before it is written
        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))''')),
    # A statement of the call fails (resume.testing.drivers.statements, a FAKE failure at a drawn statement).
    _bug("rollback-around-fault-only", 3,
         "rolls back only where it expects a failure (Gap, Conflict, fault()): a statement that fails leaves the transaction open",
         (r'''        if fault is not None:
            fault()
''', r'''        if fault is not None:
            try:
                fault()
            except BaseException:  # the fault undoes the event
                con.execute("ROLLBACK")
                raise
'''),
         (r'''    except BaseException:
        _rollback(con)
        raise


# ---------------------------------------------------------------- step 4''', r'''    except (Gap, Conflict):
        _rollback(con)
        raise


# ---------------------------------------------------------------- step 4''')),
    _bug("cancel-closing-error-wins", 6,
         "reclaims the connection after a cancellation with the plain reclaim: a closing wait that raises "
         "another OSError then replaces the cancellation (issue 39: a reclaim site x a closing outcome)",
         (r'''    except BaseException:
        await _reclaim_after_error(writer, close_timeout)
        raise
    await _reclaim(writer, close_timeout)
    return state(con)''', r'''    except asyncio.CancelledError:
        await _reclaim(writer, close_timeout)
        raise
    except BaseException:
        await _reclaim_after_error(writer, close_timeout)
        raise
    await _reclaim(writer, close_timeout)
    return state(con)''')),
    _bug("resume-closing-error-wins", 7,
         "reclaims the socket after a failed RESUME drain with the session's plain reclaim: a closing wait "
         "that raises another OSError then replaces the drain's error (a learner's own file, issue 39)",
         (r'''        except BaseException:
            await _reclaim_after_error(writer, timeout)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)''', r'''        except BaseException:
            await _reclaim(writer, timeout)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)''')),
    _bug("close-on-exception-only", 2,
         "closes the connection when initialisation fails with an Exception only: a KeyboardInterrupt there "
         "leaves it open (a learner's own file, issue 38)",
         (r'''        con.execute("PRAGMA synchronous=FULL")
    except BaseException:
        con.close()
        raise''', r'''        con.execute("PRAGMA synchronous=FULL")
    except Exception:
        con.close()
        raise''')),
    _bug("close-on-sqlite-error-only", 2,
         "closes the connection when initialisation fails with an sqlite3 error only: any other failure leaves it open",
         (r'''        con.execute("PRAGMA synchronous=FULL")
    except BaseException:
        con.close()
        raise''', r'''        con.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error:  # a store we cannot use: do not leave it open
        con.close()
        raise''')),
    _bug("busy-timeout-after-init", 2,
         "connects with sqlite3's default 5 s timeout and sets the 1 s busy timeout after initialising the store",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    con = sqlite3.connect(path, isolation_level=None)'''),
         (r'''        con.execute("PRAGMA synchronous=FULL")
    except BaseException:''', r'''        con.execute("PRAGMA synchronous=FULL")
        con.execute("PRAGMA busy_timeout = 1000")  # once the store is set up
    except BaseException:''')),
    _bug("begin-retried", 3,
         "tries BEGIN IMMEDIATE three times before giving up on a locked store (another receiver's commit is brief)",
         (r'''    # Outside the try: if BEGIN fails, there is no transaction of ours to undo.
    con.execute("BEGIN IMMEDIATE")''', r'''    # Outside the try: if BEGIN fails, there is no transaction of ours to undo.
    for attempt in range(3):  # another receiver's commit is brief: try again before giving up
        try:
            con.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError:
            if attempt == 2:
                raise''')),
    _bug("validate-after-begin", 3,
         "checks seq and delta inside the transaction: on a locked store an invalid argument waits and gives OperationalError",
         (r'''    _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try''', r'''    # Outside the try'''),
         (r'''    con.execute("BEGIN IMMEDIATE")
    try:
        last, _ = state(con)''', r'''    con.execute("BEGIN IMMEDIATE")
    try:
        _check_int("seq", seq, SEQ_MIN, SEQ_MAX)
        _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
        last, _ = state(con)''')),
    _bug("total-read-before-lock", 3,
         "reads the total before BEGIN IMMEDIATE and writes back its sum: another writer's event in between is lost",
         (r'''    con.execute("BEGIN IMMEDIATE")
    try:
        last, _ = state(con)''', r'''    _, total = state(con)
    con.execute("BEGIN IMMEDIATE")
    try:
        last = con.execute("SELECT last FROM checkpoint WHERE id = 1").fetchone()[0]'''),
         (r'''        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))''',
          r'''        con.execute("UPDATE checkpoint SET total = ? WHERE id = 1", (total + delta,))''')),
    _bug("apply-delta-exclusive", 3,
         "apply_event's delta bounds are exclusive: -1000 and 1000 are refused",
         (r'''    _check_int("delta", delta, DELTA_MIN, DELTA_MAX)
    # Outside the try''', r'''    _check_int("delta", delta, DELTA_MIN + 1, DELTA_MAX - 1)
    # Outside the try''')),
    # events, last, limit
    _bug("tuple-log-accepted", 4,
         "accepts a tuple of events as well as a list",
         (r'''    if not isinstance(events, list):''', r'''    if not isinstance(events, (list, tuple)):''')),
    _bug("empty-log-returns-empty", 4,
         "returns [] for an empty log instead of refusing it",
         (r'''    if not LOG_MAX >= len(events) >= 1:''', r'''    if not events:
        return []
    if not LOG_MAX >= len(events) >= 1:''')),
    _bug("extra-item-fields-ignored", 4,
         "takes the first two fields of a longer tuple item and ignores the rest",
         (r'''        if not isinstance(item, tuple) or len(item) != 2:
            raise ValueError(f"events[{index}] must be a (seq, delta) tuple, got {item!r}")
        seq, delta = item''', r'''        if not isinstance(item, tuple) or len(item) < 2:
            raise ValueError(f"events[{index}] must be a (seq, delta) tuple, got {item!r}")
        seq, delta = item[:2]''')),
    _bug("descending-accepted", 4,
         "checks that seqs are consecutive in either direction: a descending log passes",
         (r'''        if previous is not None and seq != previous + 1:''',
          r'''        if previous is not None and abs(seq - previous) != 1:''')),
    _bug("repeats-accepted", 4,
         "tolerates an item repeated (a publisher's retry) in the log",
         (r'''        if previous is not None and seq != previous + 1:''',
          r'''        if previous is not None and seq not in (previous, previous + 1):''')),
    _bug("log-seq-unbounded", 4,
         "checks the log's seqs against SQLite's INTEGER range, not the contract's",
         (r'''        _check_int(f"events[{index}] seq", seq, SEQ_MIN, SEQ_MAX)''',
          r'''        _check_int(f"events[{index}] seq", seq, SEQ_MIN, 2**63 - 1)''')),
    _bug("frame-items-parsed", 4,
         "accepts raw frames (bytes) as items of the log and parses them first",
         (r'''    if not LOG_MAX >= len(events) >= 1:''',
          r'''    # A log may hold the frames as they were received.
    events = [parse_line(item) if isinstance(item, bytes) else item for item in events]
    if not LOG_MAX >= len(events) >= 1:''')),
    _bug("log-top-seq-refused", 4,
         "replay's seq bound is exclusive: a log reaching seq 2147483647 is refused",
         (r'''        _check_int(f"events[{index}] seq", seq, SEQ_MIN, SEQ_MAX)''',
          r'''        _check_int(f"events[{index}] seq", seq, SEQ_MIN, SEQ_MAX - 1)''')),
    _bug("limit-zero-accepted", 4,
         "accepts limit 0 (a probe that returns nothing)",
         (r'''    _check_int("limit", limit, LIMIT_MIN, LIMIT_MAX)''', r'''    _check_int("limit", limit, 0, LIMIT_MAX)''')),
    _bug("resync-gap-of-one-tolerated", 4,
         "off by one in the resync test the other way: a cursor two before the log's start replays from its start",
         (r'''    if last < first - 1:
        raise ResyncRequired''', r'''    if last < first - 2:
        raise ResyncRequired'''),
         (r'''    start = last - first + 1''', r'''    start = max(0, last - first + 1)''')),
    # path
    _bug("path-must-be-str", 2,
         "refuses a path that is not a str (a pathlib.Path, bytes)",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    if not isinstance(path, str):
        raise ValueError(f"path must be a str, not {type(path).__name__}")
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''')),
    _bug("path-str-converted", 2,
         "passes str(path) to sqlite3.connect: a bytes path names another file (b'...')",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    con = sqlite3.connect(str(path), timeout=1.0, isolation_level=None)''')),
    _bug("path-made-absolute", 2,
         "resolves the path to an absolute one first: ':memory:' and '' become files in the working folder",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    import os
    path = os.path.abspath(path)
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''')),
    _bug("parent-folders-created", 2,
         "creates the store's missing parent folders",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    import os
    if os.fsdecode(path) not in ("", ":memory:"):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''')),
    _bug("folder-gets-default-name", 2,
         "given a folder, opens store.db inside it",
         (r'''    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''',
          r'''    import os
    if os.path.isdir(path):
        path = os.path.join(path, "store.db")
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None)''')),
    # timeout
    _bug("timeout-int-refused", 6,
         "takes only a float timeout: an int is refused",
         (r'''    if not _is_int(timeout) and not isinstance(timeout, float):''',
          r'''    if not isinstance(timeout, float):''')),
    _bug("timeout-truncated-to-int", 6,
         "bounds each read by int(timeout) whole seconds: a timeout under 1 s times out at once",
         (r'''            async with asyncio.timeout(timeout):
                line = await reader.readline()''', r'''            async with asyncio.timeout(int(timeout)):
                line = await reader.readline()''')),
    _bug("timeout-zero-accepted", 6,
         "the timeout's lower bound is inclusive: 0 is accepted",
         (r'''    return 0 < seconds < math.inf  # False for NaN too''',
          r'''    return 0 <= seconds < math.inf  # False for NaN too''')),
    _bug("timeout-magnitude", 6,
         "takes a negative timeout for its magnitude (a sign slip)",
         (r'''    return 0 < seconds < math.inf  # False for NaN too''',
          r'''    return 0 < abs(seconds) < math.inf  # False for NaN too''')),
    _bug("timeout-bool-accepted", 6,
         "checks isinstance(timeout, (int, float)) and forgets that True is an int",
         (r'''    if not _is_int(timeout) and not isinstance(timeout, float):''',
          r'''    if not isinstance(timeout, (int, float)):''')),
    _bug("timeout-str-parsed", 6,
         "takes a timeout given as a string of a number (from a config file) for valid",
         (r'''    if not _is_int(timeout) and not isinstance(timeout, float):''',
          r'''    if isinstance(timeout, str):
        try:
            timeout = float(timeout)
        except ValueError:
            return False
    if not _is_int(timeout) and not isinstance(timeout, float):''')),
    _bug("timeout-under-clock-resolution-refused", 6,
         "refuses a timeout under a microsecond (below the event loop clock's resolution, its author thought): the smallest positive float is valid",
         (r'''    return 0 < seconds < math.inf  # False for NaN too''',
          r'''    return 1e-6 <= seconds < math.inf  # False for NaN too''')),
    _bug("timeout-over-a-day-refused", 6,
         "refuses a timeout over a day as a unit slip (milliseconds for seconds): every finite float is valid",
         (r'''    return 0 < seconds < math.inf  # False for NaN too''',
          r'''    return 0 < seconds <= 86400  # False for NaN too''')),
    _bug("nan-timeout-accepted", 6,
         "refuses a timeout with `timeout <= 0 or timeout == math.inf`: NaN passes",
         (r'''    return 0 < seconds < math.inf  # False for NaN too''',
          r'''    return not (seconds <= 0 or seconds == math.inf)''')),
    # reader and writer
    _bug("reset-is-eof", 6,
         "takes a connection reset while reading for the end of the session and returns the state",
         (r'''            async with asyncio.timeout(timeout):
                line = await reader.readline()''', r'''            try:
                async with asyncio.timeout(timeout):
                    line = await reader.readline()
            except ConnectionResetError:
                line = b""''')),
    _bug("no-abort-after-closing-reset", 6,
         "a closing wait that fails with a reset is given up without abort(), as if a reset peer left nothing open",
         (r'''    except (TimeoutError, ConnectionError):
        writer.transport.abort()
    except BaseException:''', r'''    except TimeoutError:
        writer.transport.abort()
    except ConnectionError:
        pass  # the peer reset the connection: nothing left to abort
    except BaseException:''')),
    _bug("closing-reset-raised", 6,
         "absorbs only a TimeoutError of the closing wait: a ConnectionError there replaces the returned state",
         (r'''    except (TimeoutError, ConnectionError):
        writer.transport.abort()''', r'''    except TimeoutError:
        writer.transport.abort()''')),
    _bug("drain-reset-ends-session", 6,
         "takes a connection reset at an ACK's drain for the peer's goodbye: ends the session and returns the state",
         (r'''            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()''', r'''            writer.write(ack)
            try:
                async with asyncio.timeout(timeout):
                    await writer.drain()
            except ConnectionError:
                break''')),
    _bug("fallback-bound-by-sign", 6,
         "chooses the closing wait's bound by `timeout > 0` alone: an infinite timeout bounds nothing",
         (r'''    close_timeout = timeout if valid else CLOSE_TIMEOUT_FALLBACK''',
          r'''    close_timeout = timeout if isinstance(timeout, (int, float)) and timeout > 0 else CLOSE_TIMEOUT_FALLBACK''')),
    _bug("session-valueerror-rewrapped", 6,
         "wraps a ValueError met while taking a line in one of its own that names the line: before_ack's too",
         (r'''            ack = consume_line(con, line)
            if before_ack is not None:
                seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
                result = before_ack(seq)
                if inspect.isawaitable(result):
                    await result''', r'''            try:
                ack = consume_line(con, line)
                if before_ack is not None:
                    seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
                    result = before_ack(seq)
                    if inspect.isawaitable(result):
                        await result
            except ValueError as error:
                raise ValueError(f"line {line!r} refused: {error}") from error''')),
    _bug("eof-state-before-reclaim", 6,
         "reads the state at EOF before reclaiming the connection, outside the try: if that read fails, the socket stays open",
         (r'''    await _reclaim(writer, close_timeout)
    return state(con)''', r'''    result = state(con)  # at EOF: nothing more can change it
    await _reclaim(writer, close_timeout)
    return result''')),
    _bug("first-read-given-longer", 6,
         "gives the first read after RESUME twice the timeout (the publisher must first find its place in its log)",
         (r'''        _check_timeout(timeout)
        while True:
            async with asyncio.timeout(timeout):
                line = await reader.readline()''', r'''        _check_timeout(timeout)
        bound = 2 * timeout  # the first line: the publisher looks up the cursor first
        while True:
            async with asyncio.timeout(bound):
                line = await reader.readline()
            bound = timeout''')),
    _bug("drain-shares-read-deadline", 6,
         "bounds an ACK's drain by its line's read deadline: a line that came late leaves its drain less than the timeout",
         (r'''            async with asyncio.timeout(timeout):
                line = await reader.readline()''', r'''            deadline = asyncio.get_running_loop().time() + timeout  # this line's, read and ACK
            async with asyncio.timeout_at(deadline):
                line = await reader.readline()'''),
         (r'''            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()''', r'''            writer.write(ack)
            async with asyncio.timeout_at(deadline):
                await writer.drain()''')),
    _bug("awaitable-by-dunder", 6,
         "takes an object with `__await__` for an awaitable: a generator-based coroutine before_ack returns is never awaited",
         (r'''                if inspect.isawaitable(result):''', r'''                if hasattr(result, "__await__"):''')),
    # before_ack
    _bug("hook-result-awaited", 6,
         "awaits whatever before_ack returns unless it is None",
         (r'''                if inspect.isawaitable(result):''', r'''                if result is not None:''')),
    _bug("uncallable-hook-ignored", 6,
         "skips a before_ack that cannot be called instead of failing with the TypeError of calling it",
         (r'''            if before_ack is not None:
                seq, _ = parse_line(line)''', r'''            if callable(before_ack):
                seq, _ = parse_line(line)''')),
    _bug("awaitable-error-swallowed", 6,
         "swallows an Exception from before_ack's awaitable (a failed notification must not stop the stream)",
         (r'''                if inspect.isawaitable(result):
                    await result''', r'''                if inspect.isawaitable(result):
                    try:
                        await result
                    except Exception:
                        pass''')),
    # host
    _bug("resume-never-backwards", 7,
         "remembers the cursor each run reached per path and never RESUMEs below it: a new store at that path gets a stale RESUME",
         (r'''async def run_client(host, port, path, timeout, before_ack=None):''',
          r'''_reached = {}  # path -> the cursor a run reached there: a RESUME never goes backwards


async def run_client(host, port, path, timeout, before_ack=None):'''),
         (r'''            last, _ = state(con)
            writer.write(b"RESUME %d\n" % last)''', r'''            last = max(state(con)[0], _reached.get(path, -1))
            writer.write(b"RESUME %d\n" % last)'''),
         (r'''        return await consume_session(reader, writer, con, timeout, before_ack)''',
          r'''        result = await consume_session(reader, writer, con, timeout, before_ack)
        _reached[path] = result[0]
        return result''')),
    _bug("cursor-read-before-store-guard", 7,
         "reads the cursor as soon as the store is open, before the try that closes the store: a failing read leaves it open",
         (r'''    con = open_store(path)
    try:
        async with asyncio.timeout(timeout):''', r'''    con = open_store(path)
    last, _ = state(con)  # the store as it is now: connecting may take a while
    try:
        async with asyncio.timeout(timeout):'''),
         (r'''        try:
            last, _ = state(con)
            writer.write(b"RESUME %d\n" % last)''', r'''        try:
            writer.write(b"RESUME %d\n" % last)''')),
    _bug("host-stripped", 7,
         "strips blanks around a host (one read from a config file keeps its newline) instead of handing it on as given",
         (r'''            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''            if isinstance(host, str):
                host = host.strip()  # read from a file or an environment variable
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''')),
    _bug("resume-reclaim-by-fallback", 7,
         "reclaims the socket after a failed RESUME with the 1 s fallback bound, not the timeout",
         (r'''        except BaseException:
            await _reclaim_after_error(writer, timeout)
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)''',
          r'''        except BaseException:
            await _reclaim_after_error(writer, CLOSE_TIMEOUT_FALLBACK)  # the setup's own bound
            raise
        return await consume_session(reader, writer, con, timeout, before_ack)''')),
    _bug("cursor-read-outside-reclaim", 7,
         "reads the cursor for RESUME after connecting but before the try that reclaims the socket",
         (r'''        try:
            last, _ = state(con)
            writer.write(b"RESUME %d\n" % last)''',
          r'''        last, _ = state(con)
        try:
            writer.write(b"RESUME %d\n" % last)''')),
    _bug("host-brackets-stripped", 7,
         "unwraps a host written as in a URL ('[::1]' becomes '::1') instead of handing it on as given",
         (r'''            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''            if host.startswith("[") and host.endswith("]"):
                host = host[1:-1]  # an IPv6 address as a URL writes it
            reader, writer = await asyncio.open_connection(host, port, limit=FRAME_MAX)''')),
    _bug("host-must-be-ip", 7,
         "refuses a host that is not an IP address (a name such as localhost)",
         (r'''    _check_timeout(timeout)
    con = open_store(path)''', r'''    _check_timeout(timeout)
    import ipaddress
    ipaddress.ip_address(host)  # ValueError for a name
    con = open_store(path)''')),
    # the base classes: values every other test passes too, so the bug breaks nearly every test
    _bug("fault-called-unchecked", 3,
         "calls fault() whether or not one was given: apply_event without a fault raises TypeError",
         (r'''        if fault is not None:
            fault()''', r'''        fault()''')),
    _bug("hook-called-unchecked", 6,
         "calls before_ack(seq) whether or not one was given: a session without one raises TypeError",
         (r'''            if before_ack is not None:
                seq, _ = parse_line(line)''', r'''            if True:  # a hook is always given
                seq, _ = parse_line(line)''')),
    _bug("port-parsed-from-str", 7,
         "takes the port for a string (as from argv) and parses it: an int port raises AttributeError",
         (r'''await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''await asyncio.open_connection(host, int(port.strip()), limit=FRAME_MAX)''')),
    _bug("port-checked-first", 7,
         "checks the port itself (an int or digits, 1..65535) before opening anything: ValueError, no store",
         (r'''    _check_timeout(timeout)
    con = open_store(path)''', r'''    _check_timeout(timeout)
    number = int(port) if isinstance(port, str) and port.isdigit() else port
    if not _is_int(number) or not 0 < number <= 65535:
        raise ValueError(f"port must be an int in 1..65535 or a string of its digits, got {port!r}")
    con = open_store(path)''')),
    _bug("port-made-int", 7,
         "hands the connection int(port), not the port as given: an int subclass reaches a name host",
         (r'''await asyncio.open_connection(host, port, limit=FRAME_MAX)''',
          r'''await asyncio.open_connection(host, int(port), limit=FRAME_MAX)''')),
]

# ------------------------------------------------------------ compositions (issue 39)
# Each needs a pairing that no factor alone draws: every factor is drawn over
# its whole domain by the tests of its class, the pairing only by the product's
# test (docs/DOMAINS.md, "Compositions drawn whole").
BUGS += [
    _bug("resend-acked-before-hook", 6,
         "ACKs a resent event before calling before_ack (it was committed long ago, the publisher is waiting): "
         "when the hook then fails, the resend is ACKed all the same",
         (r'''            ack = consume_line(con, line)
            if before_ack is not None:
                seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
''', r'''            last_before, _ = state(con)
            ack = consume_line(con, line)
            if before_ack is not None:
                seq, _ = parse_line(line)  # cannot fail: consume_line accepted it
                if seq <= last_before:  # a resend, committed long ago: the publisher waits for its ACK
                    writer.write(ack)
                    ack = b""
''')),
    _independent("independent-closing-error-wins", 6,
                 "reclaims every connection in one helper that raises what the closing wait raised "
                 "(another OSError, a cancellation) whether or not the session has an error of its own",
                 (r'''    if trouble is not None and not own_error:''', r'''    if trouble is not None:''')),
    _independent("run-client-path-resolved", 7,
                 "run_client resolves the store's path before opening it (so that a later chdir cannot move it): "
                 "':memory:' and '' become files in the working folder, where open_store alone keeps them as given",
                 (r'''        raise ValueError("timeout: a positive finite int or float is required")
    con = open_store(path)''', r'''        raise ValueError("timeout: a positive finite int or float is required")
    import os
    con = open_store(os.path.abspath(path))  # a later chdir cannot move the store''')),
    _independent("fraction-dropped", 1,
                 "reads a number up to a `.` followed only by zeros, as some publishers write 3.0 for 3: "
                 "`EVENT 5 3.0` and `EVENT 5. 3` pass",
                 (r'''    """Turn an ASCII decimal token into an int, the strict way."""
    size = len(token)
''', r'''    """Turn an ASCII decimal token into an int, the strict way."""
    whole, dot, fraction = token.partition(b".")
    if dot and not fraction.strip(b"0"):
        token = whole  # 3.0 is 3
    size = len(token)
''')),
]

# The bugs that the state machines of stateful/ must catch ON THEIR OWN (the
# publisher, the store and real run_client sessions, without the property
# files): the lab's protocol-level warnings. replay (step 4) is not among
# them: the publisher is the server side and uses its own replay.
PROTOCOL_BUGS = [
    "reinit-cursor",
    "cursor-first",
    "total-separately",
    "gap-applied",
    "no-ack-for-duplicate",
    "ack-before-commit",
    "resume-minus-one",
    "delete-store",
]

# A commit in two transactions. Crash-only once (a process killed between the two
# showed them); a FAKE failure of a statement between the two shows them too now
# (resume/testing/drivers/statements.py: the first half stays committed, the error propagates).
BUGS += [
    _bug("cursor-second-transaction", 3,
         "commits the ledger row and the total, then moves the cursor in a second transaction",
         (r'''        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True''', r'''        con.execute("COMMIT")  # the business change is safe; the cursor follows
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        return True''')),
    _bug("ledger-after-commit", 3,
         "commits the total and the cursor, then writes the ledger row (an audit log) in a second transaction",
         (r'''        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")''', r'''        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
        con.execute("BEGIN IMMEDIATE")  # the audit row, once the business change is safe
        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("COMMIT")''')),
    # ======== issue 54: nine mistakes written blind from SPEC.md that the suite once passed ========
    # Each names the class or observation its test must draw (docs/DOMAINS.md, "Issue 54's classes").
    _bug("fault-before-ledger-row", 3,
         "writes the total, calls fault(), and only then inserts the ledger row: fault sees no row of its event",
         (r"""        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
""", r"""        con.execute("UPDATE checkpoint SET total = total + ? WHERE id = 1", (delta,))
        if fault is not None:
            fault()
        con.execute("INSERT INTO ledger(seq, delta) VALUES (?, ?)", (seq, delta))
""")),
    _bug("commit-retried-while-read", 3,
         "in a rollback journal, retries COMMIT on 'database is locked' until a reader lets go, past the busy timeout",
         (r"""        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
""", r"""        con.execute("PRAGMA synchronous=EXTRA")
"""),
         (r"""        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        con.execute("COMMIT")
""", r"""        con.execute("UPDATE checkpoint SET last = ? WHERE id = 1", (seq,))
        while True:  # a reader may hold the file for a moment: wait for it rather than lose the event
            try:
                con.execute("COMMIT")
                break
            except sqlite3.OperationalError as error:
                if "locked" not in str(error):
                    raise
""")),
    _bug("fault-result-checked", 3,
         "reads fault()'s return value: a hook that returns False makes it roll back and return False",
         (r"""        if fault is not None:
            fault()
""", r"""        if fault is not None and fault() is False:  # the hook vetoed the event
            _rollback(con)
            return False
""")),
    _bug("session-skips-locked-line", 6,
         "catches sqlite3.OperationalError of a line inside the session, writes no ACK and reads on to EOF",
         (r"""            ack = consume_line(con, line)
            if before_ack is not None:""", r"""            try:
                ack = consume_line(con, line)
            except sqlite3.OperationalError:
                continue  # the store is busy: no ACK, the publisher sends it again
            if before_ack is not None:""")),
    _bug("initialised-if-checkpoint-row", 2,
         "takes a checkpoint row as a store set up: a store half made checkpoint first (no ledger) is never completed",
         (r"""            for statement in _SCHEMA:
                con.execute(statement)
""", r"""            made = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoint'").fetchone()
            if not (made and con.execute("SELECT 1 FROM checkpoint WHERE id = 1").fetchone()):
                for statement in _SCHEMA:
                    con.execute(statement)
""")),
    _bug("session-ends-at-top-seq", 6,
         "ends the session right after ACKing seq 2147483647 (nothing can follow it), not at EOF",
         (r"""            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()
""", r"""            writer.write(ack)
            async with asyncio.timeout(timeout):
                await writer.drain()
            if ack == b"ACK %d\n" % SEQ_MAX:
                break  # the last seq there is: the publisher has nothing more
""")),
    _bug("resent-at-resume-acked-blind", 7,
         "after RESUME n, ACKs the first frame whose seq is n without looking at the store (its delta unchecked)",
         (r"""            async with asyncio.timeout(timeout):
                await writer.drain()
        except BaseException:
            await _reclaim_after_error(writer, timeout)
            raise
        return await consume_session(""", r"""            async with asyncio.timeout(timeout):
                await writer.drain()
            if last >= 0:  # the publisher resends the event at the cursor first: we have it already
                async with asyncio.timeout(timeout):
                    first = await reader.readline()
                if first:
                    resent = first.startswith(b"EVENT %d " % last)
                    ack = b"ACK %d\n" % last if resent else consume_line(con, first)
                    if before_ack is not None:
                        result = before_ack(int(ack.split()[1]))
                        if inspect.isawaitable(result):
                            await result
                    writer.write(ack)
                    async with asyncio.timeout(timeout):
                        await writer.drain()
        except BaseException:
            await _reclaim_after_error(writer, timeout)
            raise
        return await consume_session(""")),
    _bug("gap-refusal-remembered", 5,
         "remembers the frames it refused as a Gap and refuses them again from memory once the hole is filled",
         (r"""    seq, delta = parse_line(line)
    apply_event(con, seq, delta, fault)
    return b"ACK %d\n" % seq
""", r"""    seq, delta = parse_line(line)
    store = con.execute("PRAGMA database_list").fetchone()[2]
    refused = _refused.setdefault((id(con), store), set())
    if (seq, delta) in refused:
        raise Gap(f"event {seq} was refused already")
    try:
        apply_event(con, seq, delta, fault)
    except Gap:
        refused.add((seq, delta))
        raise
    return b"ACK %d\n" % seq


_refused = {}  # frames refused as a Gap, by connection and store file
""")),
    # issue 55: a clause SPEC.md's decision 10 words on its own
    _bug("invalid-timeout-not-reclaimed", 6,
         "checks the timeout before the try that reclaims the connection: an invalid one raises and leaves the socket open",
         (r"""    close_timeout = timeout if valid else CLOSE_TIMEOUT_FALLBACK
    try:
        _check_timeout(timeout)
""", r"""    close_timeout = timeout if valid else CLOSE_TIMEOUT_FALLBACK
    _check_timeout(timeout)
    try:
""")),
    _bug("no-resume-for-a-new-store", 7,
         "sends no RESUME line for a new store (nothing to resume from): the publisher waits for it, the session for events",
         (r"""            writer.write(b"RESUME %d\n" % last)""", r"""            if last >= 0:
                writer.write(b"RESUME %d\n" % last)""")),
    _bug("state-begins-immediate", 2,
         "reads state() inside its own BEGIN IMMEDIATE: a reader waits for a writer and fails with 'database is locked'",
         (r"""    row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("the checkpoint row is missing")
""", r"""    if not con.in_transaction:  # a consistent read: take the lock, read, let go
        con.execute("BEGIN IMMEDIATE")
        try:
            return state(con)
        finally:
            con.execute("COMMIT")
    row = con.execute("SELECT last, total FROM checkpoint WHERE id = 1").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("the checkpoint row is missing")
""")),
    # issue 56: a learner's round, blind: step 6 passed with it, step 7 alone caught it
    _bug("session-reads-with-wait-for", 6,
         "bounds each read with asyncio.wait_for, which on Python 3.11 drops a cancellation that lands as the "
         "read completes (CPython gh-86296): the session goes on and returns",
         (r"""            async with asyncio.timeout(timeout):
                line = await reader.readline()""",
          r"""            line = await asyncio.wait_for(reader.readline(), timeout)""")),
    # issue 55: a foreign corpus's session, quoted decision 8 for it
    _bug("session-one-deadline", 6,
         "one deadline of timeout around the whole session (each wait's own bound inside it runs out later)",
         (r"""        _check_timeout(timeout)
        while True:""", r"""        _check_timeout(timeout)
        async with asyncio.timeout(timeout):  # one deadline for the whole session
          while True:""")),
]

# Known bugs retired, with the reason: each was caught only through a store outside the contract
# (decision 19: another program's table named checkpoint, a ledger row above last), where what
# any step does is left to the implementation. On every store step 2 makes or a writer left half
# made, each of these files is correct.
RETIRED = {
    "checkpoint-rebuilt-from-ledger": "rebuilt a missing checkpoint row from the ledger's rows: a store with "
                                      "ledger rows and no checkpoint row holds rows above its last (-1)",
    "checkpoint-by-position": "read the checkpoint row by position: only another program's extra column moves it",
    "other-checkpoint-replaced": "dropped another program's checkpoint table: no store step 2 makes has one",
}

# ------------------------------------------------------------ crash-only bugs (issue 10)
# Each passes every call of the contract when no process dies: every function
# returns with a consistent store and a fault at the fault point still rolls
# everything back. Only a process killed INSIDE a commit shows them, so only
# the crash tests catch them (properties/test_crash_*.py, stateful/test_crash_points.py);
# the meta-test also checks that the suite without those files misses them.
CRASH_BUGS = [
    _bug("journal-memory", 2,
         "sets PRAGMA journal_mode=MEMORY for speed: a crash mid-commit leaves no journal to roll back",
         # After the reference's own journal-mode choice (WAL), so that this one stands.
         (r'''        con.execute("PRAGMA journal_mode=WAL")
''', r'''        con.execute("PRAGMA journal_mode=MEMORY")  # fewer syncs
''')),
    _bug("journal-off", 2,
         "sets PRAGMA journal_mode=OFF for speed: no rollback journal at all",
         # After the reference's own journal-mode choice (WAL), so that this one stands.
         (r'''        con.execute("PRAGMA journal_mode=WAL")
''', r'''        con.execute("PRAGMA journal_mode=OFF")  # fewer writes
''')),
    # (a hot journal deleted before opening: `journal-removed`, above; the crash
    # sweep catches it too, and so does the killed-writer test of the depth tests)
]
BUGS += CRASH_BUGS
# The test files that crash a receiver inside a commit: the suite without them misses CRASH_BUGS.
CRASH_TESTS = ("test_crash_syscalls.py", "test_crash_points.py")
