"""Commits per second by durability setting, and what the power-cut level costs.

    python -m jobs.power_bench            # prints a Markdown section for docs/BENCHMARKS.md

For resume/client.py (WAL, synchronous=FULL), each correct variant and each
known bug of quality/power_bugs.py: ``COMMITS`` new events, each committed on
its own by ``apply_event`` through the copy's own ``open_store``, on a real
disk folder (the default temporary folder, never /dev/shm: the syncs must be
real), median of ``RUNS`` runs, the settings interleaved so that a busy
minute hits them all alike. Then the level's own cost: one recording of the
4-event session, and the ``ci`` sweep of every state of every moment.
"""

import asyncio
import os
import pathlib
import statistics
import sys
import tempfile
import time

from quality import meta
from quality import power_bugs as power
from resume.testing.drivers import loader
from resume.testing.drivers import power as level

COMMITS = 300
RUNS = 3
LOG = [(0, 5), (1, 7), (2, -3), (3, 4)]
LIVES = (level.Life(crash_before_ack=2), level.Life(raw=b"EVENT 1 7\n"))


def rate(impl):
    with tempfile.TemporaryDirectory(prefix="power-bench-") as folder:
        con = impl.open_store(os.path.join(folder, "store.db"))
        try:
            started = time.perf_counter()
            for seq in range(COMMITS):
                impl.apply_event(con, seq, (seq % 7) - 3)
            return COMMITS / (time.perf_counter() - started)
        finally:
            con.close()


def main():
    source = meta.REFERENCE.read_text()
    with tempfile.TemporaryDirectory(prefix="power-bench-impl-") as folder:
        rows = [("resume/client.py (WAL, FULL)", "safe", meta.REFERENCE)]
        for kind, items in (("safe", power.VARIANTS), ("LOSES ACKed events", power.BUGS)):
            for item in items:
                path = pathlib.Path(folder, item.id.replace("-", "_") + ".py")
                path.write_text(power.apply(item, source))
                rows.append((item.id, kind, path))
        impls = [loader.load(path) for _, _, path in rows]
        rates = [[] for _ in rows]
        for _ in range(RUNS):
            for index, impl in enumerate(impls):
                rates[index].append(rate(impl))
        base = statistics.median(rates[next(i for i, r in enumerate(rows) if r[0] == "sqlite-defaults")])
        out = ["## Commits per second by durability setting (the power-cut level)", "",
               f"{COMMITS} new events, each committed on its own by `apply_event` through each copy's "
               f"`open_store`, on a real disk folder (ext4 here), median of {RUNS} interleaved runs; "
               f"load average at start {os.getloadavg()[0]:.2f}. `python -m jobs.power_bench`.", "",
               "| setting | at a power cut (`pytest -m power_loss`) | commits/s | x SQLite's defaults |",
               "| --- | --- | --- | --- |"]
        for (name, kind, _), found in zip(rows, rates):
            median = statistics.median(found)
            out.append(f"| {name} | {kind} | {median:.0f} | {median / base:.2f} |")
        impl = impls[0]
        with level.disk_folder() as store_folder:
            started = time.perf_counter()
            trace = asyncio.run(level.record(str(meta.REFERENCE), store_folder, LOG, LIVES))
            recorded = time.perf_counter() - started
        judge = level.Judge(impl, trace)
        started = time.perf_counter()
        breach, states = level.sweep(judge, trace.cuts())
        swept = time.perf_counter() - started
        out += ["", f"The level on resume/client.py: recording the 4-event session (two lives under strace) "
                f"{recorded:.2f} s, {len(trace.ops)} operations; the `ci` sweep of every state of every "
                f"moment from the first ACK: {len(trace.cuts())} moments, {states} states, {judge.judged} "
                f"distinct judged in {swept:.1f} s ({'a breach!' if breach else 'no breach'})."]
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
