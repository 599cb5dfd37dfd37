"""Read the report that ``pytest --hypothesis-show-statistics`` prints.

Hypothesis prints, for each test, one block per phase::

    properties/test_x.py::test_y:

      - during generate phase (0.50 seconds):
        - Typical runtimes: ~ 1ms, of which < 1ms in data generation
        - 25 passing, 0 failing, and 3 invalid test cases
        - Events:
          * 40.00%, malformed: leading zero

      - Stopped because settings.max_examples=25

That text is the only form in which pytest (and pytest-xdist, which ships it
from the workers) hands the statistics out, so ``fuzz.py`` and ``bench.py``
read it here rather than reaching into Hypothesis's internals. Hypothesis does
not promise the format; if it changes, this is the one place to adapt.
"""

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^(\S+::.+):$")  # parametrized ids may hold spaces
_PHASE = re.compile(r"^  - during (\w+) phase \(([\d.]+) seconds\):$")
_CASES = re.compile(r"^    - (\d+) passing, (\d+) failing, and (\d+) invalid test cases$")
_EVENT = re.compile(r"^      \* ([\d.]+)%, (.*)$")
_STOPPED = re.compile(r"^  - Stopped because (.*)$")


@dataclass
class TestStatistics:
    """What Hypothesis reported for one test (one pytest node id)."""

    nodeid: str
    seconds: dict = field(default_factory=dict)  # phase -> seconds
    cases: dict = field(default_factory=dict)  # phase -> (passing, failing, invalid)
    events: dict = field(default_factory=dict)  # event -> count of generate-phase cases
    stopped: str = ""

    @property
    def total_cases(self):
        """Test cases run in all phases (for a state machine: machine runs)."""
        return sum(sum(counts) for counts in self.cases.values())

    @property
    def failing(self):
        return sum(counts[1] for counts in self.cases.values())


def parse(text):
    """All the statistics blocks in a pytest output, as ``{nodeid: TestStatistics}``."""
    found = {}
    current = phase = None
    for line in text.splitlines():
        if match := _HEADER.match(line):
            current = found.setdefault(match[1], TestStatistics(match[1]))
            phase = None
        elif current is None:
            continue
        elif match := _PHASE.match(line):
            phase = match[1]
            current.seconds[phase] = float(match[2])
        elif (match := _CASES.match(line)) and phase:
            current.cases[phase] = tuple(int(match[i]) for i in (1, 2, 3))
        elif (match := _EVENT.match(line)) and phase == "generate":
            # Percentages of the generate phase's cases: back to counts.
            generated = sum(current.cases.get("generate", (0, 0, 0)))
            current.events[match[2]] = round(float(match[1]) * generated / 100)
        elif match := _STOPPED.match(line):
            current.stopped = match[1]
    return found


def merge(into, more):
    """Add the statistics of another run (``more``) to ``into``, test by test."""
    for nodeid, stats in more.items():
        total = into.setdefault(nodeid, TestStatistics(nodeid))
        for phase, seconds in stats.seconds.items():
            total.seconds[phase] = total.seconds.get(phase, 0.0) + seconds
        for phase, counts in stats.cases.items():
            old = total.cases.get(phase, (0, 0, 0))
            total.cases[phase] = tuple(a + b for a, b in zip(old, counts))
        for event, count in stats.events.items():
            total.events[event] = total.events.get(event, 0) + count
        total.stopped = stats.stopped or total.stopped
    return into
