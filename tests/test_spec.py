"""The catalogue of SPEC.md's sentences (``resume.testing.spec``): every clause is read from SPEC.md."""

import pytest

from resume.testing import spec


def test_every_clause_names_words_found_once_in_its_place_of_spec_md():
    ids = [clause.id for clause in spec.BY_ID.values()]
    assert len(ids) == len(set(ids)) == len(spec.CLAUSES) + len(spec.BEYOND_THE_LAB)
    for clause in spec.BY_ID.values():
        sentence = clause.sentence  # LookupError if the words are gone or found twice
        assert " ".join(clause.words.split()) in sentence
        assert sentence in spec.places()[clause.place]


def test_every_step_of_spec_md_has_clauses():
    assert {clause.step for clause in spec.CLAUSES} == set(range(1, 8))
    assert {spec.place(cid).split()[0] for cid in spec.BY_ID} == {"step", "decision"}


def test_a_sentence_is_whole_and_words_that_are_not_there_are_refused():
    assert spec.sentence("S2.close-on-failure") == (
        "If initialisation fails, close the connection and let the error propagate.")
    assert spec.sentence("S1.plus") == spec.sentence("S1.crlf")  # one sentence lists the malformations
    with pytest.raises(LookupError):
        spec.sentence_of("step 3", "no such words")
    with pytest.raises(LookupError):
        spec.sentence_of("step 6", "`timeout`")  # in several sentences of step 6
