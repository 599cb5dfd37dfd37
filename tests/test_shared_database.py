"""The shared example database: a failure found by one process replays first in another.

Claims, against a real Redis server (the one ``HYPOTHESIS_DATABASE`` names;
``.ci/run`` starts one on loopback):

* a counterexample that one pytest process finds is, in a fresh process with
  an EMPTY local database, the very first example tried - under ``ci`` too,
  whose own database is off (so CI workers share what fuzzers find);
* without ``HYPOTHESIS_DATABASE`` that fresh process starts elsewhere (so the
  replay came through Redis, not from anything local);
* with ``HYPOTHESIS_DATABASE_READONLY`` a developer's run replays what is in
  Redis but publishes nothing to it.

Each run is a real ``python -m pytest`` on a tiny deliberately failing test
written to a temporary folder, through the project's runner
(``resume.testing.grading.runner``), with the project's ``conftest.py`` loaded as a
plugin (so its profiles and database selection are the ones under test) and a
fresh ``HYPOTHESIS_STORAGE_DIRECTORY``. The tiny test appends every example it
is given to a file, so "the first example tried" is read, not guessed.

It uses database number 15 of that server and a test name that is new on each
run, and deletes the keys it created. Skipped (with the reason) when
``HYPOTHESIS_DATABASE`` is not set or the server cannot be reached.
"""

import os
import pathlib
import urllib.parse
import uuid

import pytest

from resume.testing.grading import runner

PROJECT_ROOT = pathlib.Path(__file__).resolve().parent.parent
TEST_DB_NUMBER = 15  # apart from the database the suite itself may share
KEY_PATTERN = "hypothesis-example:*"  # RedisExampleDatabase's default key prefix
FIRST_FAILURE = 1000  # the tiny test fails from here; Hypothesis shrinks to it

TINY_TEST = '''\
"""Deliberately failing: every n >= {first} fails. Records each example it is given."""
import os

from hypothesis import given, strategies as st


@given(st.integers(min_value=0, max_value=10**6))
def test_{name}(n):
    with open(os.environ["SEEN_FILE"], "a") as seen:
        seen.write(f"{{n}}\\n")
    assert n < {first}
'''


@pytest.fixture
def redis_url():
    """The URL of database 15 on the server HYPOTHESIS_DATABASE names; skips if none."""
    url = os.environ.get("HYPOTHESIS_DATABASE")
    if not url:
        pytest.skip("HYPOTHESIS_DATABASE is not set: no shared example database to test")
    redis = pytest.importorskip("redis", reason="the redis client is not installed (extra [redis])")
    url = urllib.parse.urlsplit(url)._replace(path=f"/{TEST_DB_NUMBER}").geturl()
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        try:
            client.ping()
        except redis.RedisError as error:
            pytest.skip(f"no Redis server reachable at {url}: {error}")
        before = set(client.keys(KEY_PATTERN))
        yield url
        # Only what this test added: the server may hold other people's examples.
        created = set(client.keys(KEY_PATTERN)) - before
        if created:
            client.delete(*created)
    finally:
        client.close()


class TinyProject:
    """A folder with one deliberately failing test, and a way to run it afresh."""

    def __init__(self, folder):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.name = f"fails_from_{FIRST_FAILURE}_{uuid.uuid4().hex[:12]}"  # a new database key
        self.test_file = folder / "test_tiny.py"
        self.test_file.write_text(TINY_TEST.format(name=self.name, first=FIRST_FAILURE))
        self.runs = 0

    def run(self, profile, database_url=None, readonly=False):
        """One fresh pytest process with an empty local database; the examples it tried."""
        self.runs += 1
        run_dir = self.folder / f"run{self.runs}"
        storage = run_dir / "hypothesis"  # a fresh, empty local example database
        seen_file = run_dir / "seen.txt"
        run_dir.mkdir()
        extra = {"SEEN_FILE": str(seen_file)}
        if database_url:  # the runner removes any shared database the caller's environment names
            extra["HYPOTHESIS_DATABASE"] = database_url
        if readonly:
            extra["HYPOTHESIS_DATABASE_READONLY"] = "1"
        # `-p conftest` loads the project's conftest.py (on PYTHONPATH) as a plugin:
        # its profiles and database selection, not a copy of them.
        result = runner.run(["-p", "conftest", "-p", "no:cacheprovider", "-q", self.test_file],
                            root=PROJECT_ROOT, cwd=self.folder, profile=profile, storage=storage,
                            extra_env=extra, timeout=120)
        output = result.output
        assert result.returncode == 1, f"the tiny test should fail:\n{output}"
        (failure,) = result.failures
        notes = "\n".join(note for entry in failure.failures for note in entry["notes"])
        assert f"n={FIRST_FAILURE}" in notes, f"not shrunk to n={FIRST_FAILURE}:\n{output}"
        seen = [int(line) for line in seen_file.read_text().split()]
        return seen, storage


def saved_locally(storage):
    """How many example files a local directory database holds."""
    return sum(1 for path in storage.rglob("*") if path.is_file()) if storage.exists() else 0


def test_a_failure_found_by_one_process_replays_first_in_a_fresh_ci_process(redis_url, tmp_path):
    tiny = TinyProject(tmp_path)

    finder, _ = tiny.run("dev", redis_url)
    assert finder[0] != FIRST_FAILURE  # found by searching, not replayed

    # A fresh CI worker: empty local database, the derandomized `ci` profile.
    replayed, _ = tiny.run("ci", redis_url)
    assert replayed[0] == FIRST_FAILURE

    # The same fresh worker without the shared database starts elsewhere:
    # the replay above came through Redis.
    alone, _ = tiny.run("ci")
    assert alone[0] != FIRST_FAILURE


def test_a_read_only_shared_database_replays_but_publishes_nothing(redis_url, tmp_path):
    redis = pytest.importorskip("redis")
    finder_project = TinyProject(tmp_path / "finder")
    developer_project = TinyProject(tmp_path / "developer")

    finder_project.run("dev", redis_url)
    replayed, _ = finder_project.run("dev", redis_url, readonly=True)
    assert replayed[0] == FIRST_FAILURE

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)
    try:
        before = set(client.keys(KEY_PATTERN))
        _, storage = developer_project.run("dev", redis_url, readonly=True)
        after = set(client.keys(KEY_PATTERN))
    finally:
        client.close()
    assert after == before  # the developer's new failure did not reach Redis
    assert saved_locally(storage) > 0  # but it was kept locally
