"""A throw-away PostgreSQL server for the results store: initdb + pg_ctl on a unix socket in a temporary
folder (as the ``postgres`` user when run as root: initdb refuses root). The tests' fixture
(tests/results/conftest.py) and ``benchmarks/results_store.py --postgres`` start it the same way."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

PG_ENV_BIN = "ZLUDA_RUNNER_TEST_PG_BIN"  # a folder with initdb/pg_ctl, if not the usual one


def pg_bindir() -> Path | None:
    """The folder of initdb and pg_ctl (the newest installed), or None."""
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

    def cpu_seconds(self) -> float:
        """CPU (user + sys) the server has used so far: the postmaster, its running processes and those
        that ended (the backends of closed connections, counted into the postmaster's children)."""
        tick = os.sysconf("SC_CLK_TCK")
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile: its time is in the postmaster's children now
                continue
            pid, ppid = int(stat.parent.name), int(fields[1])
            if pid == postmaster:
                total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
            elif ppid == postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / tick

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@/{db}?host={self.sock}"

    def new_database(self) -> str:
        import psycopg

        name = f"results_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def run_as_postgres() -> list[str] | None:
    """The words that run a server program as ``postgres`` when we are root (initdb refuses root): ``[]``
    when not root, None when root and there is no ``runuser``."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"] if shutil.which("runuser") else None
