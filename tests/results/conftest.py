"""Fixtures for the results-store tests: a stand-in driver, a real PostgreSQL server, store URLs.

Every store test runs twice, against SQLite and against a real PostgreSQL server that
this file starts (Debian's ``postgresql`` package: initdb + pg_ctl on a unix socket in
a temporary folder, as the ``postgres`` user when the tests run as root, since initdb
refuses root). Without PostgreSQL the PostgreSQL half is skipped on a developer
machine and fails in CI (``CI=true``), where ``.ci/run`` installs it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require

PG_ENV_BIN = "ZLUDA_RUNNER_TEST_PG_BIN"  # a folder with initdb/pg_ctl, if not the usual one




def _pg_bindir() -> Path | None:
    if os.environ.get(PG_ENV_BIN):
        return Path(os.environ[PG_ENV_BIN])
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if out and (Path(out) / "initdb").exists():
            return Path(out)
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parent.parent.name)
    return versions[-1].parent if versions else None


class PgServer:
    """A throw-away PostgreSQL cluster on a unix socket; :meth:`new_database` gives an empty db URL."""

    def __init__(self, bindir: Path, root: Path, run_as: list[str]) -> None:
        self.bindir, self.root, self.run_as = bindir, root, run_as
        self.data, self.sock = root / "data", root / "sock"
        self._names = itertools.count()

    def _run(self, *argv: str) -> None:
        proc = subprocess.run([*self.run_as, *argv], capture_output=True, text=True, check=False, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")

    def start(self) -> None:
        self.sock.mkdir()
        if self.run_as:
            shutil.chown(self.root, user="postgres")
            shutil.chown(self.sock, user="postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "--auth=trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        )
        options = f"-k {self.sock} -c listen_addresses='' -c fsync=off"
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "-l",
            str(self.root / "server.log"),
            "start",
        )

    def stop(self) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@/{db}?host={self.sock}"

    def new_database(self) -> str:
        import psycopg

        name = f"results_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    bindir = _pg_bindir()
    require(bindir is not None, "PostgreSQL is not installed (apt-get install postgresql)")
    assert bindir is not None
    run_as: list[str] = []
    if os.geteuid() == 0:
        require(
            shutil.which("runuser") is not None, "runuser (util-linux) is needed to run initdb as postgres"
        )
        run_as = ["runuser", "-u", "postgres", "--"]
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
