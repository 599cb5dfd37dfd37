"""SPEC.md's sentences, by clause id: the one catalogue of what the contract says.

Each ``Clause`` names a place in SPEC.md (step N, or decision N) and a few
words that occur once there; its ``sentence`` is read from SPEC.md itself,
whole, so a quote cannot drift from the contract: a clause whose words are
gone, or occur twice in their place, fails at import (tests/test_spec.py
reads every one).

Ids: ``S<step>.<name>`` for the text of the seven steps, ``D<n>[.<name>]``
for the project's decisions. The model (``resume.testing.model``) names the
clause of every prediction it makes; ``resume check`` quotes the clause of
the prediction that failed. ``quality/clauses.py`` says which known bug
breaks which clause.

Sentences: a step's or a decision's text, its lines joined, is cut after a
full stop followed by a blank, at a list item (``- ``) and around an
indented block (step 2's schema), so that "It creates the two tables only
when they do not exist:" and the table lines below it are sentences of their
own.
"""

import dataclasses
import functools
import pathlib
import re

# The project's folder (a checkout): SPEC.md, the suite's folders. Defined here once.
ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC_PATH = ROOT / "SPEC.md"


@dataclasses.dataclass(frozen=True)
class Clause:
    id: str
    step: int  # the step of SPEC.md it belongs to (a decision: the step it binds)
    # Words of SPEC.md, as written there (line breaks aside), found once in the clause's place; no
    # number of the contract among them (the model holds those), so a changed bound moves no clause.
    words: str

    @property
    def place(self):
        """Where a learner looks it up: ``"step 3"``, ``"decision 11"``."""
        number = self.id[1:].split(".")[0]
        return f"step {number}" if self.id.startswith("S") else f"decision {number}"

    @property
    def sentence(self):
        """The sentence of SPEC.md that holds ``words``, whole."""
        return sentence_of(self.place, self.words)


def _c(id, step, words):
    return Clause(id, step, words)


CLAUSES = [
    # ------------------------------------------------------------ step 1: parse_line
    _c("S1.bytes", 1, "Accept `bytes` only."),
    _c("S1.frame", 1, "return the tuple `(seq, delta)`"),
    _c("S1.length", 1, "bytes long"),
    _c("S1.seq-range", 1, "`seq` is"),
    _c("S1.delta-range", 1, "`delta` is"),
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
    _c("D2.tolerated", 1, "every other thing `int()` would tolerate are ValueError"),
    _c("D13", 1, "`parse_line` takes `bytes` instances (subclasses too); `bytearray` and `memoryview` are not bytes."),
    _c("D14", 3, "An `int` subclass other than `bool` (an `IntEnum`, a user's subclass) is an int wherever the steps ask for one"),
    _c("D16", 7, "`host` and `port` are handed to `asyncio.open_connection` as given"),
    _c("D16.one-attempt", 7, "`run_client` makes one connection attempt."),
    _c("D15", 3, "A `fault` or `before_ack` that is not `None` is called as given, with no check beforehand."),
    _c("D15.uncallable", 3, "One that cannot be called fails when it is called"),
    # ------------------------------------------------- step 2: open_store, state
    _c("S2.create-once", 2, "It creates the two tables only when they do not exist"),
    _c("S2.checkpoint-table", 2, "checkpoint(id INTEGER PRIMARY KEY CHECK(id=1), last INTEGER NOT NULL, total INTEGER NOT NULL)"),
    _c("S2.ledger-table", 2, "ledger(seq INTEGER PRIMARY KEY, delta INTEGER NOT NULL)"),
    _c("S2.init-once", 2, "inserts the checkpoint's initial row"),
    _c("S2.state", 2, "`state(con)` returns the tuple `(last, total)`"),
    _c("D3.connect", 2, "`open_store` connects with `sqlite3.connect(path,"),
    _c("D3.autocommit", 2, "isolation_level=None"),
    _c("D3.busy-timeout", 2, "`PRAGMA busy_timeout` then reads"),
    _c("S2.close-on-failure", 2, "If initialisation fails, close the connection and let the error propagate."),
    _c("D5.open-store", 2, "The same holds for step 2's initialisation"),
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
    _c("D4.every-call", 3, "Every call with valid arguments starts that transaction, a duplicate's and a gap's too."),
    _c("D4.locked", 3, "A locked database surfaces as `sqlite3.OperationalError` after the busy timeout, with nothing changed and no transaction left open."),
    _c("D5", 3, "\"Failure\" in steps 3 and 5 means any `BaseException`"),
    _c("D6", 3, "`apply_event` with `seq <= last` and no ledger row for that seq raises `Conflict`"),
    # ---------------------------------------------------------- step 4: replay
    _c("S4.exception", 4, "Declare `ResyncRequired` as a subclass of `Exception`."),
    _c("S4.log-length", 4, "`events` is a `list` of"),
    _c("S4.consecutive", 4, "whose seqs are consecutive and ascending"),
    _c("S4.values", 4, "values being ints in the step-1 ranges"),
    _c("S4.last-range", 4, "`last` is an int in"),
    _c("S4.limit-range", 4, "`limit` an int in"),
    _c("S4.past-end", 4, "`last` greater than the log's final seq"),
    _c("S4.resync", 4, "If `last < first_seq - 1`: raise `ResyncRequired`."),
    _c("S4.limit", 4, "return at most `limit` items with `seq > last`"),
    _c("S4.new-list", 4, "as a new list"),
    _c("S4.no-change", 4, "change nothing"),
    _c("D7.types", 4, "`replay` takes a `list` (subclasses too) of tuple instances of length 2"),
    _c("D7.at-end", 4, "`last` equal to the final seq returns `[]`"),
    _c("D7.validate-first", 4, "All ValueError checks, over the whole list, come before the `ResyncRequired` decision."),
    _c("D7.first-after", 4, "The items returned are the first ones after the cursor"),
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
    _c("S6.drain-bounded", 6, "and a `drain` bounded by `timeout`"),
    _c("S6.propagate", 6, "Errors and cancellation propagate."),
    _c("S6.reclaim", 6, "On every path — normal, failure, cancellation — reclaim the connection: `close()`, then `wait_closed()` bounded by `timeout`."),
    _c("S6.abort", 6, "If that closing wait raises TimeoutError or ConnectionError, call `writer.transport.abort()`"),
    _c("S6.db-open", 6, "Do not close the DB connection."),
    _c("S6.fallback", 6, "With an invalid timeout, the closing wait uses"),
    _c("D8.duplicates", 6, "`before_ack` is called before every ACK the session writes, a duplicate's included"),
    _c("D8.awaitable", 6, "an awaitable is awaited, with no bound of the session's, before the ACK is written"),
    _c("D8.nothing-more", 6, "after an error or a cancellation it writes nothing more"),
    _c("D9.partial", 6, "A line that `readline` returns without a final LF (EOF in the middle of a frame) is a parse error"),
    _c("D9.over-long", 6, "A line longer than the reader's limit surfaces as `ValueError` too."),
    _c("D10", 6, "NaN is invalid; an int too large to become a float is invalid too"),
    _c("D10.reclaim", 6, "With an invalid timeout, `consume_session` still reclaims the connection"),
    _c("D11.carry-on", 6, "on the normal path `consume_session` still returns `state(con)`"),
    _c("D11.other-errors", 6, "If it raises anything else (cancellation arriving during the wait, another OSError), abort too"),
    _c("D11.error-wins", 6, "The session's own error is never replaced by a closing error."),
    # ------------------------------------------------------- step 7: run_client
    _c("S7.validate-first", 7, "Validate `timeout` first."),
    _c("S7.order", 7, "open, in this order, `open_store(path)` and"),
    _c("S7.connect-bounded", 7, "`asyncio.open_connection(host, port,"),
    _c("S7.resume", 7, "Write the DB's `last` as `b\"RESUME <last>\\n\"`"),
    _c("S7.drain-bounded", 7, "`drain` bounded by `timeout`, hand over to `consume_session`"),
    _c("S7.handover", 7, "hand over to `consume_session`, and return its result"),
    _c("S7.close-db", 7, "Close the DB connection on every path"),
    _c("S7.reclaim", 7, "if something fails before `consume_session` takes over, reclaim the socket directly"),
    _c("S7.propagate", 7, "Errors and cancellation propagate."),
    _c("S7.no-double-apply", 7, "The resent event 1 must not be applied twice."),
    _c("D10.run-client", 7, "`run_client` raises ValueError before opening anything"),
    _c("D12", 7, "reclaims the socket the same way as rule 11, bounded by `timeout`, then lets the failure propagate"),
]

