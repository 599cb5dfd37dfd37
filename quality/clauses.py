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

from resume.testing.spec import BEYOND_THE_LAB, CLAUSES  # noqa: F401 (BEYOND_THE_LAB: read from here by the power level's test)

# Clauses that no public call can tell apart from their violation: no known
# bug can be caught there, so none is asked for. The reason is printed in the table.
UNOBSERVABLE = {
    "S1.length": "the grammar admits no frame longer than 23 bytes (`EVENT 2147483647 -1000\\n`), so a "
                 "longer line is ValueError whether or not the length is checked first",
}

# Every known bug -> the clause(s) it breaks. One line per bug. Where a report quoted
# a clause a bug was not listed with, SPEC.md decided (issue 38): a BOM is non-ASCII
# (S1.ascii), decision 13 names memoryview, decision 5 names open_store's
# KeyboardInterrupt, decision 1 a TypeError for a wrong type and a bool, decision 15
# an uncallable fault, decision 6 a seq at or below last with no row, step 7's hint
# a deleted store's RESUME -1, decision 12 the socket of a failed RESUME drain, step
# 3's rollback a failure between two transactions, decision 8 a value not awaitable,
# decision 11 a closing reset raised on the normal path.
BREAKS = {
    # depth (issue 14): where the other examples never go
    "ledger-pruned": ("S3.duplicate",),
    "session-line-cap": ("S6.eof-state",),
    "cursor-cached-per-connection": ("D4",),
    "reinit-lost-ledger": ("S2.init-once",),
    "journal-removed": ("S3.rollback", "S7.no-double-apply"),
    "schema-memo-per-path": ("S2.create-once",),
    "replay-memo-per-list": ("S4.limit", "D7.first-after"),
    "errors-deferred-to-eof": ("S6.propagate", "S5.errors", "D8.nothing-more"),
    "hook-error-after-ack": ("S6.ack-after-commit",),
    # crash anywhere (issue 10): caught only by killing the receiver inside a commit
    "cursor-second-transaction": ("S3.one-transaction", "S3.rollback"),
    "total-kept-in-32-bits": ("S3.true",),
    "ledger-after-commit": ("S3.one-transaction", "S3.rollback"),
    "journal-memory": ("S3.rollback", "S7.no-double-apply"),
    "journal-off": ("S3.rollback", "S7.no-double-apply"),
    "init-once-autocommit": ("S2.init-once",),
    # step 1
    "strip-before-check": ("S1.crlf", "S1.final-lf"),
    "int-tolerance": ("D2.spaces", "D2.digits", "D2.tolerated", "S1.plus", "S1.leading-zero"),
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
    "state-swapped": ("S2.state",),
    "state-in-two-reads": ("S2.state",),
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
    "delete-store": ("S7.no-double-apply", "S7.resume"),
    "validate-after-open": ("S7.validate-first", "D10.run-client"),
    "db-leaked": ("S7.close-db",),
    "cursor-read-before-store-guard": ("S7.close-db",),
    "socket-leaked-before-session": ("S7.reclaim", "D12"),
    "resume-reclaim-by-fallback": ("S7.reclaim", "D12"),
    "cursor-read-outside-reclaim": ("S7.reclaim",),
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
    "fault-error-returns-false": ("S3.rollback", "D15.uncallable"),
    "reclaim-on-exception-only": ("S6.reclaim",),
    "blank-line-skipped": ("S5.errors",),
    "blank-line-is-none": ("D1.value-error",),
    "consecutive-by-span": ("S4.consecutive",),
    "foreign-schema-text-refused": ("S2.create-once",),
    "empty-file-not-initialised": ("S2.create-once", "S2.init-once"),
    "ack-bytearray": ("S5.ack",),
    "replay-list-reused": ("S4.new-list",),
    "hook-kind-learnt-once": ("D8.awaitable",),
    "seq-wraps-at-top": ("S3.duplicate", "S3.conflict", "D6"),
    "run-clients-share-a-store": ("S7.close-db",),
    "half-made-store-kept": ("S2.create-once",),
    "validate-after-begin": ("S3.int-args", "D4.locked"),
    "begin-retried": ("D4.locked",),
    "busy-timeout-after-init": ("D3.connect",),
    "rollback-around-fault-only": ("S3.rollback",),
    "close-on-sqlite-error-only": ("S2.close-on-failure", "D5.open-store"),
    "close-on-exception-only": ("S2.close-on-failure", "D5.open-store"),
    "resume-closing-error-wins": ("D12", "D11.error-wins"),
    "cancel-closing-error-wins": ("D11.error-wins",),
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
    "duplicate-acked-from-ledger": ("D4.every-call", "D4.locked", "S5.duplicate-ack"),
    "fault-called-unchecked": ("S3.one-transaction",),
    "hook-called-unchecked": ("S6.ack-after-commit",),
    "port-parsed-from-str": ("D16",),
    "port-checked-first": ("D16", "S7.order"),
    "port-made-int": ("D16",),
    "uncallable-fault-ignored": ("D15", "D15.uncallable"),
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
    "log-delta-unchecked": ("S4.values", "D1"),
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
    "underscore-accepted": ("D2.tolerated", "D2.digits"),
    "hex-accepted": ("D2.digits",),
    "fraction-dropped": ("D2.digits",),
    "run-client-path-resolved": ("S7.order", "D3.connect"),
    "independent-closing-error-wins": ("D11.error-wins", "D12"),
    "resend-acked-before-hook": ("D8.duplicates", "S6.ack-after-commit"),
    "extra-fields-ignored": ("D2.spaces",),
    "long-frame-overflow-error": ("D1.value-error",),
    "nul-stripped": ("S1.frame",),
    "bom-stripped": ("S1.frame", "S1.ascii"),
    "str-encoded": ("S1.bytes",),
    "memoryview-accepted": ("S1.bytes", "D13"),
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
    "timeout-str-parsed": ("S6.timeout-valid", "D1.value-error"),
    "hook-result-awaited": ("D15", "D8.awaitable"),
    "uncallable-hook-ignored": ("D15", "D15.uncallable"),
    "awaitable-error-swallowed": ("S6.propagate",),
    "host-must-be-ip": ("D16",),
    "zero-refused": ("S1.leading-zero",),
    "seq-max-off-by-one": ("S1.seq-range",),
    "nan-timeout-accepted": ("D10",),
    "reset-is-eof": ("S6.propagate",),
    "drain-reset-ends-session": ("S6.propagate",),
    "host-brackets-stripped": ("D16",),
    "host-stripped": ("D16",),
    "resume-never-backwards": ("S7.resume",),
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
    "closing-reset-raised": ("S6.abort", "D11.carry-on"),
    "no-abort-after-closing-reset": ("S6.abort",),
    "frame-items-parsed": ("D7.types",),
    "log-top-seq-refused": ("S4.values",),
    "timeout-truncated-to-int": ("S6.read-bounded",),
    # issue 54: nine mistakes written blind from SPEC.md that the suite once passed
    "fault-before-ledger-row": ("S3.one-transaction",),
    "commit-retried-while-read": ("D4.locked",),
    "fault-result-checked": ("S3.true", "S3.one-transaction"),
    "session-skips-locked-line": ("S6.propagate", "D4.locked"),
    "initialised-if-checkpoint-row": ("S2.create-once",),
    "session-ends-at-top-seq": ("S6.eof-state",),
    "resent-at-resume-acked-blind": ("S5.errors", "S3.conflict"),
    "gap-refusal-remembered": ("S5.ack", "S5.errors"),
    "state-begins-immediate": ("D4",),
    "invalid-timeout-not-reclaimed": ("D10.reclaim", "S6.reclaim"),
    "no-resume-for-a-new-store": ("S7.resume",),
    "session-reads-with-wait-for": ("S6.propagate", "S7.propagate"),  # issue 56
    "session-one-deadline": ("S6.read-bounded", "S6.drain-bounded"),  # issue 55
}


def by_id():
    return {clause.id: clause for clause in CLAUSES}


def bugs_of(clause_id):
    """The known bug ids that break a clause, in BREAKS's order."""
    return [bug for bug, clauses in BREAKS.items() if clause_id in clauses]


# ------------------------------------------------------------ beyond the lab (decision 18)
# A verdict of its own: its clause (``spec.BEYOND_THE_LAB``) is not among the
# lab's CLAUSES, and its known bugs are quality/power_bugs.py's;
# quality/test_power_loss_level.py checks both (every power bug breaks a clause
# there, every clause there has a power bug).
POWER_BREAKS = {
    "sqlite-defaults": ("D18",),
    "wal-normal": ("D18",),
    "sync-off": ("D18",),
    "delete-normal": ("D18",),
    "own-fsync-of-the-store-file": ("D18",),
    "wal-only-for-a-new-store": ("D18",),
}
