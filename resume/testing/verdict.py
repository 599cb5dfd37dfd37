"""A step's verdict in the learner's words: the clause, the call, expected, got, the rerun line.

``resume check`` runs each part of the suite in a pytest process
(``check.run_suite``); this module turns the first failure of a part
(``runner.TestResult``, built by ``runner_plugin`` from the exception itself)
into a ``Verdict``:

* ``clause``: the sentence of SPEC.md the failure breaks, quoted word for
  word (``QUOTES``; tests/test_check_report.py checks every quote against
  SPEC.md), chosen by ``clause_for`` from the step, the test and the
  model's prediction;
* ``calls``: what the test did, as the learner would write it - the plain
  lines the test noted (``hypothesis.note``: the calls, the store they ran
  on, a session's lines), a state machine's steps; never Hypothesis's
  "Falsifying example" block of the suite's own objects, its ``Draw`` lines
  or its explanations;
* ``expected`` and ``got``: from the model, in plain values, when the test
  compared through it (``model.Mismatch``); else from the assertion's own
  message, with pytest's diff notes and the harness's reprs left out;
* ``rerun``: ``python3 -m resume check /abs/path/client.py --step N --seed S``,
  which works pasted into a shell in any folder.

``render`` writes a verdict as text, ``as_json`` as one JSON object (the
schema: docs/CHECK_JSON.md).
"""

import dataclasses
import re
import shlex

from resume.testing import model

# --------------------------------------------------------- SPEC.md, quoted

