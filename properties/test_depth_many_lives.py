"""One process, many lives: several stores, sessions, publishers and reconnects in one example.

Every other example starts afresh: new paths, new lists, a new publisher. A
module that remembers something between calls (per path, per connection,
per list, per peer) then changes no outcome those examples look at. Here one
example lives several lives in turn, on two store paths:

* ``apply``: open the store, apply a run of new events (1-3 or 200-700), close;
* ``session``: publish new events, then a NEW publisher (a fresh port) that
  starts a few events behind the store's cursor serves the whole stream to
  ``run_client``, which must send the store's cursor of that moment, apply
  the new events once, take the resent ones as duplicates and return the
  model's state;
* ``delete``: the store the previous life used is deleted and re-created at
  once at the SAME path: cursor -1, total 0, nothing of the old one back;
* ``replay``: ONE list object is asked, grows (and is trimmed at the front
  past 128 items), and is asked again with the same cursor and limit; every
  answer is the one for the list as it is now.

At the end a fresh interpreter (a new process that loads the implementation
from its file) opens each store and must read the model's state, and so must
a connection of the test's own.
"""

import contextlib
import json
import os
import subprocess
import sys

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from resume.publisher import Publisher
from resume.testing import model, runs, store, tasks
from resume.testing import strategies as sts
from resume.testing.hygiene import each_example_clean

HOST = "127.0.0.1"
TIMEOUT = 5.0
PATHS = 2

_lives = st.one_of(
    st.tuples(st.just("apply"), st.integers(0, PATHS - 1), runs.run_lengths(), sts.deltas()),
    st.tuples(st.just("session"), st.integers(0, PATHS - 1), st.integers(0, 3) | runs.run_lengths(),
              st.integers(0, 3), sts.deltas()),
    st.tuples(st.just("delete")),  # the store the previous life used
    st.tuples(st.just("replay"), st.integers(1, 40), st.integers(0, 20), sts.limits()),
)

# The fresh interpreter: load the implementation from its file, read each store.
_FRESH_READER = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("resume_impl_fresh", sys.argv[1])
impl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(impl)
states = []
for path in sys.argv[2:]:
    con = impl.open_store(path)
    try:
        states.append(list(impl.state(con)))
    finally:
        con.close()
print(json.dumps(states))
"""


def _remove_store(path):
    for found in store.files(path):  # the store and whatever its journal mode keeps beside it
        with contextlib.suppress(FileNotFoundError):
            os.remove(found)


# Each example lives several lives and starts a process: a third of the profile's examples.
@pytest.mark.asyncio
@settings(max_examples=max(5, settings.default.max_examples // 3))
@given(lives=st.lists(_lives, min_size=2, max_size=8))
@each_example_clean
async def test_one_process_living_many_lives_keeps_every_outcome(impl, lives):
    with store.temp_store_path() as first:
        folder = os.path.dirname(first)
        paths = [os.path.join(folder, f"store{i}.db") for i in range(PATHS)]
        models = [model.Store() for _ in paths]
        streams = [[] for _ in paths]  # the published deltas of each store's stream, from seq 0
        growing = []  # ONE list object for replay, grown between calls
        created = set()
        current = 0  # the store path the previous life used
        for number, life in enumerate(lives):
            kind = life[0]
            if kind in ("apply", "session"):
                current = life[1]
            if kind == "apply":
                _, i, n, delta = life
                with store.opened(impl, paths[i]) as con:
                    for _ in range(n):
                        seq = models[i].last + 1
                        if seq == len(streams[i]):
                            streams[i].append(delta)
                        model.expect(model.outcome_of(impl, impl.apply_event, con, seq, streams[i][seq]),
                                     models[i].apply_event(seq, streams[i][seq]), f"life {number}: event {seq}")
                    assert impl.state(con) == models[i].state(), f"life {number}"
                created.add(i)
            elif kind == "session":
                _, i, n_new, behind, delta = life
                streams[i].extend([delta] * n_new)
                cursor_before = models[i].last
                acked = max(-1, cursor_before - behind)
                result, publisher = await _session(impl, paths[i], streams[i], acked)
                resent = [model.frame(seq, streams[i][seq]) for seq in range(acked + 1, len(streams[i]))]
                predicted = await models[i].run_client(TIMEOUT, resent)
                note(f"life {number}: session on store {i}: RESUME {publisher.resumes}, "
                     f"{len(publisher.acks)} ACKs, returned {result}")
                assert [model.resume_line(last) for last in publisher.resumes] == [predicted.resume], \
                    f"life {number}: RESUME is not the store's cursor"
                model.expect(result, predicted.outcome, f"life {number}: run_client")
                assert [model.ack(seq) for seq in publisher.acks] == predicted.acks, f"life {number}: ACKs"
                created.add(i)
            elif kind == "delete":
                i = current
                _remove_store(paths[i])
                models[i], streams[i] = model.Store(), []
                with store.opened(impl, paths[i]) as con:  # re-created at once, at the same path
                    assert impl.state(con) == model.INITIAL_STATE, f"life {number}: the re-created store {i} is not new"
                created.add(i)
            else:
                # The same question before and after the log grew: a new answer.
                _, grow, back, limit = life
                if not growing:
                    growing.append((0, -3))
                last = max(growing[0][0] - 1, growing[-1][0] - back)  # the same cursor both times
                for step in ("before", "after"):
                    if step == "after":
                        start = growing[-1][0] + 1
                        growing.extend((seq, seq % 7 - 3) for seq in range(start, start + grow))
                        del growing[:max(0, len(growing) - model.LOG_MAX)]
                    model.expect(model.outcome_of(impl, impl.replay, growing, last, limit),
                                 model.replay(growing, last, limit),
                                 f"life {number}: replay {step} the log grew by {grow}, cursor {last}, limit {limit}")
        runs.record_sizes(max(len(stream) for stream in streams))
        event(f"many lives: a store deleted and re-created: {any(l[0] == 'delete' for l in lives)}")
        existing = sorted(created)
        for i in existing:
            assert store.read(paths[i]) == models[i].snapshot(), f"store {i}"
        if existing:
            fresh = _read_in_a_fresh_interpreter(impl, [paths[i] for i in existing])
            assert fresh == [list(models[i].state()) for i in existing], \
                "a fresh interpreter reads another state"


async def _session(impl, path, stream, acked):
    async with Publisher(list(enumerate(stream)), acked=acked, timeout=TIMEOUT) as publisher:
        result = await tasks.model_outcome(impl, impl.run_client(HOST, publisher.port, path, TIMEOUT), 60)
        await publisher.idle()
    return result, publisher


def _read_in_a_fresh_interpreter(impl, paths):
    # -I -S: no site packages, no environment (a third faster to start); the
    # contract's implementation is one stdlib-only file. -B: no __pycache__
    # beside the learner's file (their folder is left as found).
    done = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", _FRESH_READER, impl.__file__, *paths],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"the fresh interpreter failed: {done.stderr[-2000:]}"
    return json.loads(done.stdout)
