"""The deployment's backing services: a private PostgreSQL cluster, Redis, and the Linkstats emulator."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys
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


def start_postgres(groups: ProcessGroups, root: Path, out: Path) -> tuple[Proc, str]:
    """initdb + pg_ctl in ``root`` (world-traversable temp dir), trust auth on 127.0.0.1 only.

    Returns the process and the database URL (without a password: the cluster only trusts loopback).
    """
    data, sockets, log = root / "pgdata", root / "pgsock", out / "postgres.log"
    port = free_port()
    _, user = _as_unprivileged([])
    for folder in (data, sockets):
        folder.mkdir(parents=True)
        if user:
            shutil.chown(folder, user)
    log.touch()
    if user:
        shutil.chown(log, user)
    initdb, _ = _as_unprivileged(
        [str(PG_BIN / "initdb"), "-D", str(data), "-U", "airflow", "--auth=trust", "-E", "UTF8", "--no-sync"]
    )
    subprocess.run(initdb, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    pg_ctl, _ = _as_unprivileged([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w"])
    # pg_ctl daemonises the postmaster, which calls setsid(): its pid is its own process group, and
    # SIGINT to it is PostgreSQL's "fast" shutdown (it ends its backends, which have groups of their own).
    subprocess.run([*pg_ctl, "start"], check=True, stdout=subprocess.DEVNULL, timeout=120)
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    proc = Proc("postgres", [str(PG_BIN / "postgres")], log, port, daemon_pid=postmaster, stop_signal=signal.SIGINT)
    groups.adopt(proc, os.getpgid(postmaster))
    psql = [str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "airflow", "-d", "postgres", "-qAt"]
    wait_until(lambda: subprocess.run([*psql, "-c", "select 1"], capture_output=True).returncode == 0, 60, "PostgreSQL")
    subprocess.run([*psql, "-c", "CREATE DATABASE airflow"], check=True, capture_output=True)
    return proc, f"airflow@127.0.0.1:{port}/airflow"


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
    client's limiter counts minutes), with 12x the real budget so 500 deletes take ~45 s, not 8 min."""
    helptext = subprocess.run(
        [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "--rate-limit" in helptext and "--rate-limit-window" in helptext:
        return ["--rate-limit", "720", "--rate-limit-window", "60"], "720 requests a minute (12x a real install)"
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
