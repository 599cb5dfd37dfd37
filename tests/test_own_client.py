"""``--impl`` / ``RESUME_IMPL`` reach only the contract's tests; ``tests/`` keeps ``resume/client.py``.

Claim (tests/conftest.py): with a known-buggy file in ``RESUME_IMPL``, the
tests of the project's own tools still test ``resume/client.py``, in this
process and in the processes they start.
"""

import os

from quality import bugs as known
from quality import meta
from resume.testing.drivers import loader
from resume.testing.grading import runner


def test_here_the_chosen_implementation_is_the_project_own(impl):
    assert loader.ENV_VAR not in os.environ
    assert loader.chosen() is impl
    assert loader.chosen_path() == loader.DEFAULT_PATH


def test_a_buggy_resume_impl_does_not_reach_the_tests_of_the_tools(tmp_path):
    bug = next(b for b in known.BUGS if b.id == "resume-minus-one")  # the demo's recovery fails
    buggy = meta.write_bugs(tmp_path, [bug])[bug.id]
    run = runner.run(["-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                      "tests/test_own_client.py::test_here_the_chosen_implementation_is_the_project_own",
                      "tests/test_cli.py::test_the_demo_checks_its_claims_and_keeps_the_store_when_asked"],
                     extra_env={loader.ENV_VAR: str(buggy)}, timeout=120)
    assert run.returncode == 0, run.output
    assert [test.outcome for test in run.tests] == ["passed", "passed"], run.output
