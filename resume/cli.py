"""The command line: ``resume serve | consume | demo | check`` (also ``python -m resume``).

Exit codes, the same for every subcommand (``EXIT_CODES``, shown by --help):
0 success; 1 the implementation has a bug (``check``) or the recovery failed
(``demo``); 2 the command could not be carried out (usage, a file that cannot
be loaded, a store that cannot be opened, a peer that cannot be reached);
130 interrupted (Ctrl-C; SIGTERM too for check): one line says so, and no child is left running.

Every error is ONE line on stderr that names the input and says what to do,
never a traceback. For ``check`` that covers every file that cannot be
used (``resume.testing.drivers.loader``): missing, a folder, a syntax error, a public
name missing, an error, ``sys.exit()``, ``os._exit()``, a hang (10 s) or a slow
import (3 s); and a ``HYPOTHESIS_PROFILE`` that is not dev, ci or fuzz. ``check``
never imports the file itself: only its child processes do, in folders of their
own (``resume.testing.grading.probe``, ``room``), and what they print is kept out
of the report. The user's input is checked before anything acts on it
(``resume.inputs``), and nothing the user gave is changed by a command that
fails: a store ``consume`` created is removed again if nothing was applied
to it. ``resume/client.py`` is not changed for any of this: it is the
reference implementation of SPEC.md, and the checks sit around it.
"""

import argparse
import asyncio
import contextlib
import errno
import os
import random
import signal
import sqlite3
import sys

from resume import inputs
from resume.testing.drivers import loader
from resume.testing.suite import PROFILES

EXIT_CODES = """exit codes:
  0    success
  1    the implementation has a bug (check), or the recovery failed (demo)
  2    the command could not be carried out: usage, a file that cannot be
       loaded, a store that cannot be opened, a peer that cannot be reached
  130  interrupted (Ctrl-C; check: SIGTERM too)"""

DESCRIPTION = """An exactly-once-effect TCP event consumer (resume/client.py, the seven
steps of SPEC.md), and the suite that checks any implementation of it."""


class CommandError(Exception):
    """The command cannot be carried out: exit 2 with this one line."""


class BugFound(Exception):
    """The implementation failed in a way the contract does not allow: exit 1 with this line."""


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error on ONE line (argparse prints the usage first)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


# ------------------------------------------------------------------ serve


def _log_from_args(args):
    if args.log:
        return inputs.read_log(args.log)
    if args.events and args.start + args.events - 1 > inputs.SEQ_MAX:
        raise CommandError(f"--start {args.start} with --events {args.events} goes past seq "
                           f"{inputs.SEQ_MAX}: give fewer events or a lower --start")
    rng = random.Random(args.seed)
    return [(args.start + i, rng.randint(inputs.DELTA_MIN, inputs.DELTA_MAX))
            for i in range(args.events)]


async def _serve(args, log):
    from resume.publisher import Publisher

    failures = []
    # A publisher error inside a session would otherwise be logged by asyncio
    # and leave `serve --sessions N` waiting forever: record it and stop.
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: failures.append(context))
    publisher = Publisher(log, start=args.start)
    try:
        await publisher.start(args.port)
    except OSError as error:
        raise CommandError(_listen_error(args.port, error)) from None
    try:
        seqs = f"seqs {log[0][0]}..{log[-1][0]}" if log else "no events"
        print(f"publisher on 127.0.0.1:{publisher.port} with {len(log)} events ({seqs})", flush=True)
        print("it sends from its OWN ACK cursor: an event ACKed once is not sent again, so a "
              "second consume with a fresh store gets nothing; restart serve to start over",
              flush=True)
        reported = 0
        while args.sessions is None or reported < args.sessions:
            await asyncio.sleep(0.05)
            if failures:
                context = failures[0]
                error = context.get("exception")
                what = f"{type(error).__name__}: {error}" if error else context.get("message", "?")
                raise CommandError(f"the publisher failed in a session ({what}); "
                                   "please report this bug of resume's publisher")
            while reported < len(publisher.sessions) and publisher.sessions[reported].end:
                session = publisher.sessions[reported]
                reported += 1
                print(f"session {reported}: RESUME {session.cursor}, sent {len(session.sent)}, "
                      f"ACKs {session.acks}, end: {session.end}", flush=True)
    finally:
        await publisher.close()


