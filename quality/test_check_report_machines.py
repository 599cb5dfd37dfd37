"""``resume check``'s report of a state machine failure: the steps whole, the notes, the assertion.

The claims of quality/test_check_report.py, for two protocol-level known bugs
caught by stateful/ (the example is then the machine's steps). Selected with
``python -m pytest -m quality quality/``, like the meta-test: a state machine
takes 10-30 s to catch a bug here, too long for the default suite's minute.
"""

import pytest

from quality.test_check_report import MACHINE_CASES, assert_complete_report, run_check

pytestmark = pytest.mark.quality

CASES = MACHINE_CASES


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_report_of_a_state_machine_failure_is_complete(case, tmp_path):
    assert_complete_report(*run_check(case, tmp_path))
