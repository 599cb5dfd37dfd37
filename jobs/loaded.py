"""A command run on a busy machine: N processes that only burn CPU run beside it, as a
learner's laptop often has (a build, a browser), and the command's exit status and time are
printed for each run. A timing verdict must hold there too: a wait the call did not have
is voided and drawn again, never a FAIL (issue 55).

    python -m jobs.loaded --burners 2 --runs 3 -- python -m pytest -m quality quality/test_correct_variants.py

Exit status 1 if any run failed.
"""

import argparse
import multiprocessing
import subprocess
import sys
import time


def _burn():
    while True:
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m jobs.loaded", description=__doc__.split("\n\n")[0])
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside the command (2)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    failed = 0
    for run in range(1, args.runs + 1):
        burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(args.burners)]
        for burner in burners:
            burner.start()
        began = time.monotonic()
        try:
            code = subprocess.run(command).returncode
        finally:
            for burner in burners:
                burner.kill()
                burner.join()
        failed += code != 0
        print(f"jobs.loaded: run {run} of {args.runs} with {args.burners} burners: exit {code} "
              f"in {time.monotonic() - began:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
