"""The meta-test: the suite catches every known bug, and passes the reference.

Selected with ``python -m pytest -m quality quality/`` (``.ci/run`` does);
the default ``python -m pytest`` never collects this folder (testpaths are
properties/ and stateful/).

For each bug of ``quality/bugs.py`` the suite (properties/ + stateful/) runs
in a fork (quality/forks.py) against a patched copy of resume/client.py under the ``dev``
profile with a fresh example database (see quality/meta.py), three at a time on
this machine. Every bug must make it fail; resume/client.py must pass it. The
report (quality/report.py) is printed at the end: which test caught each bug,
how long it took, how short the counterexample is.

A second run checks the state machines of stateful/ ON THEIR OWN against the
lab's protocol-level bugs (``bugs.PROTOCOL_BUGS``): each must be caught, with
a shrunk example of at most ``MAX_STEPS`` rule steps.
"""

import pytest

from quality import bugs as known
from quality import accuracy, meta, report, trace
from resume.testing import suite
from resume.testing.grading import check
from resume.testing.drivers import loader

pytestmark = pytest.mark.quality


def test_the_collection_spans_the_seven_steps_with_at_least_30_bugs():
    assert len(known.BUGS) >= 30
    assert {bug.step for bug in known.BUGS} == set(range(1, 8))
    assert len({bug.id for bug in known.BUGS}) == len(known.BUGS)


@pytest.mark.parametrize("bug", known.BUGS, ids=lambda bug: bug.id)
def test_each_patch_applies_once_and_yields_a_loadable_implementation(bug, tmp_path):
    source = meta.BASES[bug.base].read_text()
    patched = meta.patched(bug)  # PatchError if its base changed under it
    assert patched != source
    path = meta.write_bugs(tmp_path, [bug])[bug.id]
    loader.load(path)  # ImplError if the patch broke the module


def test_a_patch_that_no_longer_matches_fails_loudly():
    stale = known.Bug("stale", 1, "refers to text that is not there", (("no such text", ""),))
    with pytest.raises(known.PatchError):
        known.apply(stale, meta.REFERENCE.read_text())


def test_the_suite_passes_the_reference_and_catches_every_known_bug(capsys):
    results = meta.run_all()
    with capsys.disabled():
        print("\n" + report.table(results) + "\n\n" + report.totals(results))
    reference = results[0]
    assert reference.bug is None
    assert reference.outcome.status == "passed", reference.outcome.output[-3000:]
    missed = {r.bug.id: r.outcome.status for r in results[1:] if not r.outcome.caught}
    assert not missed, f"the suite does not catch: {missed}"
    # Traceability (quality/clauses.py): under this seed, every observable clause
    # of SPEC.md has a known bug that the suite caught.
    gaps = trace.gaps(trace.from_results(results, meta.SEED))
    assert not gaps, "traceability gaps:\n" + "\n".join(gaps)
    # Clause accuracy (quality/accuracy.py): each report, as `resume check` prints it, quotes a
    # sentence its bug breaks (or the bug is listed with SPEC.md's reason), and its got observes.
    wrong = accuracy.misses(results)
    with capsys.disabled():
        print("\n" + accuracy.summary(results, wrong))
    unexplained = accuracy.unexplained(wrong)
    assert not unexplained, "reports that quote a sentence their bug does not break: " + ", ".join(
        f"{bug} ({clause})" for bug, clause, _, _ in unexplained)
    # And each report whose call raised, hung or dropped an error shows the learner's line.
    unplaced = accuracy.unplaced(results)
    assert not unplaced, "reports with no 'in your file:' line: " + ", ".join(
        f"{bug} ({report.got})" for bug, report in unplaced)
    # And none prints a value too long to read, or the event loop's jargon (issue 56).
    unreadable = accuracy.unreadable(results)
    assert not unreadable, "reports a learner cannot read at once: " + ", ".join(
        f"{bug} ({what})" for bug, what in unreadable)
    # And each call on a store says what store it ran on, and each leak the call that left it.
    stateless = accuracy.stateless(results)
    assert not stateless, "reports whose call leaves out its store: " + ", ".join(
        f"{bug} ({call})" for bug, call in stateless)


# A shrunk state machine counterexample longer than this is no longer a
# readable story; the machines' own aim is 5 steps or fewer (issue 4).
MAX_STEPS = 10


def test_the_state_machines_alone_catch_the_protocol_bugs_in_a_few_steps(capsys):
    by_id = {bug.id: bug for bug in known.BUGS}
    selected = [by_id[bug_id] for bug_id in known.PROTOCOL_BUGS]
    results = meta.run_all(selected, reference=False, paths=[check.ROOT / "stateful"])
    with capsys.disabled():
        print("\nstateful/ alone:\n" + report.table(results) + "\n\n" + report.totals(results))
    missed = {r.bug.id: r.outcome.status for r in results if not r.outcome.caught}
    assert not missed, f"the state machines alone do not catch: {missed}"
    long = {r.bug.id: r.outcome.size for r in results
            if r.outcome.unit != "steps" or r.outcome.size > MAX_STEPS}
    assert not long, f"not a state machine example of at most {MAX_STEPS} steps: {long}"


# The two-receiver machine races two connections on one store, and now and then
# a second connection catches a two-transaction commit between its halves (the
# cursor lagging the row): a real catch, but one of timing, not of the seed.
RACES = ("test_two_receivers.py",)


def test_the_crash_only_bugs_escape_the_suite_without_its_crash_tests(capsys):
    """What the crash tests are worth: without them (and the race) the suite passes each crash-only bug."""
    paths = [path for path in suite.suite_paths() if path.name not in known.CRASH_TESTS + RACES]
    results = meta.run_all(known.CRASH_BUGS, reference=False, paths=paths)
    with capsys.disabled():
        print("\nwithout the crash tests:\n" + report.table(results))
    caught = {r.bug.id: r.outcome.status for r in results if r.outcome.status != "passed"}
    assert not caught, f"not crash-only after all (or the run broke): {caught}"
