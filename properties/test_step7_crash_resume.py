"""Step 7, the lab's final check, in real processes.

A receiver process is killed with SIGKILL between commit 1 and ACK 1; a new
process resumes from the same store file. The publisher must see
``RESUME -1`` then ``RESUME 1``, and the resent event 1 must not be applied
twice.
"""

import pathlib

import pytest

from resume.publisher import Publisher
from resume.testing import model
from resume.testing.drivers import receiver, store_files
from resume.testing.drivers.hygiene import each_example_clean

LOG = [(0, 5), (1, 7), (2, -3), (3, 10)]
TIMEOUT = 5.0  # the receiver's (``receiver.command``)


class Killed(BaseException):
    """The model's stand-in for the SIGKILL in before_ack: the run ends there, nothing after it runs."""


def killed_at(seq):
    def before_ack(at):
        if at == seq:
            raise Killed
    return before_ack


@pytest.mark.asyncio
@each_example_clean("run_client")
async def test_a_receiver_killed_between_commit_and_ack_resumes_without_applying_twice(impl, tmp_path):
    db = tmp_path / "store.db"
    impl_path = pathlib.Path(impl.__file__)
    expected = model.Store()
    first = await expected.run_client(TIMEOUT, [model.frame(*e) for e in LOG], before_ack=killed_at(1))
    after_the_kill = expected.copy()
    # The publisher resends from its last ACK on: event 1, committed but never ACKed, is a real duplicate.
    second = await expected.run_client(TIMEOUT, [model.frame(*e) for e in LOG[len(first.acks):]])
    async with Publisher(LOG) as publisher:
        code, _, err = await receiver.run(impl_path, publisher.port, db, crash_before_ack=1)
        if code != receiver.KILLED:
            model.differs("run_client(host, port, path, timeout, before_ack) in a process whose before_ack(1) "
                          "kills it (SIGKILL)", "killed in before_ack(1), after event 1 is committed",
                          f"it ended with exit code {code}" + (f": {err.strip().splitlines()[-1]}" if err.strip() else
                                                               " (before_ack(1) was never called)"),
                          model.OBSERVED["killed in before_ack"])
        await publisher.idle()
        store_files.expect(db, after_the_kill, "the store after the receiver was killed in before_ack(1)")
        code, out, err = await receiver.run(impl_path, publisher.port, db)
        await publisher.idle()

    what = ("the lab's final check: run_client in a process killed after committing event 1, before its "
            "ACK, then run_client in a new process on the same store; the server sends "
            + ", ".join(f"EVENT {seq} {delta}" for seq, delta in LOG))
    if [model.resume_line(last) for last in publisher.resumes] != [first.resume, second.resume]:
        model.differs(what, f"{first.resume.decode().strip()}, then {second.resume.decode().strip()} (the stored cursor)",
                      ", ".join(f"RESUME {last}" for last in publisher.resumes), model.OBSERVED["resume line"])
    acks = first.acks + second.acks
    if [model.ack(seq) for seq in publisher.acks] != acks:
        model.differs(what, b"".join(acks).decode().strip().replace("\n", ", "),
                      ", ".join(f"ACK {seq}" for seq in publisher.acks) or "no ACK", model.OBSERVED["applied once"])
    if code != 0 or out.strip() != "last={} total={}".format(*second.outcome.value):
        model.differs(f"{what}: the new process", "it prints last={} total={}".format(*second.outcome.value),
                      f"exit code {code}: {(out.strip() or err.strip()).splitlines()[-1:]}",
                      model.OBSERVED["applied once"])
    expected.because = "S7.no-double-apply"  # the lab's own check: event 1 once
    store_files.expect(db, expected, f"{what}: each event applied once")
