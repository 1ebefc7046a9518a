"""Fresh Python processes for the tests, without a fresh import of Airflow each time.

``run_python(["-c", CODE, *args], env=...)`` runs like ``subprocess.run([sys.executable, "-c",
CODE, *args], env=env, capture_output=True, text=True, timeout=...)`` and answers the same
``CompletedProcess``; ``start(jobs)`` forks several at once (the shared-store tests' hosts) and
``Started.codes()`` waits for them. Each process is forked from one launcher per test process
(tests/support/host_launcher.py ``--serve``) that imported the provider, and so Airflow, once: it
takes exactly the job's environment and learns nothing from the launcher (which only imported),
a new task process as Airflow forks one. An import of Airflow cost each process about 8 s of CPU.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The launcher imports Airflow under the environment the test process started with (conftest's
# Airflow home), not one a running test has patched.
_BASE_ENV = {**os.environ, "PYTHONPATH": str(REPO)}
_LOCK = threading.Lock()
_launcher: subprocess.Popen | None = None


def _started() -> subprocess.Popen:
    global _launcher
    if _launcher is None or _launcher.poll() is not None:
        command = [sys.executable, "-m", "tests.support.host_launcher", "--serve"]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
        _launcher = subprocess.Popen(command, env=_BASE_ENV, cwd=REPO, start_new_session=True, text=True, **pipes)
    return _launcher


def stop() -> None:
    """Kill the launcher and whatever it forked (its own session); the next job starts another."""
    global _launcher
    if _launcher is not None:
        try:
            os.killpg(_launcher.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _launcher.wait()
        _launcher = None


atexit.register(stop)


@dataclass
class Started:
    """Jobs forked together (one batch at a time per launcher): ``codes`` waits for all of them;
    ``close`` (after a failure before that) kills them."""

    jobs: list[dict]
    launcher: subprocess.Popen
    waiting: bool = True

    def codes(self, timeout: float) -> list[int]:
        ready, _, _ = select.select([self.launcher.stdout], [], [], timeout)
        line = self.launcher.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise subprocess.TimeoutExpired([job["name"] for job in self.jobs], timeout)
        self._done()
        return json.loads(line)

    def close(self) -> None:
        if self.waiting:
            stop()  # its children too
            self._done()

    def _done(self) -> None:
        if self.waiting:
            self.waiting = False
            _LOCK.release()


def start(jobs: list[dict], folder: Path) -> Started:
    """Fork every job (``name``, ``module`` or ``code``, ``argv``, ``env``) at once; each one's
    output goes to ``folder/<n>-<name>.out`` and ``.err`` (set in the job as ``stdout``, ``stderr``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, job in enumerate(jobs):
        job["env"] = {**job["env"], "PYTHONPATH": str(REPO)}
        job["stdout"], job["stderr"] = (str(folder / f"{n}-{job['name']}.{kind}") for kind in ("out", "err"))
    _LOCK.acquire()  # released by codes() or close()
    try:
        launcher = _started()
        launcher.stdin.write(json.dumps(jobs) + "\n")
        launcher.stdin.flush()
    except BaseException:
        _LOCK.release()
        stop()
        raise
    return Started(jobs, launcher)


def run_python(args: list[str], *, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``python ARGS`` (``-c CODE ...`` or ``-m MODULE ...``) in a fresh forked process, with ``env``."""
    flag, target, *rest = args
    job = {"name": "fresh", ("code" if flag == "-c" else "module"): target, "argv": rest, "env": env}
    with tempfile.TemporaryDirectory(prefix="fresh-") as folder:
        [code] = start([job], Path(folder)).codes(timeout)
        out, err = Path(job["stdout"]).read_text(), Path(job["stderr"]).read_text()
    return subprocess.CompletedProcess([sys.executable, *args], code, out, err)
