"""Step 7, ``run_client``: a timeout that the mutation run of quality/ showed untested.

Claim: an infinite timeout is ValueError before anything is opened, whichever
float object holds it: ``float("inf")`` or ``1e309`` made at run time, not
only the ``math.inf`` object itself.

Why: cosmic-ray's mutant ``0 < seconds is not math.inf`` (an identity test
where a comparison belongs) survived: the suite's invalid timeouts use the
``math.inf`` object, for which ``is not`` happens to give the right answer.
"""

import asyncio
import os

import pytest

from resume.testing import peers, store


@pytest.mark.parametrize("text", ["inf", "1e309", "Infinity"])
def test_an_infinite_timeout_made_at_run_time_is_value_error_and_opens_nothing(impl, text):
    timeout = float(text)  # a new float object, not math.inf
    with store.temp_store_path() as path:
        with pytest.raises(ValueError):
            asyncio.run(impl.run_client(peers.HOST, peers.closed_port(), path, timeout))
        assert not os.path.exists(path), "the store was opened before the timeout was checked"
