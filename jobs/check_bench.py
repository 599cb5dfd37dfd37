"""How long a learner waits for ``resume check``: every part of the whole check, file by file.

    python -m jobs.bench --check                           # the table, into docs/BENCHMARKS.md
    python -m jobs.check_bench --json check-bench.jsonl    # the records, one JSON line per file
    python -m jobs.check_bench --from check-bench.jsonl    # the table again, from records

The files: a stratified sample of the known bugs (``sample``: every step and
every kind among them, a hang, a leak, a swallowed cancellation), every
correct variant and resume/client.py. Each is checked as a learner checks it:
``check.check(file, seed=0)`` under ``dev``, every part (in the lanes that
share them out, ``grading.lanes``), a fresh example database beside warm
caches (``warm``: a learner's checks after the first), one file after
another. Recorded: each part's seconds and CPU seconds (its own and its
receivers', summed over the lanes that ran its units) and its status; the
whole check's wall and the CPU of every process it ran. Wall well beyond CPU is
waiting: a bound waited out, a peer that never answers.
"""

import argparse
import contextlib
import io
import json
import pathlib
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time

from quality import bugs as known
from quality import meta, variants
from resume.testing.drivers import loader
from resume.testing.grading import check

SAMPLE = 60
KINDS = {"hang": re.compile(r"hang|never|unbounded|no timeout|bound", re.I),
         "leak": re.compile(r"leak|open|clos|reclaim|abort", re.I),
         "cancel": re.compile(r"cancel", re.I)}


def kind_of(bug):
    return next((kind for kind, words in KINDS.items() if words.search(bug.what)), "other")


def sample(size=SAMPLE):
    """``size`` known bugs, the same every time: round-robin over (step, kind), in BUGS order."""
    strata = {}
    for bug in known.BUGS:
        strata.setdefault((bug.step, kind_of(bug)), []).append(bug)
    chosen, queues = [], [list(bugs) for _, bugs in sorted(strata.items())]
    while len(chosen) < size and any(queues):
        for queue in queues:
            if queue and len(chosen) < size:
                chosen.append(queue.pop(0))
    return chosen


def files(folder, size=SAMPLE):
    """``[(name, path, kind)]``: the sampled bugs' copies, the correct variants, the reference."""
    folder = pathlib.Path(folder)
    bugs = sample(size)
    written = meta.write_bugs(folder / "bugs", bugs)
    found = [(bug.id, written[bug.id], f"step {bug.step}, {kind_of(bug)}") for bug in bugs]
    found += [(name, path, "correct") for name, path in variants.write(folder / "variants").items()]
    return found + [("resume/client.py", loader.DEFAULT_PATH, "correct")]


# Hypothesis keeps, beside the examples, caches that every later run reads: the Unicode tables
# its text strategies need and the constants it reads from each source file. A learner's first
# check builds them once (4 s more, measured); the bench measures the checks after it: a fresh
# example database, the caches warm (``warm``).
CACHES = ("unicode_data", "constants")


def warm(template):
    """A storage folder with Hypothesis's caches and no examples: one check of the reference made them."""
    check.check(loader.DEFAULT_PATH, seed=0, storage=template, out=io.StringIO(), err=io.StringIO())
    shutil.rmtree(template / "examples", ignore_errors=True)
    return template


def measure(name, path, kind, template=None):
    """One whole check of ``path``: ``{file, kind, wall, cpu, exit, parts: {part: {...}}}``;
    its storage a copy of ``template`` (``warm``), else empty."""
    cpu = {}

    def recording(part, outcome):
        cpu[part] = outcome.cpu

    with tempfile.TemporaryDirectory(prefix="resume-check-bench-") as storage:
        for cache in CACHES if template else ():
            if (template / cache).is_dir():
                shutil.copytree(template / cache, pathlib.Path(storage) / cache)
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        out = io.StringIO()
        code = check.check(path, seed=0, storage=pathlib.Path(storage), out=out, err=io.StringIO(),
                           seen=recording, as_json=True)
        wall, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    entry = json.loads(out.getvalue())["files"][0]
    parts = {step["step"]: {"status": step["status"], "seconds": step["seconds"], "cpu": cpu.get(step["step"]),
                            # what a part that could not run saw (a lane that ended, say), to look into
                            **({"got": step.get("got"), "detail": step.get("detail")} if step["status"] == "broken" else {})}
             for step in entry["steps"] + ([entry["beyond_the_lab"]] if entry["beyond_the_lab"] else [])}
    spent = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"file": name, "kind": kind, "wall": round(wall, 2), "cpu": round(spent, 2), "exit": code,
            "parts": parts}