# Clause ids as in quality/clauses.py; each quote is SPEC.md's own words
# (line breaks aside). tests/test_check_report.py checks both.
QUOTES = {
    "S1.frame": f"A frame is one ASCII line `EVENT <seq> <delta>` ending in LF, at most {model.FRAME_MAX} bytes long; "
                "return the tuple `(seq, delta)`.",
    "S1.errors": "ValueError for: a leading zero on any number other than `0` itself, a `+` sign, `-0`, "
                 "CRLF, a missing final newline, more than one line, non-ASCII.",
    "S1.ranges": f"`seq` is {model.SEQ_MIN}–{model.SEQ_MAX}, `delta` is {model.DELTA_MIN}–{model.DELTA_MAX}.",
    "D2.spaces": "A frame has exactly one ASCII space between `EVENT`, seq and delta; `EVENT` is upper case; "
          "digits are ASCII `0-9` only.",
    "D13": "`parse_line` takes `bytes` instances (subclasses too); `bytearray` and `memoryview` are not bytes.",
    "D14": "An `int` subclass other than `bool` (an `IntEnum`, a user's subclass) is an int wherever the "
           "steps ask for one, timeouts included; a `float` subclass is a float.",
    "D15": "A `fault` or `before_ack` that is not `None` is called as given, with no check beforehand.",
    "S2.create-once": "It creates the two tables only when they do not exist",
    "S2.init-once": "inserts the checkpoint's initial row `(1, -1, 0)` only when it does not exist",
    "S2.state": "`state(con)` returns the tuple `(last, total)`.",
    "D3.connect": f"`open_store` connects with `sqlite3.connect(path, timeout={model.BUSY_TIMEOUT}, isolation_level=None)`; "
                  f"`PRAGMA busy_timeout` then reads {round(model.BUSY_TIMEOUT * 1000)}.",
    "S2.close-on-failure": "If initialisation fails, close the connection and let the error propagate.",
    "S3.exceptions": "Declare `Gap` and `Conflict` as subclasses of `Exception`.",
    "S3.int-args": "Accept only `int`s (not `bool`) in the step-1 ranges; anything else is ValueError.",
    "S3.one-transaction": "`seq == last + 1`: in ONE transaction, insert into `ledger` -> update `total` -> "
                          "call `fault()` if given -> update `last`; commit; return `True`.",
    "S3.duplicate": "`seq <= last`: if the ledger holds the same delta for that seq, return `False`; "
                    "if its content differs, raise `Conflict`.",
    "S3.gap": "any larger seq: raise `Gap`.",
    "S3.rollback": "On failure, roll back every change, let the original error propagate, and leave no "
                   "transaction open.",
    "D4": "`apply_event` reads `last` inside the same transaction that writes (`BEGIN IMMEDIATE`), so two "
          "connections can never both apply `last + 1`.",
    "D4.locked": "A locked database surfaces as `sqlite3.OperationalError` after the busy timeout, with "
                 "nothing changed and no transaction left open.",
    "D6": "`apply_event` with `seq <= last` and no ledger row for that seq raises `Conflict`",
    "S4.exception": "Declare `ResyncRequired` as a subclass of `Exception`.",
    "S4.errors": "ValueError for: bool, wrong types, out-of-range values, an empty log, `last` greater "
                 "than the log's final seq.",
    "S4.resync": "If `last < first_seq - 1`: raise `ResyncRequired`.",
    "S4.limit": "Otherwise return at most `limit` items with `seq > last`, as a new list.",
    "D7.validate-first": "All ValueError checks, over the whole list, come before the `ResyncRequired` decision.",
    "S5.ack": "Call `parse_line` and `apply_event` (passing `fault` through) and, on success, return "
              "`b\"ACK <seq>\\n\"`. A duplicate with the same content is ACKed too;",
    "S5.errors": "a parse error, a gap, a conflict or a business failure propagates its error, and no ACK "
                 "is returned.",
    "S5.visible": "right after the ACK, the result must be visible from another DB connection.",
    "S6.timeout-valid": "`timeout` must be a positive, finite `int` or `float`, not `bool`; otherwise "
                        "ValueError.",
    "S6.read-bounded": "Bound every `readline` wait by `timeout`; at EOF return `state(con)`.",
    "S6.ack-after-commit": "After a line has been committed with `consume_line`, call `before_ack(seq)` if "
                           "given, then `writer.write(ack)` and a `drain` bounded by `timeout`.",
    "S6.propagate": "Errors and cancellation propagate.",
    "S6.reclaim": "On every path — normal, failure, cancellation — reclaim the connection: `close()`, then "
                  "`wait_closed()` bounded by `timeout`.",
    "S6.abort": "If that closing wait raises TimeoutError or ConnectionError, call "
                "`writer.transport.abort()`, and never hide the original error.",
    "S7.propagate": "Errors and cancellation propagate.",
    "S6.db-open": "Do not close the DB connection.",
    "S6.fallback": "With an invalid timeout, the closing wait uses 1 second.",
    "D8.duplicates": "`before_ack` is called before every ACK the session writes, a duplicate's included",
    "D9.partial": "A line that `readline` returns without a final LF (EOF in the middle of a frame) is a parse "
          "error: nothing is committed, no ACK is written, and the `ValueError` propagates after the "
          "connection is reclaimed.",
    "D10": "A valid `timeout` is an `int` or `float`, not `bool`, with `0 < timeout < inf` (NaN is "
           "invalid; an int too large to become a float is invalid too).",
    "D11.error-wins": "The session's own error is never replaced by a closing error.",
    "S7.validate-first": "Validate `timeout` first.",
    "S7.order": "Then open, in this order, `open_store(path)` and `asyncio.open_connection(host, port, "
                f"limit={model.READER_LIMIT})` bounded by `timeout`.",
    "S7.resume": "Write the DB's `last` as `b\"RESUME <last>\\n\"`, `drain` bounded by `timeout`, hand over "
                 "to `consume_session`, and return its result.",
    "S7.close-db": "Close the DB connection on every path; if something fails before `consume_session` "
                   "takes over, reclaim the socket directly.",
    "S7.no-double-apply": "The resent event 1 must not be applied twice.",
    "D9.over-long": "A line longer than the reader's limit surfaces as `ValueError` too.",
    "D16": "`host` and `port` are handed to `asyncio.open_connection` as given",
    "D16.one-attempt": "`run_client` makes one connection attempt.",
    "D18": "Once `ACK <seq>` has been written, a power cut at any later moment must not lose event `seq` "
           "or any event before it",
}

