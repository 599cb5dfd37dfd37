"""Measure the crash-point sweep: points per session, points per second, wall time per profile.

    python -m jobs.crash_bench [--profiles dev ci] [--impl PATH]

For each profile, runs the crash tests (properties/test_crash_syscalls.py,
stateful/test_crash_points.py) in a
pytest process under that profile and prints what each explored (the lines
the tests print: ``crash points: explored N of M (...)``) with the wall time.
The figures go into docs/BENCHMARKS.md by hand; nothing here is a timed test.
"""

import argparse
import re
import sys

from resume.testing.grading import runner

FILES = ["properties/test_crash_syscalls.py", "stateful/test_crash_points.py"]
_FIGURE = re.compile(r"^(crash points: .*|EIO injected: .*|ENOSPC injected: .*)$", re.M)


def measure(profile, impl=None, files=FILES):
    """``(seconds, exit code, [figure lines], pytest's last line)`` of one run under ``profile``."""
    args = ["-q", "-s", "-p", "no:cacheprovider", "--durations=0", *files]
    if impl:
        args.insert(0, f"--impl={impl}")
    done = runner.run(args, profile=profile)
    lines = done.output.strip().splitlines()
    durations = [line for line in lines if re.match(r"^\d+\.\d+s call ", line)]
    return done.wall, done.returncode, _FIGURE.findall(done.output), durations, (lines or [""])[-1]


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
