"""Which example database the environment picks (resume/testing/plugin/example_database.py), without the network.

One test per combination of the variables conftest.py reads: none, a Redis
URL, a Redis URL read-only, a GitHub artifact, both, and the malformed ones.
Nothing here reaches a server: the Redis URL points at loopback port 1
(nothing listens there, so a write that would go to Redis is refused at
once), and Hypothesis's ``GitHubArtifactDatabase`` only downloads on its
first read, which these tests never make. ``tests/test_shared_database.py``
checks the Redis side against a real server.
"""

import sys

import pytest
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    GitHubArtifactDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from resume.testing.plugin import example_database

UNREACHABLE = "redis://127.0.0.1:1/0"  # port 1: refused at once, never a real server


def _parts(db):
    # MultiplexedDatabase keeps what it wraps in `_wrapped` (Hypothesis has
    # no public accessor); ReadOnlyDatabase likewise. Read only to name them.
    return list(db._wrapped)


def _redis_database_class():
    """Hypothesis's RedisExampleDatabase; skips the test where the redis client is not installed."""
    pytest.importorskip("redis", reason="the redis client is not installed (extra [redis])")
    from hypothesis.extra.redis import RedisExampleDatabase

    return RedisExampleDatabase


def _inner(db):
    return db._wrapped if isinstance(db, ReadOnlyDatabase) else db


@pytest.fixture
def environ(tmp_path):
    return {"HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path)}


def test_nothing_set_keeps_each_profiles_own_database(environ):
    assert example_database.example_database(environ) is None
    assert example_database.example_database({}) is None


def test_a_redis_url_is_multiplexed_with_the_local_directory_both_read_and_written(environ, tmp_path):
    RedisExampleDatabase = _redis_database_class()
    environ["HYPOTHESIS_DATABASE"] = UNREACHABLE
    db = example_database.example_database(environ)
    assert isinstance(db, MultiplexedDatabase)
    local, shared = _parts(db)
    assert isinstance(local, DirectoryBasedExampleDatabase)
    assert local.path == tmp_path / "examples"
    assert isinstance(shared, RedisExampleDatabase)  # written to: not read-only
    # A write goes to Redis too: with nothing listening, it is refused.
    with pytest.raises(Exception, match="(?i)connect|refused"):
        db.save(b"key", b"value")


@pytest.mark.parametrize("flag", ["1", "yes", "true"])
def test_read_only_redis_is_read_but_never_written(environ, tmp_path, flag):
    RedisExampleDatabase = _redis_database_class()
    environ.update(HYPOTHESIS_DATABASE=UNREACHABLE, HYPOTHESIS_DATABASE_READONLY=flag)
    db = example_database.example_database(environ)
    local, shared = _parts(db)
    assert isinstance(shared, ReadOnlyDatabase) and isinstance(_inner(shared), RedisExampleDatabase)
    db.save(b"key", b"value")  # Redis is not written, so nothing reaches the dead port
    assert list(local.fetch(b"key")) == [b"value"]


@pytest.mark.parametrize("flag", ["0", ""])
def test_read_only_set_to_zero_or_empty_means_written(environ, flag):
    RedisExampleDatabase = _redis_database_class()
    environ.update(HYPOTHESIS_DATABASE=UNREACHABLE, HYPOTHESIS_DATABASE_READONLY=flag)
    _, shared = _parts(example_database.example_database(environ))
    assert isinstance(shared, RedisExampleDatabase)


def test_a_github_artifact_is_read_only_and_multiplexed_with_the_local_one(environ, tmp_path):
    environ["HYPOTHESIS_GITHUB_ARTIFACT"] = "someone/resume"
    db = example_database.example_database(environ)
    local, shared = _parts(db)
    assert local.path == tmp_path / "examples"
    assert isinstance(shared, ReadOnlyDatabase)
    artifact = _inner(shared)
    assert isinstance(artifact, GitHubArtifactDatabase)
    assert (artifact.owner, artifact.repo, artifact.artifact_name) == (
        "someone", "resume", example_database.DEFAULT_ARTIFACT)
    # What a run finds stays local; nothing is sent to GitHub (no token needed to write).
    db.save(b"key", b"value")
    assert list(local.fetch(b"key")) == [b"value"]


def test_the_artifact_name_can_be_chosen(environ):
    environ["HYPOTHESIS_GITHUB_ARTIFACT"] = "someone/resume:nightly-db"
    _, shared = _parts(example_database.example_database(environ))
    assert _inner(shared).artifact_name == "nightly-db"


def test_redis_and_the_artifact_together(environ):
    RedisExampleDatabase = _redis_database_class()
    environ.update(HYPOTHESIS_DATABASE=UNREACHABLE, HYPOTHESIS_DATABASE_READONLY="1",
                   HYPOTHESIS_GITHUB_ARTIFACT="someone/resume")
    local, redis_side, artifact_side = _parts(example_database.example_database(environ))
    assert isinstance(local, DirectoryBasedExampleDatabase)
    assert isinstance(_inner(redis_side), RedisExampleDatabase)
    assert isinstance(_inner(artifact_side), GitHubArtifactDatabase)
    assert isinstance(artifact_side, ReadOnlyDatabase)


@pytest.mark.parametrize("spec", ["resume", "someone/", "/resume", "a/b/c", ":name"])
def test_a_malformed_artifact_spec_is_refused_with_its_format(environ, spec):
    environ["HYPOTHESIS_GITHUB_ARTIFACT"] = spec
    with pytest.raises(example_database.DatabaseConfigError, match="OWNER/REPO"):
        example_database.example_database(environ)


def test_without_a_storage_directory_the_local_database_is_dot_hypothesis(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    local, _ = _parts(example_database.example_database({"HYPOTHESIS_GITHUB_ARTIFACT": "o/r"}))
    assert local.path == tmp_path / ".hypothesis" / "examples"


def test_a_redis_url_without_the_redis_client_says_what_to_install(environ, monkeypatch):
    # Hide the client, as on a machine without the [redis] extra.
    monkeypatch.setitem(sys.modules, "redis", None)
    environ["HYPOTHESIS_DATABASE"] = UNREACHABLE
    with pytest.raises(example_database.DatabaseConfigError, match=r"\[redis\]"):
        example_database.example_database(environ)
