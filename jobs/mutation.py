"""Mutation score of the suite over resume/client.py, with cosmic-ray's mutants.

    python -m pip install -e ".[mutation]"
    python -m jobs.mutation run --budget 3600 --out mutation.jsonl
    python -m jobs.mutation score mutation.jsonl
    python -m jobs.mutation run --survivors-of mutation.jsonl --out rerun.jsonl

How it runs. cosmic-ray (``cosmic-ray init``) lists every mutant of
resume/client.py: one operator applied at one place. ``cosmic-ray
mutate-and-test`` writes one mutant into the file, runs a test command and
restores the file. That rewrites the file IN PLACE, so every worker gets a
copy of the checkout of its own (the shared work tree is never touched) and
the mutants are shared out between workers (two on this 2-core machine).

The test command is ``python -m jobs.mutation test --first-step N``: the
whole suite (properties/ + stateful/) with ``-x`` under the ``dev`` profile,
run by the project's one runner (``resume.testing.grading.runner``): a fresh example
database per mutant (no replay of what killed an earlier mutant), against
the copy's client.py named by ``--impl`` (the suite loads the implementation
by path, never by import). It prints the first failing test's node id from
the runner's structured results (``killed by ...``). The files of the
mutated function's step run first: only the order changes, a surviving
mutant still runs the whole suite.

A mutant whose suite runs past ``--timeout`` is ended and counted apart
("timeout"; cosmic-ray would count it killed). ``--budget`` bounds the whole
run: mutants not started by then are "not run", and the score covers the
mutants that ran (they run in a fixed shuffled order, so a cut-short run is a
fair sample of the file).

The plain sequential way, with cosmic-ray's own session and report, is
``jobs/cosmic-ray.toml`` (see docs/MUTATION.md); it takes hours here.
"""

import argparse
import ast
import collections
import concurrent.futures
import json
import random
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from resume.testing import suite
from resume.testing.grading import check, runner

TARGET = "resume/client.py"
_BOUND_VAR = "QUALITY_MUTANT_SECONDS"  # the test command's own time bound
_TIMED_OUT = "jobs.mutation: the suite ran past its time bound"
_KILLED_BY = "jobs.mutation: killed by"  # + the first failing test's node id
_STEP_MARK = re.compile(r"^# -+ step (\d)\s*$")


def step_of_line(source, line):
    """The step whose section of client.py holds ``line`` (1-based), or None above step 1."""
    step = None
    for number, text in enumerate(source.splitlines(), 1):
        if number > line:
            break
        found = _STEP_MARK.match(text)
        if found:
            step = int(found[1])
    return step


