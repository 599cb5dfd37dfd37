"""Beyond the lab (SPEC.md decision 18): an ACK survives a power cut.

A separate level, marked ``power_loss``: the lab's verdict never depends on
it (``-m "not power_loss"`` runs the lab alone; ``-m power_loss`` this level).

The session, recorded ONCE per implementation and start under strace (module
fixture, resume/testing/drivers/power.py): on a real disk folder, a new store, or an
empty one another program made in SQLite's default journal (the journal mode
is kept in the file: open_store must set its own); life 1 applies
events 0, 1, 2 and is killed (SIGKILL from ``before_ack``) after committing
event 2 and before ACKing it; life 2 resumes, takes event 2 again as a
duplicate, applies 3, then takes event 1 resent as a duplicate. The ACKs
sent: 0, 1, 2, 3, 1. From that one trace, the power cuts:

* after every ACK, the pessimistic state (every operation not yet made
  durable by an fsync of its file or folder is lost) - a few states, every profile;
* Hypothesis draws a cut (an ACK, and how many disk operations after it) and
  which prefix of its non-durable operations each file and the folder kept;
* under ``ci`` and ``fuzz``: every moment from the first ACK on, under every
  combination of prefixes (a few hundred distinct states, some seconds);
* under ``ci`` and ``fuzz``: Hypothesis draws the session itself (the deltas,
  1-4 events, where the first life is killed, a resent duplicate), each
  example recorded anew (about half a second each).

Every state is judged by the model (``power.judge``): the store opens with
sqlite3's own recovery and with ``open_store``; it is consistent; its cursor
is at least every ACK sent; a new receiver resumes from it and applies
nothing twice. A failure is a short story: which ACK, which operation was not
durable (shrunk to the fewest this model can name), what the store held
after the restart, which event the publisher will never resend.
"""

import asyncio
import os

import pytest
import pytest_asyncio
from hypothesis import given, settings
from hypothesis import strategies as st

from resume.testing import model
from resume.testing.drivers import power
from resume.testing.strategies import foreign_stores

pytestmark = pytest.mark.power_loss

LOG = [(0, 5), (1, 7), (2, -3), (3, 4)]
DUPLICATE = b"EVENT 1 7\n"
LIVES = (power.Life(crash_before_ack=2), power.Life(raw=DUPLICATE))
ACKS = [0, 1, 2, 3, 1]  # life 1: 0, 1 (killed before ACK 2); life 2: 2 again, 3, then the duplicate 1
EXHAUSTIVE = settings.get_current_profile_name() in ("ci", "fuzz")


# Where the session starts: a new store, or an empty one another program made in SQLite's
# default journal (DELETE): the journal mode is kept in the file, so open_store must set its own.
FOREIGN = foreign_stores.Foreign(last=-1, total=0, kept=(), tables_first="checkpoint", row_first=True,
                         spelling="SPEC.md's", journal_mode="delete")


async def _record(impl, log, lives, start=None):
    with power.disk_folder() as folder:
        if start is not None:
            foreign_stores.lay_down(os.path.join(folder, "store.db"), start)
        return await power.record(impl.__file__, folder, log, lives)


STARTS = {"a new store": None, "a store another program made": FOREIGN}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def judges(impl):
    """The session's trace, recorded once per start (both at once), and its judge (which judges
    each distinct state once)."""
    power.require_strace()
    traces = await asyncio.gather(*(_record(impl, LOG, LIVES, start) for start in STARTS.values()))
    for trace in traces:
        for number, (life, (code, words)) in enumerate(zip(LIVES, trace.lives), 1):
            assert code == life.planned_exit, "the session could not be recorded: " + life.ended_otherwise(
                number, code, words)
        acks = [seq for _, seq in trace.acks()]
        assert acks == ACKS, f"the session could not be recorded: the publisher got ACKs {acks}, not {ACKS}"
    return {name: power.Judge(impl, trace) for name, trace in zip(STARTS, traces)}


@pytest.fixture(scope="module", params=list(STARTS))
def judged(judges, request):
    return judges[request.param]


def _fail(judge, breach):
    pytest.fail(power.shrink(judge, breach).story, pytrace=False)


def test_after_every_ack_the_pessimistic_state_keeps_every_acked_event(judged):
    breach, _ = power.sweep(judged, [cut for cut, _ in judged.trace.acks()], every_state=False)
    if breach is not None:
        _fail(judged, breach)


@st.composite
def cuts(draw, trace):
    """A moment after an ACK (that ACK, then 0..all the disk operations before the next one) and a state."""
    acks = [cut for cut, _ in trace.acks()] + [len(trace.ops) + 1]
    index = draw(st.integers(0, len(acks) - 2))
    cut = acks[index] + draw(st.integers(0, acks[index + 1] - 1 - acks[index]))
    keep = {unit: draw(st.integers(0, count)) for unit, count in trace.choices(cut).items() if count}
    return cut, keep


@given(data=st.data())
def test_a_power_cut_after_an_ack_keeps_every_acked_event_in_any_state(judged, data):
    cut, keep = data.draw(cuts(judged.trace), label="cut, keep")
    breach = judged(cut, keep)
    if breach is not None:
        _fail(judged, breach)


@pytest.mark.skipif(not EXHAUSTIVE, reason="ci and fuzz only: every state of every moment (some seconds)")
def test_every_cut_of_a_4_event_session_under_every_state_keeps_every_acked_event(judged, capsys):
    breach, states = power.sweep(judged, judged.trace.cuts())
    with capsys.disabled():
        print(f"\npower cuts: {len(judged.trace.cuts())} moments, {states} states, {judged.judged} distinct judged")
    if breach is not None:
        _fail(judged, breach)


@st.composite
def sessions(draw):
    """A log of 1-4 events, where life 1 is killed (before which ACK, or never), whether a duplicate follows."""
    deltas = draw(st.lists(st.integers(model.DELTA_MIN, model.DELTA_MAX), min_size=1, max_size=4))
    log = list(enumerate(deltas))
    kill = draw(st.none() | st.integers(0, len(log) - 1))
    duplicate = model.frame(*log[draw(st.integers(0, len(log) - 1))]) if draw(st.booleans()) else b""
    return log, (power.Life(crash_before_ack=kill), power.Life(raw=duplicate))


@pytest.mark.skipif(not EXHAUSTIVE, reason="ci and fuzz only: each example records a session anew")
@pytest.mark.asyncio
@settings(max_examples=10)
@given(session=sessions(), data=st.data())
async def test_a_drawn_session_keeps_every_acked_event_after_a_power_cut(impl, session, data):
    power.require_strace()
    log, lives = session
    judge = power.Judge(impl, await _record(impl, log, lives))
    cut = data.draw(cuts(judge.trace), label="cut, keep") if judge.trace.acks() else None
    # In a thread: the judge runs each state's receivers on an event loop of its own.
    story = await asyncio.to_thread(_breach_story, judge, cut)
    if story is not None:
        pytest.fail(story, pytrace=False)


def _breach_story(judge, cut):
    """The story of the first breach after an ACK (its pessimistic state), else at ``cut``; None if none."""
    breach, _ = power.sweep(judge, [at for at, _ in judge.trace.acks()], every_state=False)
    if breach is None and cut is not None:
        breach = judge(*cut)
    return power.shrink(judge, breach).story if breach is not None else None