# Where a clause lives in SPEC.md, as a learner looks it up.
def clause_place(clause_id):
    kind, number = clause_id[0], clause_id[1:].split(".")[0]
    return f"step {number}" if kind == "S" else f"decision {number}"


# (step or None for any, pattern searched in "test name | expected | got | call", clause id):
# the first rule that matches names the clause. The model's prediction comes
# first (a Gap expected breaks step 3's gap rule, whichever step saw it).
_RULES = [
    (None, r"expected: (raises )?Gap\b", "S3.gap"),
    (None, r"expected: (raises )?Conflict\b", "S3.duplicate"),
    (None, r"expected: (raises )?ResyncRequired\b", "S4.resync"),
    (6, r"escaped the event loop", "S6.propagate"),
    (7, r"escaped the event loop", "S7.propagate"),
    (None, r"power", "D18"),
    (None, r"subclass|UserFloat|UserInt|IntEnum|<Number\.", "D14"),
    (None, r"falsy|uncallable|cannot be called", "D15"),
    (1, r"bytearray|memoryview|expected: .*\bbytes\b", "D13"),
    (1, r"expected: raises ValueError", "S1.errors"),
    (1, r"", "S1.frame"),
    (2, r"the connection closed first", "S2.close-on-failure"),
    (2, r"one_snapshot", "S2.state"),
    (2, r"busy_timeout|busy timeout|autocommit|connect", "D3.connect"),
    (2, r"expected: raises", "S2.close-on-failure"),
    (2, r"tables", "S2.create-once"),
    (2, r"reopen|keeps_the_cursor", "S2.init-once"),
    (2, r"", "S2.state"),
    (3, r"are_exceptions", "S3.exceptions"),
    (3, r"locked|OperationalError", "D4.locked"),
    (3, r"two_connections", "D4"),
    (3, r"expected: raises ValueError", "S3.int-args"),
    (3, r"expected: returns False", "S3.duplicate"),
    (3, r"expected: raises that very|transaction (left )?open", "S3.rollback"),
    (3, r"", "S3.one-transaction"),
    (4, r"is_an_exception", "S4.exception"),
    (4, r"expected: raises ValueError", "S4.errors"),
    (4, r"", "S4.limit"),
    (5, r"expected: raises|propagat", "S5.errors"),
    (5, r"fault=\S.*then another connection", "S3.rollback"),  # the fault failed, the store moved
    (5, r"another connection|visible", "S5.visible"),
    (5, r"", "S5.ack"),
    (6, r"cancellation propagates|expected: raises (CancelledError|ConnectionError)", "S6.propagate"),
    (7, r"cancellation propagates|expected: raises CancelledError", "S7.propagate"),
    (6, r"invalid_timeout|one_step_outside|either_end|timeout_ends", "D10"),
    (6, r"expected: raises ValueError", "S6.timeout-valid"),
    (6, r"drain", "S6.ack-after-commit"),
    (6, r"silent|TimeoutError", "S6.read-bounded"),
    (6, r"abort|closing_wait|hang", "S6.abort"),
    (6, r"cancel", "S6.reclaim"),
    (6, r"socket was not closed|never saw the connection end|closed", "S6.reclaim"),
    (6, r"DB connection|db_open", "S6.db-open"),
    (6, r"before_ack|ACK", "S6.ack-after-commit"),
    (6, r"", "S6.ack-after-commit"),
    (7, r"invalid_timeout|any_timeout.*expected: raises ValueError", "S7.validate-first"),
    (7, r"expected: raises that very", "S7.propagate"),
    (7, r"opened_first", "S7.order"),
    (7, r"socket was left open|store connection open", "S7.close-db"),
    (7, r"on each connection|one attempt", "D16.one-attempt"),
    (7, r"RESUME|resume_line", "S7.resume"),
    (7, r"before_ack", "S7.resume"),
    (7, r"killed|twice", "S7.no-double-apply"),
    (7, r"longer_than_64", "D9.over-long"),
    (7, r"host_and_port", "D16"),
    (7, r"one connection attempt", "D16.one-attempt"),
    (7, r"connection_attempt_that_hangs", "S7.order"),
    (7, r"", "S7.close-db"),
    (None, r"socket", "S6.reclaim"),
    (None, r"file descriptor", "S7.close-db"),
    (None, r"ledger|total|consistent|exactly once|in_transaction", "S3.one-transaction"),
    (None, r"RESUME", "S7.resume"),
    (None, r"ACK", "S6.ack-after-commit"),
    (None, r"transaction", "S3.one-transaction"),
    (None, r"", "S7.no-double-apply"),
]


