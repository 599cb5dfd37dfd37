"""The clauses of SPEC.md, numbered, and which known bug breaks which clause.

SPEC.md mirrors the binding contract, so its text is not edited: the clause
ids live here. ``CLAUSES`` lists every validation rule, every bound by
``timeout``, every ordering and every decision of SPEC.md, each with an id
and a short quote from SPEC.md (a test checks that every quote is still in
it, whitespace aside). Ids: ``S<step>.<name>`` for the text of the seven
steps, ``D<n>[.<name>]`` for the project's decisions.

``BREAKS`` maps every known bug of ``quality/bugs.py`` to the clause(s) it
breaks: a bug added there needs one line here (the meta-test checks that
every bug has a clause and every clause a bug). ``UNOBSERVABLE`` names the
clauses no public call can tell apart from their violation, with the reason;
they need no bug, and a bug mapped to one is an error.

``python -m quality.trace`` turns this and the meta-test's results into the
table of docs/TRACEABILITY.md.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Clause:
    id: str
    step: int  # the step of SPEC.md it belongs to (a decision: the step it binds)
    quote: str  # a short quote of SPEC.md, as written there (line breaks aside)


def _c(id, step, quote):
    return Clause(id, step, quote)


CLAUSES = [
    # ------------------------------------------------------------ step 1: parse_line
    _c("S1.bytes", 1, "Accept `bytes` only."),
    _c("S1.frame", 1, "return the tuple `(seq, delta)`"),
    _c("S1.length", 1, "at most 64 bytes long"),
    _c("S1.seq-range", 1, "`seq` is 0–2147483647"),
    _c("S1.delta-range", 1, "`delta` is -1000–1000"),
    _c("S1.leading-zero", 1, "a leading zero on any number other than `0` itself"),
    _c("S1.plus", 1, "a `+` sign"),
    _c("S1.minus-zero", 1, "`-0`"),
    _c("S1.crlf", 1, "CRLF"),
    _c("S1.final-lf", 1, "a missing final newline"),
    _c("S1.one-line", 1, "more than one line"),
    _c("S1.ascii", 1, "non-ASCII"),
    _c("D2.spaces", 1, "A frame has exactly one ASCII space between `EVENT`, seq and delta"),
    _c("D2.keyword", 1, "`EVENT` is upper case"),
    _c("D2.digits", 1, "digits are ASCII `0-9` only"),
    _c("D13", 1, "`parse_line` takes `bytes` instances (subclasses too); `bytearray` and `memoryview` are not bytes."),
    _c("D14", 3, "An `int` subclass other than `bool` (an `IntEnum`, a user's subclass) is an int wherever the steps ask for one, timeouts included; a `float` subclass is a float."),
    _c("D16", 7, "`host` and `port` are handed to `asyncio.open_connection` as given"),
    _c("D16.one-attempt", 7, "`run_client` makes one connection attempt."),
    _c("D15", 3, "A `fault` or `before_ack` that is not `None` is called as given, with no check beforehand."),
    # ------------------------------------------------- step 2: open_store, state
    _c("S2.create-once", 2, "It creates the two tables only when they do not exist"),
    _c("S2.checkpoint-table", 2, "checkpoint(id INTEGER PRIMARY KEY CHECK(id=1), last INTEGER NOT NULL, total INTEGER NOT NULL)"),
    _c("S2.ledger-table", 2, "ledger(seq INTEGER PRIMARY KEY, delta INTEGER NOT NULL)"),
    _c("S2.init-once", 2, "inserts the checkpoint's initial row `(1, -1, 0)` only when it does not exist"),
    _c("S2.state", 2, "`state(con)` returns the tuple `(last, total)`"),
    _c("D3.connect", 2, "`open_store` connects with `sqlite3.connect(path, timeout=1.0, isolation_level=None)`"),
    _c("D3.autocommit", 2, "`isolation_level=None`"),
    _c("D3.busy-timeout", 2, "`PRAGMA busy_timeout` then reads 1000"),
    _c("S2.close-on-failure", 2, "If initialisation fails, close the connection and let the error propagate."),
    # ----------------------------------------------------- step 3: apply_event
    _c("S3.exceptions", 3, "Declare `Gap` and `Conflict` as subclasses of `Exception`."),
    _c("S3.int-args", 3, "Accept only `int`s (not `bool`) in the step-1 ranges; anything else is ValueError."),
    _c("S3.one-transaction", 3, "in ONE transaction, insert into `ledger` -> update `total` -> call `fault()` if given -> update `last`; commit"),
    _c("S3.true", 3, "commit; return `True`"),
    _c("S3.duplicate", 3, "if the ledger holds the same delta for that seq, return `False`"),
    _c("S3.conflict", 3, "if its content differs, raise `Conflict`"),
    _c("S3.gap", 3, "any larger seq: raise `Gap`"),
    _c("S3.rollback", 3, "On failure, roll back every change, let the original error propagate, and leave no transaction open."),
    _c("D1", 3, "`bool` is never an int here"),
    _c("D1.value-error", 1, "Every invalid argument the steps describe raises `ValueError`"),
    _c("D4", 3, "`apply_event` reads `last` inside the same transaction that writes (`BEGIN IMMEDIATE`), so two connections can never both apply `last + 1`."),
    _c("D4.locked", 3, "A locked database surfaces as `sqlite3.OperationalError` after the busy timeout, with nothing changed and no transaction left open."),
    _c("D5", 3, "\"Failure\" in steps 3 and 5 means any `BaseException`"),
    _c("D6", 3, "`apply_event` with `seq <= last` and no ledger row for that seq raises `Conflict`"),
    # ---------------------------------------------------------- step 4: replay
    _c("S4.exception", 4, "Declare `ResyncRequired` as a subclass of `Exception`."),
    _c("S4.log-length", 4, "a `list` of 1–128 `(seq, delta)` tuples"),
    _c("S4.consecutive", 4, "whose seqs are consecutive and ascending"),
    _c("S4.values", 4, "values being ints in the step-1 ranges"),
    _c("S4.last-range", 4, "`last` is an int in -1–2147483647"),
    _c("S4.limit-range", 4, "`limit` an int in 1–16"),
    _c("S4.past-end", 4, "`last` greater than the log's final seq"),
    _c("S4.resync", 4, "If `last < first_seq - 1`: raise `ResyncRequired`."),
    _c("S4.limit", 4, "return at most `limit` items with `seq > last`"),
    _c("S4.new-list", 4, "as a new list"),
    _c("S4.no-change", 4, "change nothing"),
    _c("D7.types", 4, "`replay` takes a `list` (subclasses too) of tuple instances of length 2"),
    _c("D7.at-end", 4, "`last` equal to the final seq returns `[]`"),
    _c("D7.validate-first", 4, "All ValueError checks, over the whole list, come before the `ResyncRequired` decision."),
    # ---------------------------------------------------- step 5: consume_line
    _c("S5.ack", 5, "on success, return `b\"ACK <seq>\\n\"`"),
    _c("S5.duplicate-ack", 5, "A duplicate with the same content is ACKed too"),
    _c("S5.errors", 5, "a parse error, a gap, a conflict or a business failure propagates its error, and no ACK is returned"),
    _c("S5.fault", 5, "(passing `fault` through)"),
    _c("S5.visible", 5, "right after the ACK, the result must be visible from another DB connection"),
    # ------------------------------------------------- step 6: consume_session
    _c("S6.timeout-valid", 6, "`timeout` must be a positive, finite `int` or `float`, not `bool`; otherwise ValueError."),
    _c("S6.read-bounded", 6, "Bound every `readline` wait by `timeout`"),
    _c("S6.eof-state", 6, "at EOF return `state(con)`"),
    _c("S6.ack-after-commit", 6, "After a line has been committed with `consume_line`, call `before_ack(seq)` if given, then `writer.write(ack)`"),
    _c("S6.drain-bounded", 6, "a `drain` bounded by `timeout`"),
    _c("S6.propagate", 6, "Errors and cancellation propagate."),
    _c("S6.reclaim", 6, "On every path — normal, failure, cancellation — reclaim the connection: `close()`, then `wait_closed()` bounded by `timeout`."),
    _c("S6.abort", 6, "If that closing wait raises TimeoutError or ConnectionError, call `writer.transport.abort()`"),
    _c("S6.db-open", 6, "Do not close the DB connection."),
    _c("S6.fallback", 6, "With an invalid timeout, the closing wait uses 1 second."),
    _c("D8.duplicates", 6, "`before_ack` is called before every ACK the session writes, a duplicate's included"),
    _c("D8.awaitable", 6, "an awaitable is awaited before the ACK is written"),
    _c("D9.partial", 6, "A line that `readline` returns without a final LF (EOF in the middle of a frame) is a parse error"),
    _c("D9.over-long", 6, "A line longer than the reader's limit surfaces as `ValueError` too."),
    _c("D10", 6, "NaN is invalid; an int too large to become a float is invalid too"),
    _c("D11.carry-on", 6, "on the normal path `consume_session` still returns `state(con)`"),
    _c("D11.other-errors", 6, "If it raises anything else (cancellation arriving during the wait, another OSError), abort too"),
    _c("D11.error-wins", 6, "The session's own error is never replaced by a closing error."),
    # ------------------------------------------------------- step 7: run_client
    _c("S7.validate-first", 7, "Validate `timeout` first."),
    _c("S7.order", 7, "open, in this order, `open_store(path)` and `asyncio.open_connection(host, port, limit=64)`"),
    _c("S7.connect-bounded", 7, "`asyncio.open_connection(host, port, limit=64)` bounded by `timeout`"),
    _c("S7.resume", 7, "Write the DB's `last` as `b\"RESUME <last>\\n\"`"),
    _c("S7.drain-bounded", 7, "`drain` bounded by `timeout`, hand over to `consume_session`"),
    _c("S7.handover", 7, "hand over to `consume_session`, and return its result"),
    _c("S7.close-db", 7, "Close the DB connection on every path"),
    _c("S7.reclaim", 7, "if something fails before `consume_session` takes over, reclaim the socket directly"),
    _c("S7.propagate", 7, "Errors and cancellation propagate.\nThe lab's grader"),
    _c("S7.no-double-apply", 7, "The resent event 1 must not be applied twice."),
    _c("D10.run-client", 7, "`run_client` raises ValueError before opening anything"),
]

# Clauses that no public call can tell apart from their violation: no known
# bug can be caught there, so none is asked for. The reason is printed in the table.
UNOBSERVABLE = {
    "S1.length": "the grammar admits no frame longer than 23 bytes (`EVENT 2147483647 -1000\\n`), so a "
                 "longer line is ValueError whether or not the length is checked first",
}

# Every known bug -> the clause(s) it breaks. One line per bug.
BREAKS = {
    # depth (issue 14): where the other examples never go
    "ledger-pruned": ("S3.duplicate",),
    "session-line-cap": ("S6.eof-state",),
    "cursor-cached-per-connection": ("D4",),
    "reinit-lost-ledger": ("S2.init-once",),
    "journal-removed": ("S3.rollback", "S7.no-double-apply"),
    "schema-memo-per-path": ("S2.create-once",),
    "replay-memo-per-list": ("S4.limit",),
    "errors-deferred-to-eof": ("S6.propagate", "S5.errors"),
    "hook-error-after-ack": ("S6.ack-after-commit",),
    # crash anywhere (issue 10): caught only by killing the receiver inside a commit
    "cursor-second-transaction": ("S3.one-transaction",),
    "total-kept-in-32-bits": ("S3.true",),
    "ledger-after-commit": ("S3.one-transaction",),
    "journal-memory": ("S3.rollback", "S7.no-double-apply"),
    "journal-off": ("S3.rollback", "S7.no-double-apply"),
    "init-once-autocommit": ("S2.init-once",),
    # step 1
    "strip-before-check": ("S1.crlf", "S1.final-lf"),
    "int-tolerance": ("D2.spaces", "D2.digits", "S1.plus", "S1.leading-zero"),
    "dollar-anchor": ("S1.final-lf",),
    "unicode-digits": ("S1.ascii", "D2.digits"),
    "crlf-accepted": ("S1.crlf",),
    "minus-zero": ("S1.minus-zero",),
    "leading-zero": ("S1.leading-zero",),
    "delta-unbounded": ("S1.delta-range",),
    "seq-off-by-one": ("S1.seq-range",),
    "bytearray-accepted": ("S1.bytes", "D13"),
    # step 2
    "reinit-cursor": ("S2.init-once", "S7.no-double-apply"),
    "drop-on-open": ("S2.create-once",),
    "default-busy-timeout": ("D3.busy-timeout",),
    "implicit-transactions": ("D3.autocommit",),
    "leak-on-init-failure": ("S2.close-on-failure",),
    "other-checkpoint-replaced": ("S2.close-on-failure",),
    "state-swapped": ("S2.state",),
    "checkpoint-id-unchecked": ("S2.checkpoint-table",),
    "ledger-seq-unique-not-key": ("S2.ledger-table",),
    "ledger-delta-nullable": ("S2.ledger-table",),
    # step 3
    "cursor-first": ("S3.one-transaction",),
    "total-separately": ("S3.one-transaction",),
    "except-exception": ("S3.rollback", "D5"),
    "duplicate-open-transaction": ("S3.rollback",),
    "gap-applied": ("S3.gap",),
    "conflict-ignored": ("S3.conflict",),
    "missing-row-is-duplicate": ("D6",),
    "bool-is-int": ("D1", "S3.int-args"),
    "delta-bound-off-by-one": ("S3.int-args",),
    # step 4
    "truncated-log-as-recovery": ("S4.resync",),
    "resync-off-by-one": ("S4.resync",),
    "limit-off-by-one": ("S4.limit",),
    "holes-accepted": ("S4.consecutive",),
    "log-unbounded": ("S4.log-length",),
    "resync-before-validation": ("D7.validate-first",),
    "log-max-exclusive": ("S4.log-length",),
    "cursor-floor-off-by-one": ("S4.last-range",),
    "limit-max-off-by-one": ("S4.limit-range",),
    "past-end-accepted": ("S4.past-end",),
    # step 5
    "no-ack-for-duplicate": ("S5.duplicate-ack",),
    "fault-dropped": ("S5.fault",),
    "ack-after-gap": ("S5.errors",),
    "ack-without-lf": ("S5.ack",),
    # step 6
    "ack-before-commit": ("S6.ack-after-commit", "S5.visible"),
    "hook-before-commit": ("S6.ack-after-commit",),
    "unbounded-read": ("S6.read-bounded",),
    "unbounded-close": ("S6.reclaim",),
    "no-close-on-error": ("S6.reclaim",),
    "swallowed-cancellation": ("S6.propagate",),
    "timeout-unchecked": ("S6.timeout-valid",),
    "timeout-checked-after-first-read": ("S6.timeout-valid",),
    "awaitable-hook-ignored": ("D8.awaitable",),
    "abort-at-once-on-bad-timeout": ("S6.fallback",),
    "fallback-wait-unbounded": ("S6.fallback",),
    "closing-error-wins": ("D11.error-wins",),
    # step 7
    "inf-by-identity": ("S6.timeout-valid", "D10.run-client"),
    "connect-unbounded": ("S7.connect-bounded",),
    "connect-bound-floored": ("S7.connect-bounded",),
    "run-client-falsy-hook-dropped": ("D15",),
    "run-client-path-made-absolute": ("S7.order",),
    "resume-minus-one": ("S7.resume", "S7.no-double-apply"),
    "delete-store": ("S7.no-double-apply",),
    "validate-after-open": ("S7.validate-first", "D10.run-client"),
    "db-leaked": ("S7.close-db",),
    "socket-leaked-before-session": ("S7.reclaim",),
    "stale-resume": ("S7.resume",),
    # issue 12: the bugs added for clauses that had none
    "tuple-swapped": ("S1.frame",),
    "plus-accepted": ("S1.plus",),
    "first-line-only": ("S1.one-line",),
    "keyword-any-case": ("D2.keyword",),
    "exact-bytes-only": ("D13",),
    "int-subclass-refused": ("D14",),
    "store-beside-module": ("D3.connect",),
    "ipv4-only": ("D16",),
    "connect-retried": ("D16.one-attempt",),
    "session-resumed-after-reset": ("D16.one-attempt",),
    "port-must-be-int": ("D16",),
    "path-as-uri": ("D3.connect",),
    "falsy-fault-skipped": ("D15",),
    "fault-result-as-failure": ("S3.true",),
    "hook-integrity-error-as-conflict": ("S3.rollback",),
    "delta-checked-late": ("S3.int-args",),
    "only-coroutines-awaited": ("D8.awaitable",),
    "session-deadline": ("S6.read-bounded",),
    "hook-awaitable-bounded": ("D8.awaitable",),
    "locked-line-skipped": ("S6.propagate",),
    "fault-error-returns-false": ("S3.rollback",),
    "reclaim-on-exception-only": ("S6.reclaim",),
    "blank-line-skipped": ("S5.errors",),
    "blank-line-is-none": ("D1.value-error",),
    "consecutive-by-span": ("S4.consecutive",),
    "foreign-schema-text-refused": ("S2.create-once",),
    "empty-file-not-initialised": ("S2.create-once", "S2.init-once"),
    "ack-bytearray": ("S5.ack",),
    "replay-list-reused": ("S4.new-list",),
    "hook-kind-learnt-once": ("D8.awaitable",),
    "seq-wraps-at-top": ("S3.duplicate", "S3.conflict"),
    "run-clients-share-a-store": ("S7.close-db",),
    "half-made-store-kept": ("S2.create-once",),
    "validate-after-begin": ("S3.int-args", "D4.locked"),
    "begin-retried": ("D4.locked",),
    "busy-timeout-after-init": ("D3.connect",),
    "rollback-around-fault-only": ("S3.rollback",),
    "close-on-sqlite-error-only": ("S2.close-on-failure",),
    "sign-stripped": ("S1.plus", "D2.digits"),
    "closing-wait-always-fallback": ("S6.reclaim",),
    "closing-wait-floored": ("S6.reclaim",),
    "hook-awaited-in-a-task": ("S6.propagate",),
    "total-read-before-lock": ("D4", "S3.one-transaction"),
    "half-made-store-by-checkpoint": ("S2.create-once",),
    "row-only-with-new-table": ("S2.init-once",),
    "eof-word-ends-session": ("S5.errors", "S6.eof-state"),
    "top-cursor-no-connect": ("S7.resume", "S7.no-double-apply"),
    "eof-word-is-none": ("D1.value-error",),
    "per-byte-read-timeout": ("S6.read-bounded",),
    "duplicate-acked-from-ledger": ("D4.locked", "S5.duplicate-ack"),
    "fault-called-unchecked": ("S3.one-transaction",),
    "hook-called-unchecked": ("S6.ack-after-commit",),
    "port-parsed-from-str": ("D16",),
    "port-checked-first": ("D16", "S7.order"),
    "port-made-int": ("D16",),
    "uncallable-fault-ignored": ("D15",),
    "falsy-hook-skipped": ("D15",),
    "awaitable-by-function-kind": ("D8.awaitable",),
    "timeout-subclass-refused": ("D14",),
    "timeout-any-real": ("S6.timeout-valid",),
    "gap-base-exception": ("S3.exceptions",),
    "applied-returns-none": ("S3.true",),
    "duplicate-is-conflict": ("S3.duplicate",),
    "last-read-before-begin": ("D4",),
    "locked-is-duplicate": ("D4.locked",),
    "resync-base-exception": ("S4.exception",),
    "exact-list-only": ("D7.types",),
    "list-items-accepted": ("D7.types",),
    "log-delta-unchecked": ("S4.values",),
    "returns-the-log-itself": ("S4.new-list",),
    "end-cursor-refused": ("D7.at-end",),
    "items-normalised-in-place": ("S4.no-change",),
    "stale-eof-state": ("S6.eof-state",),
    "unbounded-drain": ("S6.drain-bounded",),
    "no-abort-on-close-timeout": ("S6.abort",),
    "closes-db": ("S6.db-open",),
    "hook-skips-duplicates": ("D8.duplicates",),
    "partial-line-is-eof": ("D9.partial",),
    "cut-off-line-mended": ("D9.partial",),
    "over-long-line-skipped": ("D9.over-long",),
    "reader-limit-default": ("D9.over-long",),
    "closing-timeout-raises": ("D11.carry-on",),
    "no-abort-on-other-closing-error": ("D11.other-errors",),
    "huge-int-timeout-overflows": ("D10",),
    "connect-before-store": ("S7.order",),
    "resume-drain-unbounded": ("S7.drain-bounded",),
    "hook-not-passed": ("S7.handover",),
    "run-client-swallows-cancellation": ("S7.propagate",),
    # one per class of docs/DOMAINS.md (issue 22)
    "non-ascii-dropped": ("S1.ascii",),
    "any-whitespace-separator": ("D2.spaces",),
    "underscore-accepted": ("D2.digits",),
    "hex-accepted": ("D2.digits",),
    "extra-fields-ignored": ("D2.spaces",),
    "long-frame-overflow-error": ("D1.value-error",),
    "nul-stripped": ("S1.frame",),
    "str-encoded": ("S1.bytes",),
    "memoryview-accepted": ("S1.bytes",),
    "non-bytes-typeerror": ("D1.value-error",),
    "integral-float-accepted": ("S3.int-args",),
    "decimal-accepted": ("S3.int-args",),
    "rational-accepted": ("S3.int-args",),
    "index-accepted": ("S3.int-args",),
    "seq-formatted-into-sql": ("D14",),
    "non-int-typeerror": ("D1.value-error",),
    "apply-delta-unchecked": ("S3.int-args",),
    "apply-delta-exclusive": ("S3.int-args",),
    "tuple-log-accepted": ("S4.log-length",),
    "empty-log-returns-empty": ("S4.log-length",),
    "extra-item-fields-ignored": ("D7.types",),
    "descending-accepted": ("S4.consecutive",),
    "repeats-accepted": ("S4.consecutive",),
    "log-seq-unbounded": ("S4.values",),
    "limit-zero-accepted": ("S4.limit-range",),
    "resync-gap-of-one-tolerated": ("S4.resync",),
    "path-must-be-str": ("D3.connect",),
    "path-str-converted": ("D3.connect",),
    "path-made-absolute": ("D3.connect",),
    "parent-folders-created": ("D3.connect",),
    "folder-gets-default-name": ("D3.connect",),
    "timeout-int-refused": ("S6.timeout-valid",),
    "timeout-zero-accepted": ("S6.timeout-valid",),
    "timeout-under-clock-resolution-refused": ("S6.timeout-valid",),
    "timeout-over-a-day-refused": ("S6.timeout-valid",),
    "timeout-magnitude": ("S6.timeout-valid",),
    "timeout-bool-accepted": ("S6.timeout-valid",),
    "timeout-str-parsed": ("S6.timeout-valid",),
    "hook-result-awaited": ("D15",),
    "uncallable-hook-ignored": ("D15",),
    "awaitable-error-swallowed": ("S6.propagate",),
    "host-must-be-ip": ("D16",),
    "zero-refused": ("S1.leading-zero",),
    "seq-max-off-by-one": ("S1.seq-range",),
    "nan-timeout-accepted": ("D10",),
    "reset-is-eof": ("S6.propagate",),
    "drain-reset-ends-session": ("S6.propagate",),
    "checkpoint-by-position": ("S2.state",),
    "host-brackets-stripped": ("D16",),
    "resume-never-backwards": ("S7.resume",),
    "checkpoint-rebuilt-from-ledger": ("S2.init-once",),
    "drain-shares-read-deadline": ("S6.drain-bounded",),
    "first-read-given-longer": ("S6.read-bounded",),
    "connect-deadline-before-store": ("S7.connect-bounded",),
    "awaitable-by-dunder": ("D8.awaitable",),
    "commit-outside-try": ("S3.rollback",),
    "eof-state-before-reclaim": ("S6.reclaim",),
    "fragment-joined": ("S1.final-lf",),
    "session-valueerror-rewrapped": ("S6.propagate",),
    "consume-line-valueerror-rewrapped": ("S5.errors",),
    "consume-line-takes-a-batch": ("S5.errors",),
    "gap-frame-kept-for-later": ("S5.errors",),
    "valueerror-not-rolled-back": ("S3.rollback",),
    "fallback-bound-by-sign": ("S6.fallback",),
    "closing-reset-raised": ("S6.abort",),
    "no-abort-after-closing-reset": ("S6.abort",),
    "frame-items-parsed": ("D7.types",),
    "log-top-seq-refused": ("S4.values",),
    "timeout-truncated-to-int": ("S6.read-bounded",),
}


def by_id():
    return {clause.id: clause for clause in CLAUSES}


def bugs_of(clause_id):
    """The known bug ids that break a clause, in BREAKS's order."""
    return [bug for bug, clauses in BREAKS.items() if clause_id in clauses]


# ------------------------------------------------------------ beyond the lab (decision 18)
# A verdict of its own: its clause is not among CLAUSES (the lab's traceability,
# checked against quality/bugs.py), and its known bugs are quality/power_bugs.py's;
# quality/test_power_loss_level.py checks both (every power bug breaks a clause
# here, every clause here has a power bug, the quotes are in SPEC.md).
BEYOND_THE_LAB = [
    _c("D18", 7, "Once `ACK <seq>` has been written, a power cut at any later moment must not lose event "
                 "`seq` or any event before it"),
]

POWER_BREAKS = {
    "sqlite-defaults": ("D18",),
    "wal-normal": ("D18",),
    "sync-off": ("D18",),
    "delete-normal": ("D18",),
    "own-fsync-of-the-store-file": ("D18",),
    "wal-only-for-a-new-store": ("D18",),
}
