"""Step 7, the lab's final check, in real processes.

A receiver process is killed with SIGKILL between commit 1 and ACK 1; a new
process resumes from the same store file. The publisher must see
``RESUME -1`` then ``RESUME 1``, and the resent event 1 must not be applied
twice.
"""

import pathlib

import pytest

from resume.publisher import Publisher
from resume.testing import model, receiver, store
from resume.testing.hygiene import each_example_clean

LOG = [(0, 5), (1, 7), (2, -3), (3, 10)]


@pytest.mark.asyncio
@each_example_clean
async def test_a_receiver_killed_between_commit_and_ack_resumes_without_applying_twice(impl, tmp_path):
    db = tmp_path / "store.db"
    impl_path = pathlib.Path(impl.__file__)
    async with Publisher(LOG) as publisher:
        code, _, err = await receiver.run(impl_path, publisher.port, db, crash_before_ack=1)
        if code != receiver.KILLED:
            model.differs("run_client(host, port, path, timeout, before_ack) in a process whose before_ack(1) "
                          "kills it (SIGKILL)", "killed in before_ack(1), after event 1 is committed",
                          f"it ended with exit code {code}" + (f": {err.strip().splitlines()[-1]}" if err.strip() else
                                                               " (before_ack(1) was never called)"))
        await publisher.idle()
        assert publisher.acks == [0]  # event 1 is committed but was never ACKed
        assert store.read(db) == ((1, 12), dict(LOG[:2]))

        code, out, err = await receiver.run(impl_path, publisher.port, db)
        assert code == 0, err
        await publisher.idle()

    what = ("the lab's final check: run_client in a process killed after committing event 1, before its "
            "ACK, then run_client in a new process on the same store; the server sends "
            + ", ".join(f"EVENT {seq} {delta}" for seq, delta in LOG))
    resumes = ", ".join(f"RESUME {last}" for last in publisher.resumes)
    if publisher.resumes != [-1, 1]:
        model.differs(what, "RESUME -1, then RESUME 1 (the stored cursor)", resumes)
    assert publisher.sessions[1].sent[0] == b"EVENT 1 7\n"  # the real duplicate
    if publisher.acks != [0, 1, 2, 3]:
        model.differs(what, "ACK 0, ACK 1, ACK 2, ACK 3", ", ".join(f"ACK {seq}" for seq in publisher.acks))
    # Every seq exactly once, and the total is their sum.
    (last, total), ledger = store.read(db)
    if ((last, total), ledger) != ((3, sum(delta for _, delta in LOG)), dict(LOG)):
        model.differs(what, f"last=3, total={sum(d for _, d in LOG)}, each event applied once",
                      f"last={last}, total={total}, ledger={ledger}")