# Beyond the lab: a verdict of its own (quality/power_bugs.py has its known bugs).
BEYOND_THE_LAB = [
    _c("D18", 7, "Once `ACK <seq>` has been written, a power cut at any later moment must not lose event "
                 "`seq` or any event before it"),
]

BY_ID = {clause.id: clause for clause in CLAUSES + BEYOND_THE_LAB}


def sentence(clause_id):
    """SPEC.md's sentence for ``clause_id``, word for word (line breaks aside)."""
    return BY_ID[clause_id].sentence


def place(clause_id):
    return BY_ID[clause_id].place


# ------------------------------------------------------------ reading SPEC.md


def _words(text):
    return " ".join(text.split())


@functools.cache
def places():
    """``{"step 3": [sentence, ...], "decision 11": [...]}``: SPEC.md's binding text, cut into sentences."""
    found, current, units = {}, None, []

    def close():
        if current is not None:
            found[current] = [s for unit in units for s in _sentences(unit)]

    for line in SPEC_PATH.read_text(encoding="utf-8").splitlines():
        step = re.match(r"### (\d)\. ", line)
        decision = re.match(r"(\d+)\. ", line)
        if step or decision or line.startswith("#"):
            close()
            current, units = None, []
            if step:
                current = f"step {step.group(1)}"
                continue  # the heading is a title, not a sentence
            if decision:
                current, line = f"decision {decision.group(1)}", line[len(decision.group(0)):]
            else:
                continue
        if current is None or not line.strip():
            if line.strip() == "" and units and units[-1]:
                units.append("")
            continue
        if line.startswith("    ") and not current.startswith("decision") or line.startswith("- "):
            units.append(line.strip().removeprefix("- "))  # a schema line, a list item: a unit of its own
            if line.startswith("    "):
                units.append("")
        elif units and units[-1]:
            units[-1] += " " + line.strip()
        else:
            units.append(line.strip())
    close()
    return found


def _sentences(text):
    return [part for part in re.split(r"(?<=\.)\s+(?=[A-Z*`\"(])", _words(text)) if part]


def sentence_of(where, words):
    """The one sentence of SPEC.md's ``where`` (``"step 3"``) that holds ``words``."""
    words = _words(words)
    holding = [text for text in places().get(where, ()) if words in text]
    if len(holding) != 1:
        raise LookupError(f"SPEC.md, {where}: {len(holding)} sentences hold {words!r}, not one")
    return holding[0]
