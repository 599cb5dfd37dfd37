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
* ``Cursor``: the one-cursor model that turns a plan into the events a
  correct receiver sees and what it must do with each: ``lines(plan)``.

``record_sizes(events, lines)`` tags an example with ``event()`` so that
Hypothesis's statistics (``pytest --hypothesis-show-statistics``) show the
sizes reached in every run.
"""

import dataclasses

from hypothesis import Phase, event, settings
from hypothesis import strategies as st

from resume.testing import strategies as sts

SMALL_RUN = (1, 3)
LONG_RUN = (200, 700)  # past the 128-event log of replay, and past any round window (200, 256, 500)
# Malformed frames, each a ValueError: cut off (it runs into the next line), a
# leading zero, CRLF, not a number, over the 64-byte limit (the reader's too).
BAD_FRAMES = [b"EVENT 1 2", b"EVENT 01 2\n", b"EVENT 1 2\r\n", b"EVENT x 2\n", b"EVENT 1 2" + b" " * 60 + b"\n"]


def shrink_fast(**overrides):
    """The profile's settings for a test of long runs: one bug at a time, no explain phase.

    A failing example here may hold hundreds of events; the explain phase
    re-runs it many times over to say little, and shrinking a second kind of
    failure doubles the wait. ``overrides`` (max_examples, say) go on top.
    """
    current = settings.default
    return settings(report_multiple_bugs=False,
                    phases=[phase for phase in current.phases if phase is not Phase.explain], **overrides)


def run_lengths():
    """How many events one run holds: 1-3 (shrinks well), or 200-700 (reaches far)."""
    return st.integers(*SMALL_RUN) | st.integers(*LONG_RUN)


def backs():
    """How far behind the cursor a resend goes: 0-3, or 128 and more (past replay's log)."""
    return st.integers(0, 3) | st.integers(128, 10**4)


def _run():
    # Long runs take an extreme delta, so the total goes far from zero.
    return st.tuples(st.just("run"), run_lengths(), sts.deltas())


def _steps():
    return st.one_of(
        _run(),
        st.tuples(st.just("resend"), backs()),
        st.tuples(st.just("conflict"), backs(), sts.deltas()),
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
    """One line a receiver gets, and what a correct receiver does with it."""

    frame: bytes
    seq: int | None  # None for a malformed frame
    delta: int | None
    outcome: str  # "applied", "duplicate", "gap", "conflict", "malformed"
    back: int = 0  # how far behind the cursor a resend went

    @property
    def accepted(self):
        return self.outcome in ("applied", "duplicate")


@dataclasses.dataclass
class Cursor:
    """The model with one cursor: every delta applied so far, in seq order, from ``first``.

    ``first`` may be above 0 (a store another writer left at some cursor):
    ``deltas[i]`` is then seq ``first + i``.
    """

    last: int = -1
    total: int = 0
    deltas: dict = dataclasses.field(default_factory=dict)  # seq -> delta, for every applied seq

    def take(self, seq, delta):
        """What a correct receiver does with ``(seq, delta)``; the model moves on if it applies."""
        if seq > self.last + 1:
            return "gap"
        if seq <= self.last:
            return "duplicate" if self.deltas.get(seq) == delta else "conflict"
        self.deltas[seq] = delta
        self.last, self.total = seq, self.total + delta
        return "applied"

    def line(self, seq, delta):
        back = self.last - seq
        return Line(sts.frame(seq, delta), seq, delta, self.take(seq, delta), max(back, 0))

    def lines(self, plan, seq_max=sts.SEQ_MAX):
        """The lines of ``plan`` and their outcomes, in order, moving this model along.

        A run stops at ``seq_max``; a resend or conflict ``back`` events behind
        the cursor goes to the oldest seq the model knows if ``back`` is past it.
        """
        out = []
        for step in plan:
            kind = step[0]
            if kind == "run":
                _, n, delta = step
                for _ in range(n):
                    if self.last + 1 > seq_max:
                        break
                    out.append(self.line(self.last + 1, delta))
            elif kind in ("resend", "conflict") and self.deltas:
                seq = max(self.last - step[1], min(self.deltas))
                delta = self.deltas[seq]
                if kind == "conflict":
                    delta = step[2] if step[2] != delta else (delta + 1 if delta < sts.DELTA_MAX else delta - 1)
                out.append(self.line(seq, delta))
            elif kind == "gap" and self.last + step[1] <= seq_max:
                out.append(self.line(self.last + step[1], 0))
            elif kind == "bad":
                out.append(Line(BAD_FRAMES[step[1]], None, None, "malformed"))
        return out


def call(impl, con, line, via):
    """Give ``line`` to ``impl`` through ``via`` ("apply_event" or "consume_line"); the outcome's name.

    apply_event: "applied" (True) or "duplicate" (False); consume_line: "acked"
    (its exact ACK); either: "gap", "conflict", "malformed" (ValueError), or
    "returned ..." for anything else it returned.
    """
    try:
        if via == "apply_event":
            result = impl.apply_event(con, line.seq, line.delta)
            return {True: "applied", False: "duplicate"}.get(result, f"returned {result!r}")
        ack = impl.consume_line(con, line.frame)
        return "acked" if ack == b"ACK %d\n" % line.seq else f"returned {ack!r}"
    except impl.Gap:
        return "gap"
    except impl.Conflict:
        return "conflict"
    except ValueError:
        return "malformed"


def expected_call(line, via):
    """What ``call`` must return for ``line`` through ``via``."""
    return "acked" if via == "consume_line" and line.accepted else line.outcome


def until_first_error(lines):
    """``(accepted, failing)``: the lines before the first one refused, and that one (or None)."""
    for index, line in enumerate(lines):
        if not line.accepted:
            return lines[:index], line
    return lines, None


def record_sizes(events_on_store, lines_in_session=None, far_back=None):
    """``event()`` the size class reached, for the statistics."""
    event(f"events on one store: {'>= 200' if events_on_store >= 200 else '< 200'}")
    if lines_in_session is not None:
        event(f"lines in one session: {'>= 200' if lines_in_session >= 200 else '< 200'}")
    if far_back is not None:
        event(f"resend far behind the cursor (>= 128): {far_back >= 128}")