def clause_for(step, test, expected="", got="", call=""):
    """``(clause id, quote)``: the sentence of SPEC.md a failure breaks.

    The test's parameters (``[seq: int subclass]``) are left out: they name the
    class a run draws from, not what the failing call did (a run of int
    subclasses makes plain-int calls too).
    """
    text = f"{test.split('[')[0]} | expected: {expected} | got: {got} | {call}"
    for rule_step, pattern, clause in _RULES:
        if rule_step in (None, step) and re.search(pattern, text):
            return clause, QUOTES[clause]
    raise AssertionError("unreachable: the last rule matches everything")


# --------------------------------------------------------- the failure, in plain words

# Notes that Hypothesis adds (its example block of the suite's objects, its
# draws, explanations, reproduction hints), not the test's own note() lines.
_HYPOTHESIS_NOTE = re.compile(
    r"^(Falsifying|Failing|Trying example|Draw \d|Explanation:|\(note:|You can (add|reproduce)|"
    r"@reproduce_failure|Unreliable|Highest target|Retried|Error in|Adding |state\.teardown\(\))")
_IMPL_CLASS = re.compile(r"<class 'resume_impl_under_test_\d+\.([\w.]+)'>")
_IMPL_MODULE = re.compile(r"<module 'resume_impl_under_test_\d+' from '[^']*'>")
_IMPL_NAME = re.compile(r"resume_impl_under_test_\d+\.")
_TEST_CLASS = re.compile(r"<class '(?:[\w]+\.)*([\w]+)'>")


def scrub(text):
    """The harness's reprs out of a text: a class of your module is its name."""
    text = _IMPL_CLASS.sub(r"\1", text)
    text = _IMPL_MODULE.sub("your client.py", text)
    text = _IMPL_NAME.sub("", text)
    return _TEST_CLASS.sub(r"\1", text)


def plain_calls(notes, invariants=()):
    """The lines of the test's own notes and a state machine's steps, as a learner reads them."""
    lines, in_block = [], False
    for note in notes:
        for line in str(note).splitlines():
            if _HYPOTHESIS_NOTE.match(line):
                # A block of Hypothesis's own: its indented lines go with it.
                in_block = not line.startswith("state.teardown")
                continue
            if in_block and (line.startswith((" ", "\t", ")")) or not line.strip()):
                continue
            in_block = False
            if "impl=<module " in line:
                continue
            if line.startswith("state = "):
                continue  # the machine's creation: implied by its first step
            if line.startswith("state."):
                name = line[len("state."):].split("(", 1)[0]
                if name in invariants:
                    continue
                line = "step: " + line[len("state."):]
            lines.append(scrub(line.rstrip()))
    return lines


