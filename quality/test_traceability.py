"""The meta-test of traceability: every clause of SPEC.md has a known bug, every known bug a clause.

Static checks of ``quality/clauses.py`` against SPEC.md and ``quality/bugs.py``
(that each bug is also CAUGHT is the meta-test's own check, in
test_known_bugs.py; ``python -m quality.trace`` puts the two together in
docs/TRACEABILITY.md).
"""

import pathlib

import pytest

from quality import bugs as known
from quality import clauses

pytestmark = pytest.mark.quality

SPEC = pathlib.Path(__file__).resolve().parent.parent / "SPEC.md"


def _words(text):
    return " ".join(text.split())


def test_clause_ids_are_unique_and_every_quote_is_in_spec_md():
    ids = [clause.id for clause in clauses.CLAUSES]
    assert len(ids) == len(set(ids))
    spec = _words(SPEC.read_text())
    stale = [clause.id for clause in clauses.CLAUSES if _words(clause.quote) not in spec]
    assert not stale, f"quotes no longer in SPEC.md: {stale}"


def test_every_known_bug_breaks_a_known_clause():
    bug_ids = {bug.id for bug in known.BUGS}
    assert not bug_ids - set(clauses.BREAKS), "bugs with no clause in quality/clauses.py BREAKS"
    assert not set(clauses.BREAKS) - bug_ids, "BREAKS names bugs that quality/bugs.py does not have"
    ids = set(clauses.by_id())
    unknown = {bug: c for bug, cs in clauses.BREAKS.items() for c in cs if c not in ids}
    assert not unknown, f"BREAKS names clauses that do not exist: {unknown}"
    assert all(clauses.BREAKS.values()), "a bug with an empty clause list"


def test_every_observable_clause_has_a_known_bug_and_no_unobservable_one_has():
    without = [c.id for c in clauses.CLAUSES if not clauses.bugs_of(c.id) and c.id not in clauses.UNOBSERVABLE]
    assert not without, f"clauses that no known bug breaks (gaps): {without}"
    contradicted = [cid for cid in clauses.UNOBSERVABLE if clauses.bugs_of(cid)]
    assert not contradicted, f"marked unobservable, yet a known bug breaks them: {contradicted}"
    assert set(clauses.UNOBSERVABLE) <= set(clauses.by_id())


def test_every_step_of_spec_md_has_clauses():
    assert {clause.step for clause in clauses.CLAUSES} == set(range(1, 8))
