"""The deployment's backing services: a private PostgreSQL cluster, Redis, and the Linkstats emulator."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from e2e.procs import Proc, ProcessGroups, free_port, wait_until

PG_BIN = Path(os.environ.get("LINKSTATS_E2E_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _as_unprivileged(argv: list[str]) -> tuple[list[str], str | None]:
    """initdb and postgres refuse to run as root: run them as the `postgres` (or `nobody`) user."""
    if os.geteuid() != 0:
        return argv, None
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        return ["runuser", "-u", user, "--", *argv], user
    raise RuntimeError("running as root and neither a `postgres` nor a `nobody` user exists for PostgreSQL")


def postgres_dir() -> Path:
    """A fresh directory that PostgreSQL's user owns and can reach: its data, socket and log go there.

    Outside the checkout and the run's temp dir, which may sit under a 0700 directory (a clone in
    a private home, a ``mktemp -d``) that the `postgres` user cannot enter. Under the temp root
    (``$TMPDIR``) when that user can reach it, else under /tmp; its mode is 0700, as PostgreSQL wants.
    """
    _, user = _as_unprivileged([])
    tried = []
    for parent in dict.fromkeys([tempfile.gettempdir(), "/tmp"]):
        folder = Path(tempfile.mkdtemp(prefix="linkstats-e2e-pg-", dir=parent))
        if user is None:
            return folder
        shutil.chown(folder, user, user)
        # Can the user reach it (every parent searchable)? Asked as that user, from a cwd it can enter.
        check = subprocess.run(["runuser", "-u", user, "--", "test", "-w", str(folder)], cwd="/", check=False)
        if check.returncode == 0:
            return folder
        tried.append(parent)
        shutil.rmtree(folder, ignore_errors=True)
    raise RuntimeError(f"the `{user}` user cannot reach a temp dir for PostgreSQL (tried {', '.join(tried)})")


def start_postgres(groups: ProcessGroups) -> tuple[Proc, str, Path]:
    """initdb + pg_ctl in a directory of its own (``postgres_dir()``), trust auth on 127.0.0.1 only.

    Every PostgreSQL command runs with that directory as its cwd: as `postgres`, the caller's cwd
    (the checkout) may be out of reach. Its log stays there while it runs (``keep_postgres_log``
    copies it into the run's logs after the teardown). Returns the process, the database URL (without a
    password: the cluster only trusts loopback) and the directory, for the caller to remove.
    """
    home = postgres_dir()
    data, sockets, log = home / "data", home / "sockets", home / "postgres.log"
    port = free_port()
    _, user = _as_unprivileged([])
    for folder in (data, sockets):
        folder.mkdir(mode=0o700)
        if user:
            shutil.chown(folder, user, user)
    initdb, _ = _as_unprivileged(
        [str(PG_BIN / "initdb"), "-D", str(data), "-U", "airflow", "--auth=trust", "-E", "UTF8", "--no-sync"]
    )
    done = subprocess.run(initdb, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    pg_ctl, _ = _as_unprivileged(
        [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "240"]
    )
    # pg_ctl daemonises the postmaster, which calls setsid(): its pid is its own process group, and
    # SIGINT to it is PostgreSQL's "fast" shutdown (it ends its backends, which have groups of their own).
    started = subprocess.run([*pg_ctl, "start"], cwd=home, capture_output=True, text=True, timeout=300)
    if started.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"pg_ctl start failed ({started.returncode}): {started.stderr.strip()} {tail}")
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    proc = Proc("postgres", [str(PG_BIN / "postgres")], log, port, daemon_pid=postmaster, stop_signal=signal.SIGINT)
    groups.adopt(proc, os.getpgid(postmaster))
    psql = [str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "airflow", "-d", "postgres", "-qAt"]
    wait_until(
        lambda: subprocess.run([*psql, "-c", "select 1"], cwd=home, capture_output=True).returncode == 0,
        120,
        "PostgreSQL",
    )
    subprocess.run([*psql, "-c", "CREATE DATABASE airflow"], cwd=home, check=True, capture_output=True)
    return proc, f"airflow@127.0.0.1:{port}/airflow", home


def keep_postgres_log(proc: Proc, out: Path) -> Path | None:
    """Copy the server's log (in its own directory) to ``out``, readable by whoever runs e2e."""
    if not proc.log.exists():
        return None
    kept = out / "postgres.log"
    shutil.copyfile(proc.log, kept)
    return kept


def start_redis(groups: ProcessGroups, root: Path, out: Path) -> Proc:
    """No RDB snapshots, no AOF: nothing of one run reaches the next."""
    port = free_port()
    folder = root / "redis"
    folder.mkdir()
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    argv += ["--dir", str(folder), "--daemonize", "no", "--protected-mode", "yes"]
    proc = groups.start(Proc("redis", argv, out / "redis.log", port))
    groups.wait_port(proc, 30)
    return proc


def emulator_options() -> tuple[list[str], str]:
    """Rate limits when this emulator has them: a one-minute window as on a real install (the
    client's limiter counts minutes), with 12x the real budget so 2,000 deletes take ~3 min, not 33."""
    helptext = subprocess.run(
        [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "--rate-limit" in helptext and "--rate-limit-window" in helptext:
        return ["--rate-limit", "1800", "--rate-limit-window", "60"], "1,800 requests a minute (30x a real install)"
    return [], "none (this emulator has no --rate-limit)"


def start_emulator(groups: ProcessGroups, out: Path, api_key: str) -> tuple[Proc, str]:
    port = free_port()
    options, limits = emulator_options()
    argv = [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--port", str(port), *options]
    argv += ["--api-version", "44", "--analytics-version", "3"]  # as before the command line defaulted to 49/31
    env = {**os.environ, "LINKSTATS_EMULATOR_API_KEY": api_key}  # the key stays out of `ps`
    proc = groups.start(Proc("emulator", argv, out / "emulator.log", port, env))
    groups.wait_port(proc, 60)
    return proc, limits
