"""pytest plugin loaded in the child by ``resume.testing.grading.runner``: one JSON line per test report.

``runner.run`` starts pytest with ``-p resume.testing.grading.report_plugin`` and names
a file in ``RESUME_RUNNER_RESULTS``; this plugin appends to it one JSON object
for each report pytest makes (collection, and the setup, call and teardown of
each test): node id, phase, outcome, duration, pytest's own text of the
failure, the report's sections (captured output, Hypothesis's section) and,
for a failure, what a learner needs, taken from the exception itself rather
than from the console:

* ``notes``: everything Hypothesis attached to the exception (PEP 678
  ``__notes__``): the falsifying example under whatever heading this version
  of Hypothesis gives it, every ``Draw``, every ``note()``, the state
  machine's steps, whole and in order;
* ``error``: the exception's type and message (pytest's assertion rewriting
  puts the compared values there);
* ``mismatch``: for a ``model.Mismatch``, its call, expected and got, as
  plain text (``resume.testing.grading.verdict`` prints them on lines of their own);
* ``where``: the failing line of the suite (file, line, the statement whole,
  the comment lines right above it), and ``raised_in`` when the exception
  came from deeper down (the implementation, say).

An exception group (Hypothesis found several distinct failures) gives one
entry per failure. The structured part is built on the worker side
(``pytest_runtest_makereport``, where the exception is at hand) and travels
in ``report.user_properties``, so it survives pytest-xdist; the controller
writes the lines (``pytest_runtest_logreport``).
"""

import dis
import json
import linecache
import os
import pathlib
import resource
import traceback

import pytest

from resume.testing.drivers import loader
from resume.testing.grading.runner import RESULTS_VAR
_KEY = "resume.runner"


def _is_suite_file(filename, root):
    path = pathlib.Path(filename)
    return (path.is_absolute() and path.is_relative_to(root)
            and "site-packages" not in path.parts and ".venv" not in path.parts)


def _statement(frame):
    """The failing statement whole (all its lines) and the comment lines right above it."""
    first, last = frame.lineno, getattr(frame, "end_lineno", None) or frame.lineno
    lines = [linecache.getline(frame.filename, n).rstrip() for n in range(first, last + 1)]
    above = []
    number = first - 1
    while number > 0:
        text = linecache.getline(frame.filename, number).rstrip()
        if not text.lstrip().startswith("#"):
            break
        above.insert(0, text)
        number -= 1
    return "\n".join(_dedent(above + lines))


def _dedent(lines):
    margin = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return [l[margin:] for l in lines]


def _describe(error, root):
    """The learner's view of one exception: notes, type and message, where it failed."""
    frames = traceback.extract_tb(error.__traceback__)
    suite = [f for f in frames if _is_suite_file(f.filename, root)]
    entry = {
        "error": f"{type(error).__name__}: {error}".rstrip(),
        "notes": [str(note) for note in getattr(error, "__notes__", ())],
        "where": None,
        "raised_in": None,
        "mismatch": None,
        "clause": None,
        "call": getattr(error, "call", None) if isinstance(error, AssertionError) else None,  # a leak's (hygiene)
        "in_your_file": _in_your_file(getattr(error, "raised", None) or error,
                                      returned=getattr(error, "returned", False)),
    }
    # A model.Mismatch carries the call, the expected and the got apart: kept as
    # they are, so that the report needs no parsing of the message.
    parts = getattr(error, "parts", None)
    if isinstance(error, AssertionError) and callable(parts):
        entry["mismatch"] = parts()
    # The clause of SPEC.md the failure breaks, where the harness named one (a leak).
    entry["clause"] = getattr(error, "clause", None) if isinstance(error, AssertionError) else None
    if suite:
        frame = suite[-1]
        entry["where"] = {"file": str(pathlib.Path(frame.filename).relative_to(root)),
                          "line": frame.lineno, "source": _statement(frame)}
    # Where it was raised, if deeper than the suite's line and not in a library
    # (pytest.raises' own "DID NOT RAISE" says nothing more).
    own = [f for f in frames if "site-packages" not in pathlib.Path(f.filename).parts]
    if own and (not suite or own[-1] is not suite[-1]):
        frame = own[-1]
        entry["raised_in"] = {"file": frame.filename, "line": frame.lineno,
                              "source": (frame.line or "").strip()}
    return entry


