"""Which Hypothesis example database the suite uses, chosen from the environment.

``example_database(environ)`` is a pure function of the environment mapping
(no network is touched to build it; Redis and GitHub are reached only when a
test reads or writes an example). conftest.py calls it with ``os.environ``;
tests/test_database_choice.py calls it with every combination.

* ``HYPOTHESIS_DATABASE=redis://HOST:PORT/N``: Hypothesis's own
  ``RedisExampleDatabase``, multiplexed with the local directory database, so
  a counterexample found by one CI or fuzz worker replays first everywhere
  else. With ``HYPOTHESIS_DATABASE_READONLY`` set (to anything but ``0``) the
  shared one is only read (a developer takes the counterexamples but does not
  publish their own).
* ``HYPOTHESIS_GITHUB_ARTIFACT=OWNER/REPO`` (optionally ``:ARTIFACT_NAME``,
  default ``hypothesis-example-db``): the example database that the nightly
  fuzz workflow (.github/workflows/fuzz.yml) publishes as an artifact, read
  through Hypothesis's ``GitHubArtifactDatabase``: ALWAYS read-only, and
  multiplexed with the local one, so a developer's run replays CI's failures
  first and keeps what it finds locally. It needs ``GITHUB_TOKEN`` (a token
  that may read the repository's Actions artifacts: a fine-grained token with
  "Actions: read", or a classic token with ``repo`` scope for a private
  repository); without one Hypothesis warns and the artifact side stays empty.
* Both may be set: the local database, the Redis one and the artifact, all
  multiplexed.
* Neither: None, and every profile keeps its own database setting.

The local directory database is ``.hypothesis/examples`` (or under
``$HYPOTHESIS_STORAGE_DIRECTORY``), where Hypothesis keeps it by default.
"""

import pathlib

DEFAULT_ARTIFACT = "hypothesis-example-db"


class DatabaseConfigError(RuntimeError):
    """The environment asks for a database that cannot be built."""


def _flag(environ, name):
    return environ.get(name, "0") not in ("", "0")


def _local(environ):
    from hypothesis.database import DirectoryBasedExampleDatabase

    home = pathlib.Path(environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or ".hypothesis").resolve()
    return DirectoryBasedExampleDatabase(home / "examples")


def _redis(url, environ):
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError as error:
        raise DatabaseConfigError(
            "HYPOTHESIS_DATABASE is set but the redis client is missing: pip install -e '.[redis]'"
        ) from error
    from hypothesis.database import ReadOnlyDatabase

    # Bounded, so that a Redis server that went away fails the run instead of hanging it.
    shared = RedisExampleDatabase(redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5))
    if _flag(environ, "HYPOTHESIS_DATABASE_READONLY"):
        shared = ReadOnlyDatabase(shared)
    return shared


def _github_artifact(spec):
    from hypothesis.database import GitHubArtifactDatabase, ReadOnlyDatabase

    repository, _, artifact = spec.partition(":")
    owner, slash, repo = repository.partition("/")
    if not (owner and slash and repo) or "/" in repo:
        raise DatabaseConfigError(f"HYPOTHESIS_GITHUB_ARTIFACT must be OWNER/REPO[:ARTIFACT], got {spec!r}")
    # Hypothesis documents this database as read-only: it must be wrapped.
    return ReadOnlyDatabase(GitHubArtifactDatabase(owner, repo, artifact_name=artifact or DEFAULT_ARTIFACT))


def example_database(environ):
    """The example database ``environ`` asks for, or None to keep each profile's own."""
    shared = []
    if url := environ.get("HYPOTHESIS_DATABASE"):
        shared.append(_redis(url, environ))
    if spec := environ.get("HYPOTHESIS_GITHUB_ARTIFACT"):
        shared.append(_github_artifact(spec))
    if not shared:
        return None
    from hypothesis.database import MultiplexedDatabase

    return MultiplexedDatabase(_local(environ), *shared)
