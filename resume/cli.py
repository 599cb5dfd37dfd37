"""The command line: ``python -m resume {serve,consume,demo,check}``."""

import argparse
import asyncio
import os
import random
import signal
import sqlite3
import sys
import tempfile

from resume.testing import check, loader, receiver
from resume.publisher import Publisher


def _log_from_args(args):
    if args.log:
        events = []
        with open(args.log, encoding="ascii") as lines:
            for line in lines:
                if line.strip():
                    seq, delta = line.split()
                    events.append((int(seq), int(delta)))
        return events
    rng = random.Random(args.seed)
    return [(args.start + i, rng.randint(-1000, 1000)) for i in range(args.events)]


# ------------------------------------------------------------------ serve


async def _serve(args):
    log = _log_from_args(args)
    async with Publisher(log) as publisher:
        print(f"publisher on 127.0.0.1:{publisher.port} with {len(log)} events", flush=True)
        reported = 0
        while args.sessions is None or reported < args.sessions:
            await asyncio.sleep(0.05)
            while reported < len(publisher.sessions) and publisher.sessions[reported].end:
                session = publisher.sessions[reported]
                reported += 1
                print(f"session {reported}: RESUME {session.cursor}, sent {len(session.sent)}, "
                      f"ACKs {session.acks}, end: {session.end}", flush=True)


# ---------------------------------------------------------------- consume


async def _consume(args):
    impl = loader.load(loader.resolve(args.impl))
    crash_at = args.crash_before_ack

    def before_ack(seq):
        if seq == crash_at:
            # Committed, not yet ACKed: die here, with no cleanup at all.
            os.kill(os.getpid(), signal.SIGKILL)

    last, total = await impl.run_client(args.host, args.port, args.db, args.timeout,
                                        before_ack if crash_at is not None else None)
    print(f"last={last} total={total}", flush=True)


# ------------------------------------------------------------------- demo

DEMO_LOG = [(0, 5), (1, 7), (2, -3), (3, 10)]
DEMO_CRASH_AT = 1


def _ledger(db_path):
    with sqlite3.connect(db_path) as con:
        rows = con.execute("SELECT seq, delta FROM ledger ORDER BY seq").fetchall()
        last, total = con.execute("SELECT last, total FROM checkpoint").fetchone()
    con.close()
    return rows, last, total


def _show_session(session):
    print(f"  receiver -> RESUME {session.cursor}")
    for index, line in enumerate(session.sent):
        seq = int(line.split()[1])
        acked = f"ACK {seq}" if seq in session.acks[index:index + 1] else "no ACK"
        print(f"  publisher -> {line.decode().strip():<14} receiver -> {acked}")
    print(f"  publisher ends the session: {session.end}")


async def _demo(args):
    impl_path = loader.resolve(args.impl)
    loader.load(impl_path)  # fail early, clearly, on a broken file
    with tempfile.TemporaryDirectory(prefix="resume-demo-") as tmp:
        db = os.path.join(tmp, "store.db")
        async with Publisher(DEMO_LOG) as publisher:
            print(f"publisher on 127.0.0.1:{publisher.port}, log {DEMO_LOG}")
            print(f"store {db}, implementation {impl_path}\n")

            print(f"receiver 1: killed with SIGKILL after committing event {DEMO_CRASH_AT}, "
                  f"before its ACK")
            code, out, err = await receiver.run(impl_path, publisher.port, db,
                                                crash_before_ack=DEMO_CRASH_AT)
            await publisher.idle()
            _show_session(publisher.sessions[-1])
            rows, last, total = _ledger(db)
            how = "killed by SIGKILL" if code == receiver.KILLED else f"exit {code} {err.strip()}"
            print(f"  receiver 1: {how}; store (last, total) = ({last}, {total}), ledger {rows}\n")

            print("receiver 2: a new process on the same store")
            code, out, err = await receiver.run(impl_path, publisher.port, db)
            await publisher.idle()
            _show_session(publisher.sessions[-1])
            print(f"  receiver 2: exit {code}; {out.strip() or err.strip()}\n")

        rows, last, total = _ledger(db)
        seqs = [seq for seq, _ in rows]
        expected_total = sum(delta for _, delta in DEMO_LOG)
        checks = [
            (f"RESUME lines seen {publisher.resumes} == [-1, {DEMO_CRASH_AT}]",
             publisher.resumes == [-1, DEMO_CRASH_AT]),
            (f"event {DEMO_CRASH_AT} was sent twice (at least once delivery)",
             sum(line.startswith(b"EVENT %d " % DEMO_CRASH_AT)
                 for s in publisher.sessions for line in s.sent) == 2),
            (f"ledger seqs {seqs} hold each event exactly once",
             rows == DEMO_LOG),
            (f"total {total} == sum of the deltas {expected_total}", total == expected_total),
            (f"cursor {last} == final seq {DEMO_LOG[-1][0]}", last == DEMO_LOG[-1][0]),
        ]
    for text, ok in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {text}")
    held = all(ok for _, ok in checks)
    print("\nrecovery held: nothing was applied twice." if held else "\nrecovery did NOT hold.")
    return 0 if held else 1


# ------------------------------------------------------------------- main


def _parser():
    parser = argparse.ArgumentParser(prog="python -m resume", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run a publisher on loopback")
    serve.add_argument("--log", help="a file of 'seq delta' lines (default: generated)")
    serve.add_argument("--events", type=int, default=10, help="generated log size")
    serve.add_argument("--start", type=int, default=0, help="first seq of a generated log")
    serve.add_argument("--seed", type=int, default=0, help="seed of a generated log")
    serve.add_argument("--sessions", type=int, help="stop after this many sessions")

    consume = commands.add_parser("consume", help="run_client against HOST PORT with store DB")
    consume.add_argument("host")
    consume.add_argument("port", type=int)
    consume.add_argument("db")
    consume.add_argument("--timeout", type=float, default=5.0)
    consume.add_argument("--impl", help="implementation file (default: resume/client.py)")
    consume.add_argument("--crash-before-ack", type=int, metavar="SEQ",
                         help="SIGKILL this process once SEQ is committed, before its ACK")

    demo = commands.add_parser("demo", help="the lab's crash between commit and ACK, for real")
    demo.add_argument("--impl", help="implementation file (default: resume/client.py)")

    checking = commands.add_parser(
        "check", help="run the verification suite against PATH, step by step")
    checking.add_argument("path", help="your implementation file (a client.py)")
    checking.add_argument("--profile", choices=["dev", "ci", "fuzz"],
                          help="Hypothesis profile (default: $HYPOTHESIS_PROFILE, else dev)")
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.command == "check":  # runs pytest processes: nothing asynchronous here
        return check.check(args.path, profile=args.profile)
    run = {"serve": _serve, "consume": _consume, "demo": _demo}[args.command]
    try:
        return asyncio.run(run(args)) or 0
    except loader.ImplError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