def _assertion(error):
    """``(message, compared)`` of an AssertionError's text as pytest gives it.

    The message is the assertion's own text, without pytest's explanation
    (``assert ...``, "Left contains ...", "Use -v ..."); ``compared`` is
    ``(left, right)`` for a bare ``assert left == right``, else None.
    """
    text = error.split(": ", 1)[1] if error.startswith("AssertionError") and ": " in error else error
    message, compared = [], None
    for line in text.splitlines():
        if line.startswith("assert "):
            if not message:
                found = re.match(r"assert (.+?) == (.+)$", line)
                compared = (found.group(1), found.group(2)) if found else None
                message.append(line)
            break
        message.append(line)
    return scrub("\n".join(message).strip()), compared


# Errors the harness raises about what a call left behind (resume.testing.hygiene).
_LEFT_BEHIND = {
    "DescriptorsLeftOpen": "every socket and file the call opened closed by the time it returns",
    "TasksLeftRunning": "no task of the call still running once it returns",
}


def expected_and_got(entry, impl=None):
    """``(call, expected, got)`` of one failure entry of ``runner_plugin``, in plain words."""
    mismatch = entry.get("mismatch")
    if mismatch:
        return scrub(mismatch["call"]), scrub(mismatch["expected"]), scrub(mismatch["got"])
    error = entry.get("error", "")
    kind, _, message = error.partition(":")
    if kind in _LEFT_BEHIND:
        return "", _LEFT_BEHIND[kind], scrub(message.strip())
    if kind == "Failed":  # pytest.fail(message): the message tells what happened
        return "", "what the SPEC.md sentence above says", scrub(message.strip())
    if kind != "AssertionError":  # the call raised where the test expected none
        raised = entry.get("raised_in") or {}
        mine = impl is not None and raised.get("file") == str(impl)
        call = scrub(raised.get("source", "")) if mine else ""
        text = message.strip().splitlines()[0] if message.strip() else ""
        got = f"raises {kind}" + (f": {scrub(text)}" if text else "") + (
            f" (line {raised['line']} of your file)" if mine else "")
        return call, "no exception here", got
    message, compared = _assertion(error)
    if compared and message.startswith("assert "):
        return "", compared[1], compared[0]
    if message.startswith("assert "):
        return "", f"this to hold: {message[len('assert '):]}", "it did not"
    call, colon, rest = message.partition(": ")
    if not colon:
        call, rest = "", message
    found = (re.match(r"(?P<got>.+?),? expected (?P<expected>.+)$", rest, re.DOTALL)
             or re.match(r"(?P<got>.+?), not (?P<expected>.+)$", rest, re.DOTALL))
    if found:
        return call, found["expected"], found["got"]
    return call, "what the SPEC.md sentence above says", rest


# --------------------------------------------------------- the verdict


@dataclasses.dataclass
class Verdict:
    """One part of the suite (a step, the protocol machine, a level) for one file."""

    part: str  # "1".."7", "protocol", "deeper", "power"
    label: str  # "step 3  apply_event"
    status: str  # "ok", "FAIL", "broken", "timeout", "no tests"
    seconds: float = 0.0
    tests: int = 0
    clause: str | None = None  # "S3.gap"
    where: str | None = None  # "step 3", "decision 11"
    quote: str | None = None  # SPEC.md's words
    test: str | None = None  # the failing test, as pytest names it (for the suite's authors)
    calls: list = dataclasses.field(default_factory=list)  # what the test did, line by line
    call: str = ""  # the call that failed
    expected: str | None = None
    got: str | None = None
    rerun: str | None = None
    detail: str | None = None  # why pytest could not run it (broken, timeout)

    def as_json(self):
        return {
            "step": self.part, "label": " ".join(self.label.split()), "status": self.status,
            "seconds": round(self.seconds, 1), "tests": self.tests,
            "clause": None if self.clause is None else {"id": self.clause, "where": self.where,
                                                        "quote": self.quote},
            "call": self.calls if self.status == "FAIL" else None,
            "failing_call": self.call or None, "expected": self.expected, "got": self.got,
            "test": self.test, "rerun": self.rerun, "detail": self.detail,
        }


