"""Is there a serial order that explains two sessions run at once? (QuickCheck's parallel check)

Two sessions ran truly at the same time on one store, each fed its own
script of valid log lines. What each one saw is its list of ACKs and how it
ended (at EOF, or refused a line with Gap or Conflict). The result is
accepted only if some interleaving of the two scripts, line by line, run
through the one-cursor model, gives each session exactly what it saw
(Claessen, Palka, Smallbone, Hughes, Wiger: "Finding race conditions in
Erlang with QuickCheck and PULSE", ICFP 2009). The search is over
``(lines done by the first, lines done by the second, cursor)``: the model's
whole state is its cursor, because every line is a slice of one log.
"""

import dataclasses

from resume.testing import model


@dataclasses.dataclass(frozen=True)
class Seen:
    """What one session showed: its script, how many lines it ACKed, and the refusal that ended it."""

    seqs: tuple  # the seqs of its script, in order (all valid log content)
    acked: int  # how many lines were ACKed (a prefix of the script, in order)
    refused: str | None  # "gap" or "conflict" if a refusal ended it, None at EOF

    @property
    def end(self):
        return self.acked + (1 if self.refused else 0)


def _outcome(last, seq):
    # Every line is log content: at or below the cursor it is the same event again.
    return model.decide(last, {seq: 0}, seq, 0)


def final_cursors(start, first, second):
    """Every cursor a serial order of ``first`` and ``second`` can end at (empty: none explains them)."""
    sessions = (first, second)
    todo = [(0, 0, start)]
    seen = set(todo)
    ends = set()
    while todo:
        done = todo.pop()
        i, j, last = done
        if (i, j) == (first.end, second.end):
            ends.add(last)
        for which, index in ((0, i), (1, j)):
            session = sessions[which]
            if index >= session.end:
                continue
            seq = session.seqs[index]
            outcome = _outcome(last, seq)
            wanted = ("applied", "duplicate") if index < session.acked else (session.refused,)
            if outcome not in wanted:
                continue
            after = seq if outcome == "applied" else last
            state = (i + 1, j, after) if which == 0 else (i, j + 1, after)
            if state not in seen:
                seen.add(state)
                todo.append(state)
    return ends
