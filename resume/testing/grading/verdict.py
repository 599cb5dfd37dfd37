"""A step's verdict in the learner's words: the clause, the call, expected, got, the rerun line.

``resume check`` runs each part of the suite in a pytest process
(``check.run_suite``); this module turns the first failure of a part
(``runner.TestResult``, built by ``report_plugin`` from the exception itself)
into a ``Verdict``:

* ``clause``: the sentence of SPEC.md the failure breaks, as the model
  named it with its prediction (``model.Mismatch.clause``), read from
  SPEC.md itself (``resume.testing.spec``);
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

import ast
import dataclasses
import linecache
import pathlib
import re
import shlex

from resume.testing import model, spec, suite

# --------------------------------------------------------- SPEC.md, quoted


def clause_of(entry):
    """The clause of SPEC.md a failure breaks, as the model named it (``model.Mismatch``, a
    leak the harness saw): None if the failure names none (the suite's own check failed)."""
    return (entry.get("mismatch") or {}).get("clause") or entry.get("clause")


# --------------------------------------------------------- the failure, in plain words

# Notes that Hypothesis adds (its example block of the suite's objects, its
# draws, explanations, reproduction hints), not the test's own note() lines.
_HYPOTHESIS_NOTE = re.compile(
    r"^(Falsifying|Failing|Failed to reproduce|Trying example|Draw \d|Explanation:|\(note:|You can (add|reproduce)|"
    r"@reproduce_failure|Unreliable|Highest target|Retried|Error in|Adding |state\.teardown\(\))")
_IMPL_CLASS = re.compile(r"<class 'resume_impl_under_test_\d+\.([\w.]+)'>")
_IMPL_MODULE = re.compile(r"<module 'resume_impl_under_test_\d+' from '[^']*'>")
_IMPL_NAME = re.compile(r"resume_impl_under_test_\d+\.")
_TEST_CLASS = re.compile(r"<class '(?:[\w]+\.)*([\w]+)'>")


def scrub(text):
    """The harness's reprs out of a text: a class of your module is its name; and a value too long
    to read shown by what it is (``shorten``)."""
    text = _IMPL_CLASS.sub(r"\1", text)
    text = _IMPL_MODULE.sub("your client.py", text)
    text = _IMPL_NAME.sub("", text)
    return shorten(_TEST_CLASS.sub(r"\1", text))


# Characters: a value written longer than this is shown by what it is. (40 cut an error's own
# message, "[Errno 5] closing wait: I/O error", in a learner's round: less readable, not more.)
LONGEST = 60
_LONG_INT = re.compile(r"(?<![\w.])-?\d{%d,}(?![\w.])" % (LONGEST + 1))
# A str or bytes literal as repr() writes it, not an apostrophe of the prose ("the store's").
_LITERAL = re.compile(r"""(?<![\w'"\\])b?(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")


def shorten(text):
    """``text`` with each int, str or bytes value written longer than ``LONGEST`` characters shown
    short: an int near a power of two as that power (``2**1024``, ``-(2**63 + 1)``: exact, and
    Python), any other as what it is (``<an int of 400 digits>``), a str or bytes cut with its
    length (``b'EVENT 0 000000000000'... (70 bytes)``). A 309-digit int printed three times made a
    report unreadable; a description with a comma in it read as two arguments of the call."""
    return _LONG_INT.sub(_int, _LITERAL.sub(_literal, text))


def _int(match):
    value = int(match[0])
    magnitude = abs(value)
    power = magnitude.bit_length() - 1
    for exponent, offset in ((power, 0), (power, 1), (power + 1, -1)):
        if magnitude == 2 ** exponent + offset:
            written = f"2**{exponent}" + {0: "", 1: " + 1", -1: " - 1"}[offset]
            return written if value > 0 else f"-{written}" if not offset else f"-({written})"
    return f"<an int of {len(str(magnitude))} digits>"


def _literal(match):
    text = match[0]
    if len(text) <= LONGEST:
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    unit = "bytes" if isinstance(value, bytes) else "characters"
    return f"{text[:LONGEST - 12]}...{text[-1]} ({len(value)} {unit})"


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


# Errors the harness raises about what a call left behind (resume.testing.drivers.hygiene).
_LEFT_BEHIND = {
    "DescriptorsLeftOpen": "every socket and file the call opened closed by the time it returns",
    "TasksLeftRunning": "no task of the call still running once it returns",
}


UNEXPECTED = "no exception here"  # expected, where the test met an error it compared with no prediction


def expected_and_got(entry, impl=None):
    """``(call, expected, got)`` of one failure entry of ``report_plugin``, in plain words."""
    mismatch = entry.get("mismatch")
    if mismatch:
        return scrub(mismatch["call"]), scrub(mismatch["expected"]), scrub(mismatch["got"])
    error = entry.get("error", "")
    kind, _, message = error.partition(":")
    if kind in _LEFT_BEHIND:
        return scrub(entry.get("call") or ""), _LEFT_BEHIND[kind], scrub(message.strip())
    if kind == "Failed":  # pytest.fail(message): the message tells what happened
        return "", "", scrub(message.strip())
    if kind != "AssertionError":  # the call raised where the test expected none
        raised = entry.get("raised_in") or {}
        mine = impl is not None and raised.get("file") == str(impl)
        call = scrub(raised.get("source", "")) if mine else ""
        text = message.strip().splitlines()[0] if message.strip() else ""
        got = f"raises {kind}" + (f": {scrub(text)}" if text else "") + (
            f" (line {raised['line']} of your file)" if mine else "")
        return call, UNEXPECTED, got
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
    return call, "", rest


# --------------------------------------------------------- the verdict


@dataclasses.dataclass
class Verdict:
    """One part of the suite (a step, the protocol machine, a level) for one file."""

    part: str  # "1".."7", "protocol", "deeper", "power"
    label: str  # "step 3  apply_event"
    # "ok", "FAIL", "broken", "timeout", "no tests", "not written yet" (detail: the names), "not run"
    # (the deeper levels, when a step does not pass; detail: which)
    status: str
    seconds: float | None = 0.0  # the CPU seconds the part's tests used; for "timeout", the bound
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
    in_your_file: str | None = None  # "client.py:173  line = await reader.readline()": where the call was
    shrink_cut: bool = False  # shrinking reached check's bound (suite.SHRINK_SECONDS): a smaller case may exist

    def more(self):
        """The ``more:`` link: the section of the trap its note names, else the clause's (``more``)."""
        return f"{FAILURES}#{_SECTIONS[6]}" if self.detail == WAIT_FOR else more(self.clause)

    def as_json(self):
        return {
            "step": self.part, "label": " ".join(self.label.split()), "status": self.status.lower(),
            "seconds": round(self.seconds or 0.0, 1), "tests": self.tests,
            "clause": None if self.clause is None else {"id": self.clause, "where": self.where,
                                                        "quote": self.quote},
            "calls": self.calls if self.status == "FAIL" else None,
            "call": self.call or None, "expected": self.expected, "got": self.got,
            "test": self.test, "rerun": self.rerun, "detail": self.detail,
            "more": self.more() if self.status == "FAIL" else None,
            "in_your_file": self.in_your_file,
        }


def rerun_command(impl, part, seed, profile=None):
    """The line that runs this part again, from any folder: ``python3 -m resume check ...``."""
    words = ["python3", "-m", "resume", "check", str(impl), "--step", part]
    if seed is not None:  # None: a derandomized profile, whose examples need no seed
        words += ["--seed", str(seed)]
    if profile and profile != "dev":
        words += ["--profile", profile]
    return " ".join(shlex.quote(word) for word in words)


def from_outcome(part, label, outcome, impl, seed, profile=None, invariants=()):
    """The ``Verdict`` of one part's ``check.Outcome``."""
    # A part's figure is its own cost, the CPU its tests used (parts run side by side: their
    # wall times overlap, and summed to 58 s in a 21 s check); none where it is not known.
    if outcome.status == "passed":
        return Verdict(part, label, "ok", outcome.cpu, outcome.tests)
    if outcome.status == "timeout":  # grading.lanes stopped a test still running past its bound
        line = stopped_at(outcome.stack, impl)
        detail = "\n".join([f"test:     {outcome.test or '(between two tests)'} ({outcome.error})",
                            *([f"in your file: {line}  (still running here when the check stopped it)"] if line else []),
                            f"again:    {rerun_command(impl, part, seed, profile)}"])
        return Verdict(part, label, "timeout", outcome.wall, outcome.tests, detail=detail, test=outcome.test,
                       rerun=rerun_command(impl, part, seed, profile), in_your_file=line)
    if outcome.status == "ended":  # grading.lanes: the file under check ended the process running the test
        return Verdict(part, label, "FAIL", None, outcome.tests, test=outcome.test, call=shorten(outcome.call),
                       expected="the call returns or raises, and the program that made it goes on",
                       got=outcome.error, in_your_file=outcome.where, rerun=rerun_command(impl, part, seed, profile))
    if outcome.status != "failed":
        detail = outcome.error or "\n".join(outcome.output.strip().splitlines()[-15:])
        return Verdict(part, label, outcome.status, outcome.wall, outcome.tests, detail=detail)
    failure = outcome.failure
    entry = failure.failures[0] if failure.failures else {"error": failure.longrepr, "notes": []}
    call, expected, got = (shorten(text) if text else text for text in expected_and_got(entry, impl))
    calls = plain_calls(entry.get("notes", ()), invariants)
    if call and calls and call.strip().startswith(calls[-1].strip()):
        calls = calls[:-1]  # the failing call is printed on a line of its own
    clause = clause_of(entry)
    where = in_your_file(entry)
    return Verdict(part, label, "FAIL", outcome.cpu, outcome.tests, clause=clause,
                   where=clause and spec.place(clause), quote=clause and spec.sentence(clause),
                   test=failure.nodeid, calls=calls,
                   call=call, expected=expected, got=got, in_your_file=where, detail=trap(where),
                   shrink_cut=any(suite.SHRINK_STOPPED in text for _, text in failure.sections),
                   rerun=rerun_command(impl, part, seed, profile))


# The commonest trap of step 6, named where it bites (docs/FAILURES.md, step 6).
WAIT_FOR = ("on Python 3.11, asyncio.wait_for can drop a cancellation that arrives just as the wait "
            "ends (CPython gh-86296); `async with asyncio.timeout(timeout):` has no such hole")


def trap(where):
    """A note on a known trap at the learner's line ``where`` (``in_your_file``), or None: a
    cancellation that reached an ``asyncio.wait_for`` and the call returned all the same."""
    if where and where.endswith("(cancelled here, and it returned)") and "wait_for(" in where:
        return WAIT_FOR
    return None


def stopped_at(stack, impl):
    """``client.py:92  <the line>``: the innermost line of ``impl`` in a faulthandler stack (None if
    the process was elsewhere)."""
    for match in re.finditer(r'File "([^"]+)", line (\d+)', stack or ""):
        if pathlib.Path(match[1]).resolve() == pathlib.Path(impl).resolve():
            source = linecache.getline(match[1], int(match[2])).strip()
            return f"{pathlib.Path(match[1]).name}:{match[2]}  {source}".rstrip()
    return None


def in_your_file(entry):
    """``client.py:173  <the line>``: the line of the learner's file the failing call raised at, or
    ``... (cancelled here, and it returned)`` / ``... (still waiting here when the test cut it)``
    where it was suspended when a cancellation or the test's bound reached it; None if it never
    got there."""
    found = entry.get("in_your_file")
    if not found:
        return None
    how = f"  ({found['how']})" if found.get("how") else ""
    name = found["file"].rsplit("/", 1)[-1]
    again = found.get("again")
    then = f"\nthen raised again at {name}:{again['line']}  {again['source']}".rstrip() if again else ""
    return f"{name}:{found['line']}  {found['source']}".rstrip() + how + then


# --------------------------------------------------------- as text

WIDTH = 52
PAD = "    "


def joined(items):
    """``2, 3 and 5``."""
    items = [str(item) for item in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def to_write(part, lacking):
    """What a part not written yet waits for: its step's own names, then the steps it builds on
    (``define Gap, Conflict, apply_event; step 2 first``), not every name again on every line."""
    own = [name for name in model.PUBLIC_NAMES.get(int(part), ()) if name in lacking] if part.isdigit() else []
    before = [str(step) for step, names in sorted(model.PUBLIC_NAMES.items())
              if str(step) != part and any(name in lacking for name in names)]
    words = [f"define {', '.join(own)}"] if own else []
    if before:
        words.append(f"step{'s' if len(before) > 1 else ''} {joined(before)} {'first' if own else 'needed'}")
    return "; ".join(words)


def leader(label):
    """``step 3  apply_event ..........``: a part's name, dotted to the verdict's column."""
    return f"{label} ".ljust(WIDTH, ".") + " "


def headline(verdict, label=True):
    """The part's one line: ``step 3  apply_event .......... FAIL``."""
    text = leader(verdict.label) if label else ""
    if verdict.status == "ok":
        # The protocol part is one state machine that runs many sessions: "1 test" read as thin.
        unit = "state machine" if verdict.part == "protocol" else "test"
        tests = f"{verdict.tests} {unit}{'' if verdict.tests == 1 else 's'}"
        return f"{text}ok    ({tests}{_cpu(verdict.seconds)})"
    if verdict.status == "no tests":
        return f"{text}no tests yet"
    if verdict.status == "not written yet":
        return f"{text}not written yet: {to_write(verdict.part, verdict.detail.split(', '))}"
    if verdict.status == "not run":
        return f"{text}not run: {verdict.detail}"
    if verdict.status == "FAIL":
        return f"{text}FAIL" + (f"  ({_cpu(verdict.seconds)[2:]})" if verdict.seconds is not None else "")
    if verdict.status == "timeout":
        return f"{text}TIMEOUT  (a test still running after {verdict.seconds:g} s was stopped)"
    return f"{text}{verdict.status.upper()}  (pytest could not run this part)"


def _cpu(seconds):
    """``, 1.2 s of CPU``: what a part's tests cost (none where it is not known)."""
    return "" if seconds is None else f", {seconds:.1f} s of CPU"


def _block(title, text, indent=PAD):
    lines = str(text).splitlines() or [""]
    width = len(title)
    out = [f"{indent}{title}{lines[0]}"]
    out += [f"{indent}{' ' * width}{line}" for line in lines[1:]]
    return out


# docs/FAILURES.md: a section per family of failure (a step's clauses; the reclaim rules apart;
# the power cut), each a heading whose GitHub anchor is here.
FAILURES = "docs/FAILURES.md"
_SECTIONS = {1: "step-1-parse_line", 2: "step-2-open_store", 3: "step-3-apply_event", 4: "step-4-replay",
             5: "step-5-consume_line", 6: "step-6-consume_session", 7: "step-7-run_client"}
_RECLAIM = "step-6-reclaiming-the-connection"


def section(clause):
    """The anchor of docs/FAILURES.md's section for a clause id (``"S6.abort"``), None for none."""
    if clause is None:
        return None
    if clause == "D18":
        return "beyond-the-lab-a-power-cut"
    if clause in ("S6.reclaim", "S6.abort", "S6.fallback", "S7.reclaim", "D12") or clause.startswith("D11"):
        return _RECLAIM
    return _SECTIONS[spec.BY_ID[clause].step]


def more(clause):
    """The ``more:`` line of a failure: where docs/FAILURES.md explains it (the whole page for none)."""
    anchor = section(clause)
    return f"{FAILURES}#{anchor}" if anchor else FAILURES


def render(verdict, label=True):
    """The verdict as text: one line when it passed, the whole report when it failed.

    ``label=False``: without the part's name (printed before the part ran).
    """
    lines = [headline(verdict, label)]
    if verdict.status == "FAIL":
        if verdict.clause:
            lines += _block(f"SPEC.md, {verdict.where}: ", f'"{verdict.quote}"')
        else:
            lines.append(f"{PAD}SPEC.md: (this check names no sentence: the test below says what it checks)")
        if verdict.calls:
            # "Smallest" would be a promise: Hypothesis shrinks to a case it cannot shrink further, which
            # may still hold a call the failure does not need.
            lines.append(f"{PAD}what the test did (the case as Hypothesis shrank it" + (
                f", cut after {suite.SHRINK_SECONDS} s of shrinking; a smaller one may exist):"
                if verdict.shrink_cut else "):"))
            lines += [f"{PAD}    {line}" for line in verdict.calls]
        if verdict.call:
            lines += _block("the call: ", verdict.call)
        if verdict.expected:
            lines += _block("expected: ", verdict.expected)
        lines += _block("got:      ", verdict.got)
        if verdict.in_your_file:
            lines += _block("in your file: ", verdict.in_your_file)
        if verdict.detail:
            lines += _block("note:     ", verdict.detail)
        lines.append(f"{PAD}test:     {verdict.test}")
        lines.append(f"{PAD}again:    {verdict.rerun}")
        lines.append(f"{PAD}more:     {verdict.more()}")
        lines.append("")
    elif verdict.status not in ("ok", "no tests", "not written yet", "not run"):
        lines += [f"{PAD}{line}" for line in (verdict.detail or "").splitlines()]
        lines.append("")
    return "\n".join(lines)