def rerun_command(impl, part, seed, profile=None):
    """The line that runs this part again, from any folder: ``python3 -m resume check ...``."""
    words = ["python3", "-m", "resume", "check", str(impl), "--step", part, "--seed", str(seed)]
    if profile and profile != "dev":
        words += ["--profile", profile]
    return " ".join(shlex.quote(word) for word in words)


def step_number(part):
    return int(part) if part.isdigit() else None


def from_outcome(part, label, outcome, impl, seed, profile=None, invariants=()):
    """The ``Verdict`` of one part's ``check.Outcome``."""
    if outcome.status == "passed":
        return Verdict(part, label, "ok", outcome.wall, outcome.tests)
    if outcome.status != "failed":
        detail = outcome.error or "\n".join(outcome.output.strip().splitlines()[-15:])
        return Verdict(part, label, outcome.status, outcome.wall, outcome.tests, detail=detail)
    failure = outcome.failure
    entry = failure.failures[0] if failure.failures else {"error": failure.longrepr, "notes": []}
    call, expected, got = expected_and_got(entry, impl)
    calls = plain_calls(entry.get("notes", ()), invariants)
    if call and calls and call.strip().startswith(calls[-1].strip()):
        calls = calls[:-1]  # the failing call is printed on a line of its own
    test = failure.nodeid.split("::", 1)[-1]
    clause, quote = clause_for(step_number(part), test, expected, got, call + " " + " ".join(calls))
    return Verdict(part, label, "FAIL", outcome.wall, outcome.tests, clause=clause,
                   where=clause_place(clause), quote=quote, test=failure.nodeid, calls=calls,
                   call=call, expected=expected, got=got,
                   rerun=rerun_command(impl, part, seed, profile))


# --------------------------------------------------------- as text

WIDTH = 52
PAD = "    "


def leader(label):
    """``step 3  apply_event ..........``: a part's name, dotted to the verdict's column."""
    return f"{label} ".ljust(WIDTH, ".") + " "


def headline(verdict, label=True):
    """The part's one line: ``step 3  apply_event .......... FAIL``."""
    text = leader(verdict.label) if label else ""
    if verdict.status == "ok":
        tests = f"{verdict.tests} test{'' if verdict.tests == 1 else 's'}"
        return f"{text}ok    ({tests}, {verdict.seconds:.1f} s)"
    if verdict.status == "no tests":
        return f"{text}no tests yet"
    if verdict.status == "FAIL":
        return f"{text}FAIL  ({verdict.seconds:.1f} s)"
    return f"{text}{verdict.status.upper()}  (pytest could not run this part)"


def _block(title, text, indent=PAD):
    lines = str(text).splitlines() or [""]
    width = len(title)
    out = [f"{indent}{title}{lines[0]}"]
    out += [f"{indent}{' ' * width}{line}" for line in lines[1:]]
    return out


def render(verdict, label=True):
    """The verdict as text: one line when it passed, the whole report when it failed.

    ``label=False``: without the part's name (printed before the part ran).
    """
    lines = [headline(verdict, label)]
    if verdict.status == "FAIL":
        lines += _block(f"SPEC.md, {verdict.where}: ", f'"{verdict.quote}"')
        if verdict.calls:
            lines.append(f"{PAD}what the test did (the smallest case found):")
            lines += [f"{PAD}    {line}" for line in verdict.calls]
        if verdict.call:
            lines += _block("the call: ", verdict.call)
        lines += _block("expected: ", verdict.expected)
        lines += _block("got:      ", verdict.got)
        lines.append(f"{PAD}test:     {verdict.test}")
        lines.append(f"{PAD}again:    {verdict.rerun}")
        lines.append("")
    elif verdict.status not in ("ok", "no tests"):
        lines += [f"{PAD}{line}" for line in (verdict.detail or "").splitlines()]
        lines.append("")
    return "\n".join(lines)
