"""The suite on code nobody here wrote: the foreign corpus (quality/foreign/, quality/corpus.py).

Every correct file passes the lab (no false alarm), every single-mistake
variant fails it, and the report's first failing part, quoted sentence and
line are compared with the variant's manifest. The four figures are printed;
the first two must be whole, the others no lower than ``FLOOR`` (raise it
as the model learns to name more mistakes: a drop is a report that got worse).
Selected with ``python -m pytest -m quality quality/`` (CI's meta stage).
"""

import pytest

from quality import corpus

pytestmark = pytest.mark.quality

# The figures as measured on 2026-12-07 (quality/foreign/README.md), the least each may be.
FLOOR = {"step": 60, "sentence": 60, "line": 19}


@pytest.fixture(scope="module")
def judged():
    good, bad = corpus.correct_files(), corpus.variants()
    reports = corpus.check_files(good + bad)
    correct = {entry.path: reports[entry.path] for entry in good}
    return good, bad, correct, {entry.path: corpus.judge(entry, reports[entry.path]) for entry in bad}


def test_the_corpus_is_whole():
    assert len(corpus.correct_files()) >= 8 and len(corpus.variants()) >= 60


def test_no_false_alarm_on_a_correct_foreign_file(judged):
    good, _, correct, _ = judged
    alarms = [f"{entry.path.name}: {correct[entry.path]['summary']}" for entry in good
              if correct[entry.path]["status"] != "pass"]
    assert not alarms, "false alarms on correct files written elsewhere:\n" + "\n".join(alarms)


def test_every_foreign_variant_is_caught_and_reported_as_its_author_says(judged, capsys):
    _, bad, correct, found = judged
    figures = corpus.figures(correct, found)
    with capsys.disabled():
        print("\nthe foreign corpus: " + "; ".join(f"{name}: {value}" for name, value in figures.items()))
    missed = [entry.path.name for entry in bad if not found[entry.path]["caught"]]
    assert not missed, f"variants the suite let through: {missed}"
    for name, least in FLOOR.items():
        got = int(figures[name].split(" of ")[0])
        assert got >= least, f"{name}: {figures[name]}, fewer than the {least} of {FLOOR}"