def copy_checkout(root, destination):
    """Copy the checkout's tracked and untracked-but-not-ignored files (no .git, no caches)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = root / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def list_mutants(workdir):
    """Every mutant cosmic-ray makes of TARGET in ``workdir``, as dicts."""
    config = workdir / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{TARGET}"\n'
        "timeout = 600.0\n"
        "excluded-modules = []\n"
        'test-command = "false"\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )
    session = workdir / "session.sqlite"
    cosmic = [sys.executable, "-m", "cosmic_ray.cli"]
    subprocess.run([*cosmic, "init", str(config), str(session)], cwd=workdir, check=True)
    dump = subprocess.run([*cosmic, "dump", str(session)], cwd=workdir, check=True,
                          capture_output=True, text=True).stdout
    mutants = []
    for line in dump.splitlines():
        item, _ = json.loads(line)
        (mutation,) = item["mutations"]
        mutants.append(mutation)
    mutants.sort(key=lambda m: (m["start_pos"][0], m["operator_name"], m["occurrence"]))
    return mutants


def fstring_spans(source):
    """The (start, end) positions, as (line, col), of every f-string in ``source``."""
    return [((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset))
            for node in ast.walk(ast.parse(source)) if isinstance(node, ast.JoinedStr)]


def in_fstring(mutant, spans):
    """True if the mutant's place lies inside an f-string: client.py's error messages."""
    where = tuple(mutant["start_pos"])
    return any(start <= where < end for start, end in spans)


def _run_mutant(copy, mutant, step, timeout):
    test_command = f"{sys.executable} -m jobs.mutation test"
    if step is not None:
        test_command += f" --first-step {step}"
    command = [sys.executable, "-m", "cosmic_ray.cli", "mutate-and-test", TARGET,
               mutant["operator_name"], str(mutant["occurrence"]), test_command]
    started = time.monotonic()
    env = dict(os.environ)
    env[_BOUND_VAR] = str(timeout)
    process = subprocess.Popen(command, cwd=copy, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, env=env)
    try:
        # A backstop: the test command ends itself after `timeout` seconds.
        out, err = process.communicate(timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"outcome": "timeout", "seconds": round(time.monotonic() - started, 1)}
    finally:
        # mutate-and-test restores the file itself, except when it is killed.
        shutil.copy2(copy / ".original-client.py", copy / TARGET)
    seconds = round(time.monotonic() - started, 1)
    try:
        result = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"outcome": "error", "seconds": seconds, "output": (out + err)[-2000:]}
    outcome = result.get("test_outcome") or result.get("worker_outcome")
    if _TIMED_OUT in (result.get("output") or ""):
        outcome = "timeout"
    record = {"outcome": outcome, "seconds": seconds, "diff": result.get("diff", "")}
    if outcome != "killed":
        record["output"] = (result.get("output") or "")[-2000:]
    else:  # the first failing test is enough to say what killed it
        found = re.search(rf"^{re.escape(_KILLED_BY)} (\S+)", result.get("output") or "", re.M)
        record["killed_by"] = found[1] if found else None
    return record


def run(args):
    root = check.ROOT
    source = (root / TARGET).read_text()
    base = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="resume-mutation-"))
    copies = []
    for index in range(args.jobs):
        copy = base / f"copy{index}"
        if copy.exists():
            shutil.rmtree(copy)
        copy.mkdir(parents=True)
        copy_checkout(root, copy)
        shutil.copy2(copy / TARGET, copy / ".original-client.py")
        copies.append(copy)
    mutants = list_mutants(copies[0])
    # A fixed shuffle: a run cut short by --budget is then a fair sample of
    # the whole file, not its first steps only.
    random.Random(args.seed).shuffle(mutants)
    if args.survivors_of:
        # Re-test the survivors of an earlier run against the suite as it is now.
        with open(args.survivors_of) as file:
            earlier = [json.loads(line) for line in file if line.strip()]
        keys = {(r["operator"], r["occurrence"], r["line"]) for r in earlier
                if r["outcome"] in args.outcomes.split(",")}
        mutants = [m for m in mutants
                   if (m["operator_name"], m["occurrence"], m["start_pos"][0]) in keys]
        if len(mutants) != len(keys):
            print(f"warning: {len(keys) - len(mutants)} mutants no longer match client.py",
                  file=sys.stderr)
    if args.limit:
        mutants = mutants[:args.limit]
    print(f"{len(mutants)} mutants of {TARGET}; {args.jobs} workers in {base}; "
          f"budget {args.budget:.0f} s", file=sys.stderr, flush=True)
    deadline = time.monotonic() + args.budget
    messages = fstring_spans(source)
    free = collections.deque(copies)
    lock = threading.Lock()
    out = open(args.out, "w")

    def work(mutant):
        with lock:
            copy = free.popleft()
        try:
            step = step_of_line(source, mutant["start_pos"][0])
            if in_fstring(mutant, messages):
                # Every f-string of client.py is an error message, and SPEC.md
                # fixes none: such a mutant is equivalent, and not worth a suite run.
                record = {"outcome": "message only"}
            elif time.monotonic() > deadline:
                record = {"outcome": "not run"}
            else:
                record = _run_mutant(copy, mutant, step, args.timeout)
        finally:
            with lock:
                free.append(copy)
        record.update(line=mutant["start_pos"][0], operator=mutant["operator_name"],
                      occurrence=mutant["occurrence"], function=mutant.get("definition_name"),
                      step=step)
        with lock:
            out.write(json.dumps(record) + "\n")
            out.flush()
            if "seconds" in record:
                print(f"  line {record['line']:>3} {record['operator']:<48} {record['outcome']:<9}"
                      f" {record['seconds']:6.1f} s", file=sys.stderr, flush=True)
        return record

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        records = list(pool.map(work, mutants))
    out.close()
    print(score(records))
    return 0


_FSTRING = re.compile(r"""f"[^"]*"|f'[^']*'""")