def percentile(values, p):
    """Nearest rank: a measured value, never interpolated."""
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def _figures(pairs):
    """``median, p90, worst, the worst files`` of ``[(seconds, file)]``."""
    seconds = [s for s, _ in pairs]
    worst = ", ".join(f"{name} {s:.0f} s" for s, name in sorted(pairs, reverse=True)[:3])
    return (f"{statistics.median(seconds):.1f}", f"{percentile(seconds, 90):.1f}", f"{max(seconds):.1f}", worst)


def tables(records):
    """Markdown lines: per part and for the whole check, wall against CPU."""
    order = ["1", "2", "3", "4", "5", "6", "7", "protocol", "deeper", "power"]
    rows = []
    for part in order:
        pairs = [(r["parts"][part]["seconds"], r["file"]) for r in records if part in r["parts"]]
        cpus = [r["parts"][part]["cpu"] for r in records if r["parts"].get(part, {}).get("cpu") is not None]
        if pairs:
            rows.append((part, *_figures(pairs)[:3], f"{statistics.median(cpus):.1f}" if cpus else "-",
                         _figures(pairs)[3]))
    whole = [(r["wall"], r["file"]) for r in records]
    rows.append(("whole check", *_figures(whole)[:3], f"{statistics.median(r['cpu'] for r in records):.1f}",
                 _figures(whole)[3]))
    correct = [(r["wall"], r["file"]) for r in records if r["kind"] == "correct"]
    if correct:
        rows.append(("whole check, correct files", *_figures(correct)[:3],
                     f"{statistics.median(r['cpu'] for r in records if r['kind'] == 'correct'):.1f}",
                     _figures(correct)[3]))
    header = ["part", "median s", "p90 s", "worst s", "median CPU s", "worst files"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    over = sorted({r["file"] for r in records for part in r["parts"].values() if part["seconds"] > 15})
    lines += ["", f"{len(records)} files ({sum(r['kind'] != 'correct' for r in records)} known bugs, "
              f"{len(correct)} correct); a part over 15 s (the lab's limit per step): {', '.join(over) or 'none'}."]
    return lines


def run(path=None, size=SAMPLE, echo=True):
    """Check every file; the records (also written to ``path`` as they come, JSON lines)."""
    records = []
    with tempfile.TemporaryDirectory(prefix="resume-check-bench-files-") as folder, \
            (open(path, "w") if path else contextlib.nullcontext()) as saved:
        template = warm(pathlib.Path(folder) / "caches")
        for name, impl, kind in files(folder, size):
            records.append(measure(name, impl, kind, template))
            if saved:
                saved.write(json.dumps(records[-1]) + "\n")
                saved.flush()
            if echo:
                print(f"  {name}: {records[-1]['wall']:.1f} s, CPU {records[-1]['cpu']:.1f} s", file=sys.stderr,
                      flush=True)
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m jobs.check_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--json", metavar="FILE", help="write the records here (JSON lines)")
    parser.add_argument("--from", dest="source", metavar="FILE", help="read saved records instead of running")
    parser.add_argument("--sample", type=int, default=SAMPLE, help="how many known bugs (default %(default)s)")
    args = parser.parse_args(argv)
    if args.source:
        records = [json.loads(line) for line in open(args.source) if line.strip()]
    else:
        records = run(args.json, args.sample)
    print("\n".join(tables(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
