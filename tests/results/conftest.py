"""Fixtures for the results-store tests: a stand-in driver, a real PostgreSQL server, store URLs.

Every store test runs twice, against SQLite and against a real PostgreSQL server that
this file starts (Debian's ``postgresql`` package: initdb + pg_ctl on a unix socket in
a temporary folder, as the ``postgres`` user when the tests run as root, since initdb
refuses root). Without PostgreSQL the PostgreSQL half is skipped on a developer
machine and fails in CI (``CI=true``), where ``.ci/run`` installs it.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require
from tests.results.pgserver import PgServer, pg_bindir, run_as_postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    bindir = pg_bindir()
    require(bindir is not None, "PostgreSQL is not installed (apt-get install postgresql)")
    assert bindir is not None
    run_as = run_as_postgres()
    require(run_as is not None, "runuser (util-linux) is needed to run initdb as postgres")
    assert run_as is not None
    root = Path(tempfile.mkdtemp(prefix="zr-pg-"))
    server = PgServer(bindir, root, run_as)
    try:
        server.start()
    except RuntimeError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"PostgreSQL is installed but did not start: {exc}")
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path):
    """A function giving the URL of a new, empty store of this test's backend."""
    counter = itertools.count()

    def make() -> str:
        if backend == "sqlite":
            return str(tmp_path / f"store{next(counter)}" / "results.db")
        server: PgServer = request.getfixturevalue("pg_server")
        return server.new_database()

    return make


@pytest.fixture
def store_url(make_url) -> str:
    return str(make_url())