def message_only(record):
    """True if the mutant changed nothing but the text of an f-string (an error message).

    SPEC.md fixes no message, and the suite must not assert on one: such a
    mutant is equivalent as far as the contract goes.
    """
    removed = [l[1:] for l in record.get("diff", "").splitlines()
               if l.startswith("-") and not l.startswith("---")]
    added = [l[1:] for l in record.get("diff", "").splitlines()
             if l.startswith("+") and not l.startswith("+++")]
    return (len(removed) == len(added) == 1 and removed != added
            and _FSTRING.sub("", removed[0]) == _FSTRING.sub("", added[0]))


def score(records):
    """The mutation score over the mutants that ran, and the counts."""
    counts = collections.Counter(r["outcome"] for r in records)
    survivors = [r for r in records if r["outcome"] == "survived"]
    messages = [r for r in survivors if message_only(r)]
    messages += [r for r in records if r["outcome"] == "message only"]
    ran = counts["killed"] + counts["survived"] + counts["message only"]
    lines = [", ".join(f"{n} {k}" for k, n in counts.most_common())]
    if ran:
        lines.append(f"mutation score: {counts['killed']}/{ran} = {counts['killed'] / ran:.1%} "
                     "(killed / (killed + survived + message only); timeouts, errors, not run apart)")
        real = ran - len(messages)
        lines.append(f"without the {len(messages)} that change only an error message's text: "
                     f"{counts['killed']}/{real} = {counts['killed'] / max(real, 1):.1%}")
    for r in survivors:
        kind = "message only" if message_only(r) else "SURVIVED"
        changed = [l for l in r.get("diff", "").splitlines() if l.startswith("+") and not l.startswith("+++")]
        lines.append(f"{kind}: line {r['line']} in {r['function']}: {r['operator']}: "
                     f"{changed[0][1:].strip() if changed else ''}")
    return "\n".join(lines)


def test(args):
    """The test command of one mutant: the suite against ./resume/client.py."""
    root = pathlib.Path.cwd()
    paths = suite.suite_paths(root, first_step=args.first_step)
    # cosmic-ray starts this command in a session of its own, out of reach
    # of the runner's timeout: the bound is kept here, for the whole group.
    bound = float(os.environ.get(_BOUND_VAR, 0)) or None
    result = runner.run([f"--impl={root / TARGET}", "-x", "-q", "-p", "no:cacheprovider",
                         *map(str, paths)], root=root, profile="dev", timeout=bound, echo=True)
    if result.timed_out:
        print(_TIMED_OUT, flush=True)
        return 124
    if result.failures:
        print(f"{_KILLED_BY} {result.failures[0].nodeid}", flush=True)
    return result.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m jobs.mutation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run", help="run every mutant, --jobs at a time")
    running.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    running.add_argument("--budget", type=float, default=4 * 3600, help="seconds for the whole run")
    running.add_argument("--timeout", type=float, default=300, help="seconds for one mutant")
    running.add_argument("--limit", type=int, help="only the first N mutants (a trial)")
    running.add_argument("--seed", type=int, default=0, help="of the order the mutants run in")
    running.add_argument("--survivors-of", metavar="RESULTS",
                         help="run only the mutants that survived in an earlier run's results")
    running.add_argument("--outcomes", default="survived", metavar="LIST",
                         help="with --survivors-of: the earlier outcomes to run again, comma-"
                              "separated (e.g. 'not run' to finish a run cut short)")
    running.add_argument("--workdir", help="where the copies go (default: a new temp folder)")
    running.add_argument("--out", default="mutation.jsonl", help="one JSON line per mutant")
    testing = commands.add_parser("test", help="(the test command cosmic-ray runs per mutant)")
    testing.add_argument("--first-step", type=int)
    scoring = commands.add_parser("score", help="print the score of a finished or partial run")
    scoring.add_argument("results")
    args = parser.parse_args(argv)
    if args.command == "score":
        with open(args.results) as file:
            print(score([json.loads(line) for line in file if line.strip()]))
        return 0
    return {"run": run, "test": test}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