def _listen_error(port, error):
    if error.errno == errno.EADDRINUSE:
        return f"port {port} is already in use: choose another (--port 0 picks a free one)"
    if error.errno == errno.EACCES:
        return f"port {port} needs privileges to listen on: choose one above 1023 (or --port 0)"
    return f"cannot listen on 127.0.0.1:{port}: {error.strerror or error}"


# ---------------------------------------------------------------- consume


def _consume(args):
    from resume.testing.drivers import store_files

    impl_path = loader.resolve(args.impl)
    impl = loader.load(impl_path)
    db = inputs.check_store(args.db)
    created = not db.exists()
    peer = f"{args.host}:{args.port}"
    crash_at = args.crash_before_ack

    def before_ack(seq):
        if seq == crash_at:
            # Committed, not yet ACKed: die here, with no cleanup at all.
            os.kill(os.getpid(), signal.SIGKILL)

    done = False
    try:
        try:
            last, total = asyncio.run(impl.run_client(args.host, args.port, str(db), args.timeout,
                                                      before_ack if crash_at is not None else None))
        except ConnectionRefusedError:
            raise CommandError(f"nothing listens on {peer}: start a publisher "
                               "(resume serve) and give the port it prints") from None
        except TimeoutError:
            raise CommandError(f"{peer} did not answer within {args.timeout:g} s (--timeout): "
                               "is it a resume publisher, and is it still serving?") from None
        except OSError as error:
            raise CommandError(f"cannot reach {peer}: {error.strerror or error}; "
                               "check the host and the port") from None
        except sqlite3.Error as error:
            raise CommandError(f"store {db}: {error}; give a new path or a store "
                               "from an earlier run") from None
        except impl.Gap as error:
            raise CommandError(f"the events {peer} sends do not follow on from the store {db} "
                               f"(Gap: {error}); a new store needs a log that starts at seq 0") from None
        except impl.Conflict as error:
            raise CommandError(f"store {db} was filled from another log (Conflict: {error}); "
                               "use a new store for this publisher") from None
        except ValueError as error:
            raise CommandError(f"{peer} sent something that is not an event frame ({error}); "
                               "is it a resume publisher?") from None
        except Exception as error:
            raise BugFound(f"{impl_path} raised {type(error).__name__}: {error}; "
                           f"run `resume check {impl_path}` to find out why") from None
        done = True
    finally:
        if created and not done and db.exists() and _unused(db, store_files):
            # A store this command created and did not use is not left behind.
            for suffix in ("", "-journal", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(f"{db}{suffix}")
    print(f"last={last} total={total}", flush=True)
    return 0


def _unused(db, store_files):
    """True if the store at ``db`` is empty or holds nothing applied (cursor -1, no ledger row)."""
    if db.stat().st_size == 0:
        return True
    try:
        found = store_files.read(str(db))
    except (sqlite3.Error, store_files.busy.LockLeft):
        return False
    return found.state is not None and found.last == -1 and not found.ledger


# ------------------------------------------------------------------- demo


def _demo(args):
    from resume import demo

    impl_path = loader.resolve(args.impl)
    loader.load(impl_path)  # fail early, in one line, on a file that cannot be used
    return asyncio.run(demo.run(impl_path, keep=args.keep))


# ------------------------------------------------------------------ check


def _check(args):
    from resume.testing.grading import check

    # SIGTERM (`timeout`, a CI runner) ends it as Ctrl-C does: every pytest process it started runs
    # in a session of its own, out of reach of a signal to this one, and is ended on the way out.
    signal.signal(signal.SIGTERM, signal.default_int_handler)

    return check.check(args.path, profile=args.profile, steps=args.step, seed=args.seed,
                       as_json=args.json)


# ------------------------------------------------------------------- main


def _parser():
    parser = _Parser(prog="resume", description=DESCRIPTION, epilog=EXIT_CODES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name, help, description):
        return commands.add_parser(name, help=help, description=description, epilog=EXIT_CODES,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)

    serve = command("serve", "run a publisher on loopback",
                    "Run a publisher on 127.0.0.1 that serves a log of events, one session per "
                    "connection.\nIt sends from its own ACK cursor: an event ACKed once is not "
                    "sent again, so a\nsecond consumer with a fresh store gets nothing; restart "
                    "serve to start over.\nThe log and the options are checked before it listens.")
    serve.add_argument("--log", metavar="FILE",
                       help="a file of 'SEQ DELTA' lines, seqs consecutive (default: generated)")
    serve.add_argument("--events", type=inputs.count, default=10, metavar="N",
                       help="size of a generated log (default: 10)")
    serve.add_argument("--start", type=inputs.seq, default=0, metavar="SEQ",
                       help="first seq of a generated log (default: 0)")
    serve.add_argument("--seed", type=inputs.integer, default=0,
                       help="random seed of a generated log's deltas (default: 0)")
    serve.add_argument("--port", type=inputs.listen_port, default=0,
                       help="port to listen on (default: 0, any free port; it is printed)")
    serve.add_argument("--sessions", type=inputs.positive, metavar="N",
                       help="stop after N sessions (default: serve until Ctrl-C)")

    consume = command("consume", "run an implementation's run_client against a publisher",
                      "Run run_client: connect to HOST PORT, resume from the store DB, apply "
                      "and ACK\nevery event until the publisher ends the session; print the "
                      "final last and total.")
    consume.add_argument("host", help="the publisher's host (127.0.0.1 for resume serve)")
    consume.add_argument("port", type=inputs.port, help="the publisher's port (resume serve prints it)")
    consume.add_argument("db", help="the store: an SQLite file, created if it does not exist "
                                    "(its folder must exist)")
    consume.add_argument("--timeout", type=inputs.seconds, default=5.0, metavar="SECONDS",
                         help="bound on every network wait (default: 5)")
    consume.add_argument("--impl", metavar="FILE",
                         help="implementation file (default: $RESUME_IMPL, else resume/client.py)")
    consume.add_argument("--crash-before-ack", type=inputs.seq, metavar="SEQ",
                         help="SIGKILL this process once SEQ is committed, before its ACK")

    demo = command("demo", "the lab's crash between commit and ACK, for real",
                   "A receiver process is killed between committing event 1 and ACKing it; a "
                   "new one\nresumes from the same store. Every claim printed is checked.")
    demo.add_argument("--impl", metavar="FILE",
                      help="implementation file (default: $RESUME_IMPL, else resume/client.py)")
    demo.add_argument("--keep", action="store_true",
                      help="keep the store file afterwards (its path is printed)")

    checking = command("check", "run the verification suite against FILE, step by step",
                       "Run the verification suite against your implementation, step by step.\n"
                       "Each passing step is one line; a failing step says which sentence of\n"
                       "SPEC.md it breaks, what the test did, what was expected and what your\n"
                       "file did, and the line that runs it again. Several files are checked\n"
                       "one after the other.")
    checking.add_argument("path", metavar="FILE", nargs="+",
                          help="your implementation file (a client.py); several may be given")
    checking.add_argument("--profile", choices=PROFILES,
                          help="Hypothesis profile (default: $HYPOTHESIS_PROFILE, else dev)")
    checking.add_argument("--step", action="append", metavar="STEP",
                          choices=[str(n) for n in range(1, 8)] + ["protocol", "deeper", "power"],
                          help="only this part: 1..7, protocol, deeper or power (repeatable; "
                               "default: all)")
    checking.add_argument("--seed", type=inputs.integer,
                          help="Hypothesis's random seed, to repeat a run (default: a new one, "
                               "printed)")
    checking.add_argument("--json", action="store_true",
                          help="print one JSON document instead of text (docs/CHECK_JSON.md)")
    return parser


def _one_line(error):
    return " ".join(str(error).split("\n"))


def main(argv=None):
    """Run one subcommand; return its exit code (see EXIT_CODES)."""
    parser = _parser()
    args = parser.parse_args(argv)
    prog = f"resume {args.command}"
    try:
        if args.command == "serve":
            log = _log_from_args(args)  # everything is checked before it listens
            return asyncio.run(_serve(args, log)) or 0
        return {"consume": _consume, "demo": _demo, "check": _check}[args.command](args)
    except KeyboardInterrupt:  # children ended and temporary files removed on the way out
        print(f"{prog}: interrupted" + (f" while checking {' '.join(args.path)}" if args.command == "check" else ""),
              file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (`resume demo | head`): stop quietly
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 2
    except BugFound as error:
        print(f"{prog}: {_one_line(error)}", file=sys.stderr)
        return 1
    except (CommandError, inputs.InputError, loader.ImplError) as error:
        print(f"{prog}: {_one_line(error)}", file=sys.stderr)
        return 2
