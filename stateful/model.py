"""What the store must hold, worked out without the implementation.

The publisher's log starts at seq 0 and is never rewritten, so a correct
store always holds a prefix of it: the ledger is seqs ``0..last`` with the
logged deltas, and the total is their sum. The model is that ``last`` plus
the log; ``receive`` says what a correct receiver does with one event.

It also keeps the books of what the receiver was OFFERED since the store was
last checked (``receive`` and ``offer`` count; ``cursors_allowed`` and
``checked`` use them): whatever an implementation does, the store's cursor
never goes back and moves by at most one per event offered.
"""

import dataclasses


@dataclasses.dataclass
class Model:
    """Every event ever published (``deltas[seq]``) and the cursor a correct store has."""

    deltas: list = dataclasses.field(default_factory=list)
    last: int = -1
    offered: int = 0  # events or lines the receiver was given since the previous check
    checked_last: int = -1  # the store's cursor at the previous check

    @property
    def total(self):
        return sum(self.deltas[: self.last + 1])

    @property
    def final(self):
        """The last published seq (-1 before anything is published)."""
        return len(self.deltas) - 1

    def unapplied(self):
        """Whether a published event is not in a correct store yet."""
        return self.final > self.last

    def ledger(self):
        """The ledger a correct store holds: ``{seq: delta}``, in seq order."""
        return dict(enumerate(self.deltas[: self.last + 1]))

    def log(self):
        """The whole published log as ``(seq, delta)`` pairs."""
        return list(enumerate(self.deltas))

    def delta_of(self, seq, default=1):
        """The published delta of ``seq``, or ``default`` for a seq not published yet."""
        return self.deltas[seq] if 0 <= seq < len(self.deltas) else default

    def receive(self, seq, delta):
        """Offer one event and take it as a correct receiver would: 'applied', 'duplicate', 'gap' or 'conflict'."""
        self.offer()
        if seq > self.last + 1:
            return "gap"
        if seq <= self.last:
            return "duplicate" if self.deltas[seq] == delta else "conflict"
        if self.delta_of(seq, None) != delta:
            raise AssertionError(f"test bug: event {seq} {delta} was never published")
        self.last = seq
        return "applied"

    def offer(self, count=1):
        """Count lines given to the receiver that a correct one does not apply (a fault, a bad line)."""
        self.offered += count

    def cursors_allowed(self):
        """Where the store's cursor may be now, whatever the implementation did with what it was offered."""
        return range(self.checked_last, self.checked_last + self.offered + 1)

    def checked(self, stored_last):
        """The store was checked and its cursor is ``stored_last``: start counting again."""
        self.checked_last, self.offered = stored_last, 0
