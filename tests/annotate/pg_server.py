"""A throwaway PostgreSQL server for the annotation tests: Debian's ``postgresql`` binaries,
``initdb`` into a temporary folder, listening on a Unix socket only (no TCP port to clash).

PostgreSQL refuses to run as root; under root the folder is given to the ``postgres``
system user (which the Debian package creates) and the server runs as that user through
``runuser``. A server that cannot start fails the tests under ``CI=true`` and skips them,
with the reason, elsewhere (a laptop without the package).
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SUPERUSER = "gamut"
_COUNTER = itertools.count(1)


def _bindir() -> Path | None:
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(found).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL for the annotation tests: {reason}"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message + " (CI=true: these tests must run; `make test` installs it)")
    pytest.skip(message + " (install Debian's `postgresql` package; `make test` does)")


class PostgresServer:
    """A running server; ``url(name)`` is a SQLAlchemy URL of database ``name`` on it."""

    def __init__(self, bindir: Path, root: Path, run_as: list[str]) -> None:
        self.bindir, self.root, self.run_as = bindir, root, run_as
        self.data, self.socket = root / "data", root / "socket"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.run_as, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def start(self) -> str | None:
        """Initialise and start; the reason it failed, or None."""
        done = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        if done.returncode != 0:
            return f"initdb failed: {done.stderr.strip() or done.stdout.strip()}"
        options = (
            f"-k {self.socket} -c listen_addresses='' -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
        )
        done = self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )
        if done.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace")[-2000:]
            return f"pg_ctl start failed: {done.stderr.strip()} {log}"
        return None

    def stop(self) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")

    def url(self, name: str) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@/{name}?host={self.socket}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(
            dbname="postgres", user=SUPERUSER, host=str(self.socket), autocommit=True
        ) as connection:
            connection.execute(sql)

    @contextmanager
    def database(self) -> Iterator[str]:
        """A new empty database for one test, dropped afterwards."""
        name = f"t{os.getpid()}_{next(_COUNTER)}"
        self._admin(f'CREATE DATABASE "{name}"')
        try:
            yield self.url(name)
        finally:
            self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """Start a server for the test session (or fail/skip, see the module docstring)."""
    bindir = _bindir()
    if bindir is None:
        _unavailable("no initdb found (/usr/lib/postgresql/*/bin)")
        raise AssertionError  # unreachable: _unavailable raises
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("the psycopg driver is not installed (pip install 'psycopg[binary]')")
    run_as: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="gamut-pg-"))
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("running as root and there is no `postgres` user to run the server")
        os.chown(root, owner.pw_uid, owner.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    (root / "socket").mkdir()
    if run_as:
        os.chown(root / "socket", owner.pw_uid, owner.pw_gid)
    server = PostgresServer(bindir, root, run_as)
    problem = server.start()
    if problem is not None:
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(problem)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