def _in_your_file(error, returned=False):
    """``{file, line, source, how}``: the innermost line of the file under test that ``error`` went
    through (where it raised, or where it was suspended when a cancellation or a timeout reached
    it), looking down the chain of errors it arose from; None if it never passed there.
    ``returned``: the call returned all the same (it dropped ``error``), and ``how`` says so."""
    mine = [(file, line) for module, file, line in getattr(error, "suspended_at", ())
            if module.startswith(loader.MODULE_PREFIX)]
    if mine:  # a call cut while it waited: the innermost line of the file it waited at
        file, line = mine[-1]
        how = "cancelled here, and it returned" if returned else "still waiting here when the test cut it"
        return {"file": file, "line": line, "source": linecache.getline(file, line).strip(), "how": how}
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        passed = []  # the file's entries in the traceback, outermost first
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_globals.get("__name__", "").startswith(loader.MODULE_PREFIX):
                passed.append(tb)
            tb = tb.tb_next
        if passed:
            inner = passed[-1]
            found = {"file": inner.tb_frame.f_code.co_filename, "line": inner.tb_lineno,
                     "source": _source(inner), "how": "raised here, and it returned" if returned else None}
            # An error caught and raised again by name (`raise error`) passes that `raise` on its
            # way out: where the file chose to let it go (a closing error that replaced the
            # session's own), shown beside where it arose.
            again = [tb for tb in passed[:-1] if tb.tb_frame.f_code.co_code[tb.tb_lasti] == _RAISE]
            if again:
                found["again"] = {"line": again[0].tb_lineno, "source": _source(again[0])}
            return found
        error = error.__cause__ or error.__context__
    return None


_RAISE = dis.opmap["RAISE_VARARGS"]


def _source(tb):
    return linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).strip()


def _failures(error, root):
    if isinstance(error, BaseExceptionGroup):
        found = []
        for inner in error.exceptions:
            found += _failures(inner, root)
        # Notes on the group itself (Hypothesis's explanations) go to the first.
        if found and getattr(error, "__notes__", None):
            found[0]["notes"] += [str(note) for note in error.__notes__]
        return found
    return [_describe(error, root)]


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: Hypothesis's section is in by then
def pytest_runtest_makereport(item, call):
    report = yield
    if call.excinfo is not None and report.failed:
        root = pathlib.Path(str(item.config.rootpath))
        report.user_properties.append((_KEY, _failures(call.excinfo.value, root)))
    return report


def _write(config, record):
    path = os.environ.get(RESULTS_VAR)
    if not path or hasattr(config, "workerinput"):  # an xdist worker: the controller writes
        return
    with open(path, "a", encoding="utf-8") as results:
        results.write(json.dumps(record) + "\n")


def pytest_configure(config):
    global _config
    _config = config


_config = None


def pytest_runtest_logreport(report):
    failures = [value for key, value in report.user_properties if key == _KEY]
    _write(_config, {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "duration": report.duration,
        "longrepr": report.longreprtext if report.failed else "",
        "sections": [list(section) for section in report.sections] if report.failed else [],
        "failures": failures[0] if failures else [],
    })


def pytest_unconfigure(config):
    """The process's CPU seconds, its own and its reaped children's (receivers): what a part cost
    beside what it waited (``runner.Run.cpu``)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    _write(config, {"nodeid": "", "when": "rusage", "outcome": "passed", "duration": sum(
        (usage.ru_utime + usage.ru_stime for usage in (own, children)))})


def pytest_collectreport(report):
    if report.failed:
        _write(_config, {"nodeid": report.nodeid, "when": "collect", "outcome": "failed",
                         "duration": 0.0, "longrepr": report.longreprtext, "sections": [],
                         "failures": []})
