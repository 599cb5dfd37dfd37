"""docs/FAILURES.md explains every family of failure the suite reports: the section each report
links (``more:``) is a heading there, for every clause a known bug breaks."""

import re

from quality import clauses
from resume.testing import spec
from resume.testing.grading import verdict


def anchors():
    """GitHub's anchors of the page's headings: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces made ``-``."""
    text = (spec.ROOT / verdict.FAILURES).read_text()
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_clause_a_known_bug_breaks_links_to_a_section_of_the_page():
    found = anchors()
    broken = sorted({clause for broke in clauses.BREAKS.values() for clause in broke}
                    | {clause.id for clause in clauses.BEYOND_THE_LAB})
    missing = {clause: verdict.section(clause) for clause in broken if verdict.section(clause) not in found}
    assert not missing, f"links of docs/FAILURES.md with no heading there: {missing}"


def test_a_report_of_a_failure_links_its_section():
    failure = verdict.Verdict("6", "step 6  consume_session", "FAIL", clause="S6.abort", where="step 6",
                              quote="...", got="no abort()", test="t", rerun="r")
    assert f"more:     {verdict.FAILURES}#step-6-reclaiming-the-connection" in verdict.render(failure)
    assert failure.as_json()["more"] == f"{verdict.FAILURES}#step-6-reclaiming-the-connection"
