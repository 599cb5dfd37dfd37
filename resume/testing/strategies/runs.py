"""Long runs on one store and in one session, drawn so that they still shrink to a few small steps.

A bug that starts at the N-th event (a cache, a window, a pruning rule, a cap
on a running figure) hides from examples of a handful of events. The plans
here are short lists of *steps*, and one step can stand for hundreds of
events: ``("run", n, delta)`` is ``n`` new events in a row, each with
``delta`` (a run of ONE kind, the way swarm testing turns the other kinds
off: Groce et al., ISSTA 2012). ``n`` is mostly 1-3 and sometimes 200-700
(``run_lengths``), so a run reaches far past any window an implementation
might pick, and the shrinker still brings ``n`` down to the first failing
count. Resends go ``back`` events behind the cursor (any distance: far behind
a window too), and deltas of +-1000 in long runs carry the total far from 0.

* ``run_lengths()``: 1-3, or 200-700; ``backs()``: 0-3, or 128 and more;
* ``plans()``: lists of steps ``("run", n, delta)``, ``("resend", back)``
  (the same content again: a duplicate), ``("conflict", back, delta)``,
  ``("gap", ahead)``, ``("bad", index)`` (a malformed frame, one of
  ``BAD_FRAMES``);
* ``frames_of(plan)``: the plan made concrete against the model's store (what
  a receiver must do with each line is ``model.Store``'s to say: ``give``).

``record_sizes(events, lines)`` tags an example with ``event()`` so that
Hypothesis's statistics (``pytest --hypothesis-show-statistics``) show the
sizes reached in every run.
"""

import dataclasses

from hypothesis import event
from hypothesis import strategies as st

from resume.testing import model
from resume.testing.strategies import values as sts

SMALL_RUN = (1, 3)
LONG_RUN = (200, 700)  # past the 128-event log of replay, and past any round window (200, 256, 500)
# Malformed frames, each a ValueError: cut off (it runs into the next line), a
# leading zero, CRLF, not a number, over the 64-byte limit (the reader's too).
BAD_FRAMES = [b"EVENT 1 2", b"EVENT 01 2\n", b"EVENT 1 2\r\n", b"EVENT x 2\n", b"EVENT 1 2" + b" " * 60 + b"\n"]


def run_lengths():
    """How many events one run holds: 1-3 (shrinks well), or 200-700 (reaches far)."""
    return st.integers(*SMALL_RUN) | st.integers(*LONG_RUN)


def backs():
    """How far behind the cursor a resend goes: 0-3, or 128 and more (past replay's log)."""
    return st.integers(0, 3) | st.integers(model.LOG_MAX, 10**4)


def _run():
    # Long runs take an extreme delta, so the total goes far from zero.
    return st.tuples(st.just("run"), run_lengths(), sts.valid_deltas())


def _steps():
    return st.one_of(
        _run(),
        st.tuples(st.just("resend"), backs()),
        st.tuples(st.just("conflict"), backs(), sts.valid_deltas()),
        st.tuples(st.just("gap"), st.integers(2, 10**6)),
        st.tuples(st.just("bad"), st.integers(0, len(BAD_FRAMES) - 1)),
    )


def plans(min_size=1, max_size=6, errors=True):
    """A list of steps; the first is always a run. ``errors=False``: no conflict, gap or bad frame."""
    rest = _steps() if errors else (_run() | st.tuples(st.just("resend"), backs()))
    return st.builds(lambda first, more: [first] + more,
                     _run(), st.lists(rest, min_size=min_size - 1, max_size=max_size - 1))


@dataclasses.dataclass(frozen=True)
class Line:
    """One line a receiver gets: its frame, and the event in it (None for a malformed frame)."""

    frame: bytes
    seq: int | None
    delta: int | None
    back: int = 0  # how far behind the cursor a resend went


def frames_of(plan, start=None, seq_max=model.SEQ_MAX):
    """The lines of ``plan``, in order, made concrete against a model store that moves along.

    ``start`` (a ``model.Store``, fresh if None) is where the receiver's store
    stands; it is not changed. A run stops at ``seq_max``; a resend or
    conflict ``back`` events behind the cursor goes to the oldest seq the
    store holds if ``back`` is past it. What a receiver must do with each
    line is the model's to say (``give``), not this function's.
    """
    store = start.copy() if start is not None else model.Store()
    out = []

    def line(seq, delta):
        out.append(Line(model.frame(seq, delta), seq, delta, max(store.last - seq, 0)))
        store.apply_event(seq, delta)

    for step in plan:
        kind = step[0]
        if kind == "run":
            _, n, delta = step
            for _ in range(n):
                if store.last + 1 > seq_max:
                    break
                line(store.last + 1, delta)
        elif kind in ("resend", "conflict") and store.ledger:
            seq = max(store.last - step[1], min(store.ledger))
            delta = store.ledger[seq]
            if kind == "conflict":
                delta = step[2] if step[2] != delta else model.other_delta(delta)
            line(seq, delta)
        elif kind == "gap" and store.last + step[1] <= seq_max:
            line(store.last + step[1], 0)
        elif kind == "bad":
            out.append(Line(BAD_FRAMES[step[1]], None, None))
    return out


def give(impl, con, expected, line, via):
    """Give ``line`` to ``impl`` through ``via`` ("apply_event" or "consume_line") and to the model store.

    Returns ``(got, predicted)`` outcomes; ``expected`` moves as the model says.
    """
    if via == "apply_event":
        return (model.outcome_of(impl, impl.apply_event, con, line.seq, line.delta),
                expected.apply_event(line.seq, line.delta))
    return model.outcome_of(impl, impl.consume_line, con, line.frame), expected.consume_line(line.frame)


def record_sizes(events_on_store, lines_in_session):
    """``event()`` the size classes reached, for the statistics."""
    event(f"events on one store: {'>= 200' if events_on_store >= 200 else '< 200'}")
    event(f"lines in one session: {'>= 200' if lines_in_session >= 200 else '< 200'}")
