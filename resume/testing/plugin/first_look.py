"""A first look: each step's model property with a few examples, before any step's long search.

Most bugs show in the first examples of some step's model property (in the
benchmark, most known bugs are caught within a tenth of a second of their
test's start), yet a plain run reaches step 6's property only after steps 1-5
have spent their whole budgets. So each model property is run as two tests:

* ``test_..._first_look`` (``first_look(test, *strategies)``): the property's
  explicit ``@example``s and its first ``LOOK`` generated examples;
* ``test_...`` itself (``@searching(budget)``): the rest of its budget, the
  long search.

conftest.py runs every first look before anything else, so that ``pytest -x``
meets most bugs of any step within seconds. Between them the two tests run
the property's whole budget, no more: the look's examples are the search's
first ones (under ``dev`` each draws at random; under the derandomized ``ci``
they are the same few examples, once more).
"""

from hypothesis import Phase, given, settings

from resume.testing import suite

LOOK = 3  # generated examples a first look runs, beside the property's explicit examples
SUFFIX = suite.FIRST_LOOK_SUFFIX


def searching(max_examples=None):
    """Settings for a property that has a first look: its budget (the profile's by default) less
    the look's examples, and not the explicit examples, which the look runs."""
    budget = settings.default.max_examples if max_examples is None else max_examples
    return settings(max_examples=max(1, budget - LOOK),
                    phases=[phase for phase in settings.default.phases if phase is not Phase.explicit])


def first_look(test, *strategies, **named):
    """The twin of ``test``, which is decorated ``@given(*strategies, **named)``: its explicit
    examples and ``LOOK`` generated ones.

    The strategies are passed again (Hypothesis keeps them privately); a twin
    that does not fit the body's arguments fails at its first call.
    """
    look = settings(max_examples=LOOK)(given(*strategies, **named)(test.hypothesis.inner_test))
    look.pytestmark = test.pytestmark  # the same parametrization and markers (asyncio)
    return look


def is_first_look(item):
    """Whether a pytest item is a first look."""
    return getattr(item, "originalname", item.name).endswith(SUFFIX)
