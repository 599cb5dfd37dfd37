"""Measure the crash-point sweep: points per session, points per second, wall time per profile.

    python -m jobs.crash_bench [--profiles dev ci] [--impl PATH]

For each profile, runs the crash tests (properties/test_crash_syscalls.py,
properties/test_crash_statements.py, stateful/test_crash_points.py) in a
pytest process under that profile and prints what each explored (the lines
the tests print: ``crash points: explored N of M (...)``) with the wall time.
The figures go into docs/BENCHMARKS.md by hand; nothing here is a timed test.
"""

import argparse
import os
import re
import subprocess
import sys
import time

from resume.testing import check

FILES = ["properties/test_crash_syscalls.py", "properties/test_crash_statements.py",
         "stateful/test_crash_points.py"]
_FIGURE = re.compile(r"^(crash points: .*|EIO injected: .*|ENOSPC injected: .*|SQL statements: .*)$", re.M)


def measure(profile, impl=None, files=FILES):
    """``(seconds, exit code, [figure lines], pytest's last line)`` of one run under ``profile``."""
    env = dict(os.environ, HYPOTHESIS_PROFILE=profile)
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "--durations=0", *files]
    if impl:
        command.insert(3, f"--impl={impl}")
    started = time.monotonic()
    done = subprocess.run(command, cwd=check.ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    lines = done.stdout.strip().splitlines()
    durations = [line for line in lines if re.match(r"^\d+\.\d+s call ", line)]
    return seconds, done.returncode, _FIGURE.findall(done.stdout), durations, (lines or [""])[-1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=["dev", "ci"])
    parser.add_argument("--impl")
    args = parser.parse_args(argv)
    for profile in args.profiles:
        seconds, code, figures, durations, last = measure(profile, args.impl)
        print(f"== {profile}: {seconds:.1f} s wall, exit {code}: {last}")
        for line in figures + durations:
            print(f"   {line}")
        for line in figures:
            found = re.search(r"explored (\d+) of (\d+)", line)
            if found and line.startswith("crash points"):
                print(f"   {int(found[1]) / seconds:.2f} points a second over the whole run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
