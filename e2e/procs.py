"""Processes of the deployment: each in its own process group, stopped by group, ports checked free.

Every server is started with ``start_new_session=True``, so its pid is also its process-group id
and ``killpg`` reaches whatever it forked (Celery's pool, uvicorn workers, PostgreSQL backends).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_until(check, timeout: float, what: str, interval: float = 0.5):
    """Poll ``check()`` until it returns something truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


@dataclass
class Proc:
    name: str
    argv: list[str]
    log: Path
    port: int | None = None
    env: dict[str, str] | None = None
    popen: subprocess.Popen | None = field(default=None, repr=False)
    pgid: int | None = None
    ended: str = ""  # how it ended: "stopped", "killed by the test", ...
    daemon_pid: int | None = None  # for a server that forked away from the process we started
    stop_signal: int = signal.SIGTERM

    @property
    def pid(self) -> int | None:
        return self.daemon_pid or (self.popen.pid if self.popen else None)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None


class ProcessGroups:
    """Starts processes in their own groups and ends every group it started, newest first."""

    def __init__(self) -> None:
        self.procs: list[Proc] = []

    def start(self, proc: Proc, cwd: Path | None = None) -> Proc:
        proc.log.parent.mkdir(parents=True, exist_ok=True)
        with proc.log.open("ab") as log:
            proc.popen = subprocess.Popen(
                proc.argv,
                env=proc.env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc.pgid = proc.popen.pid
        self.procs.append(proc)
        return proc

    def adopt(self, proc: Proc, pgid: int) -> Proc:
        """A server that daemonised itself into its own group (pg_ctl's postmaster calls setsid)."""
        proc.pgid = pgid
        self.procs.append(proc)
        return proc

    def wait_port(self, proc: Proc, timeout: float = 120) -> None:
        def up() -> bool:
            if proc.popen is not None and proc.popen.poll() is not None:
                raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode}; see {proc.log}")
            return listening(proc.port)

        wait_until(up, timeout, f"{proc.name} to listen on port {proc.port}")

    def stop_all(self, grace: float = 45) -> list[str]:
        """Signal every group (SIGTERM, or the server's own stop signal), SIGKILL what is left after ``grace``
        seconds; returns the problems found. 45 s: on a loaded 2-core machine the api-server's workers
        once took over 20 s to stop on SIGTERM."""
        for proc in reversed(self.procs):
            if not proc.ended:
                _signal_group(proc.pgid, proc.stop_signal)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_group_alive(p.pgid) for p in self.procs if not p.ended):
            time.sleep(0.2)
        problems = []
        for proc in self.procs:
            if proc.ended:
                continue
            if _group_alive(proc.pgid):
                problems.append(f"{proc.name} did not stop within {grace:.0f} s: SIGKILL")
                _signal_group(proc.pgid, signal.SIGKILL)
            proc.ended = "stopped"
            if proc.popen is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.popen.wait(timeout=5)
        still = [f"{p.name} (port {p.port})" for p in self.procs if p.port and listening(p.port)]
        if still:
            problems.append("still listening after teardown: " + ", ".join(still))
        return problems


def _signal_group(pgid: int | None, signum: int) -> None:
    if pgid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)


def group_members(pgid: int | None) -> list[int]:
    """Live (non-zombie) processes of a group, read from /proc."""
    members = []
    if not pgid:
        return members
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the ")" closing the command name: state, ppid, pgrp, ...
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            members.append(int(entry.name))
    return members


def _group_alive(pgid: int | None) -> bool:
    return bool(group_members(pgid))


def outside_loopback(groups: ProcessGroups, connections: list | None = None) -> list[str]:
    """Listening sockets of the groups' processes on any address but 127.0.0.1 / ::1 (none allowed).

    ``connections``: ``psutil.net_connections(kind="inet")`` unless given (a test gives its own)."""
    import psutil

    pids = {pid for proc in groups.procs if not proc.ended for pid in group_members(proc.pgid)}
    names = {pid: proc.name for proc in groups.procs for pid in group_members(proc.pgid)}
    found = []
    for conn in psutil.net_connections(kind="inet") if connections is None else connections:
        if conn.status == psutil.CONN_LISTEN and conn.pid in pids and conn.laddr.ip not in ("127.0.0.1", "::1"):
            found.append(f"{names.get(conn.pid, conn.pid)} (pid {conn.pid}) on {conn.laddr.ip}:{conn.laddr.port}")
    return sorted(found)
