"""One real Airflow deployment shared by the deployment tests, their scenarios run side by side.

Scheduler, dag-processor, triggerer and api-server (Airflow 3; LocalExecutor on SQLite), or
scheduler and triggerer (Airflow 2.11, which refuses LocalExecutor on SQLite: SequentialExecutor)
over every example DAG, started once. Each test module registers a scenario (``@scenario``) and
marks its test ``@pytest.mark.deployment_scenario(name)``; the ``shared_deployment`` fixture
(tests/conftest.py) starts the deployment and every selected scenario at once, each in its own
thread with its own emulator and connection, and the test reports its scenario's outcome
(``shared_deployment.result(name)``): the assertions are the scenario's. ``xdist_group`` keeps
the tests on one pytest worker, so they share one deployment there.

The scenarios cannot see each other: each has its own emulator, reached by its own connection
(the campaign, cleanup and report DAGs by the default ones, the event-driven cleanup by
``LINKSTATS_EXPIRY_CONN_ID``), so the expiry watcher never deletes the campaign's links. Every
process is started in its own process group and the whole group is killed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import airflow
import pytest
import requests
from cryptography.fernet import Fernet

from tests.conftest import API_KEY, GENERATIONS, MIGRATED_DB, REPO, connection_json

AIRFLOW_3 = not airflow.__version__.startswith("2.")
FERNET_KEY = Fernet.generate_key().decode()  # trigger kwargs are stored encrypted, as in production


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Deployment:
    def __init__(self, home: Path, env: dict) -> None:
        self.home, self.env = home, env
        self.processes: dict[str, subprocess.Popen] = {}

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            # A CLI call imports the whole of Airflow: on a loaded 2-core machine (the suite's other
            # workers running Airflow at once) `airflow dags trigger` has taken over 180 s.
            [sys.executable, "-m", "airflow", *args], env=self.env, capture_output=True, text=True, timeout=600
        )
        if check and result.returncode != 0:
            raise AssertionError(f"airflow {' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
        return result

    def start(self, name: str, *args: str) -> None:
        log = (self.home / f"{name}.log").open("w")
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: executor workers die with it
        )

    def wait_until_answering(self, url: str, name: str, timeout: float = 300) -> None:
        # On a loaded 2-core machine (the suite's other workers starting their own Airflow at the
        # same moment) the api-server has taken over 120 s to answer: a wait for readiness, not a bound.
        deadline = time.monotonic() + timeout
        while True:
            try:
                if requests.get(url, timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            process = self.processes[name]
            assert process.poll() is None, f"{name} exited ({process.returncode}):\n{self.log(name)[-3000:]}"
            assert time.monotonic() < deadline, f"{name} not answering {url}:\n{self.log(name)[-3000:]}"
            time.sleep(0.5)

    def log(self, name: str) -> str:
        return (self.home / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        for process in self.processes.values():
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # Reap each one: a process killed but not yet waited for still reads as running (poll()
        # is None), which failed the final check after a scheduler slow to stop on SIGTERM.
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass

    def query(self, sql: str, *args: object) -> list[tuple]:
        """Rows of the metadata database (read-only; the scheduler keeps writing)."""
        uri = f"file:{self.home / 'airflow.db'}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as db:
            return db.execute(sql, args).fetchall()

    def run_states(self, dag_id: str) -> list[str]:
        """States of the DAG's runs, newest first (read from the metadata database: an
        ``airflow dags list-runs`` costs 2 s of CPU each time, and the scenarios ask often)."""
        return [state for (state,) in self.query("SELECT state FROM dag_run WHERE dag_id = ? ORDER BY id DESC", dag_id)]

    def failed_task_logs(self, dag_id: str, tail: int = 4000) -> str:
        """The log tails of the DAG's failed (or retried) task instances: what a failed run's
        assertion shows first, since the scheduler's log rarely says why a task failed."""
        failed = "state IN ('failed', 'up_for_retry') OR try_number > 1"
        tasks = {t for (t,) in self.query(f"SELECT task_id FROM task_instance WHERE dag_id = ? AND ({failed})", dag_id)}
        parts = []
        for task_id in sorted(tasks):
            # A mapped task's logs are one level deeper (task_id=.../map_index=N/attempt=1.log).
            for path in sorted((self.home / "logs").rglob(f"dag_id={dag_id}/**/task_id={task_id}/**/*.log")):
                if path.is_file():
                    parts.append(f"--- {path.relative_to(self.home)}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts) or f"(no task log of {dag_id} names a failed task)"

    def task_timeline(self) -> str:
        """Every task try of the deployment, by start: where an executor's time went when a run was slow."""
        rows = self.query(
            "SELECT start_date, end_date, dag_id, task_id, try_number, state FROM task_instance "
            "ORDER BY start_date IS NULL, start_date"
        )
        return "\n".join(" ".join(str(value) for value in row) for row in rows) or "(no task instance)"

    def unexplained_retries(self, dag_id: str) -> list[str]:
        """The DAG's task tries that failed for a reason other than Airflow's own races.

        The deployment gives every task one retry for Airflow's deferred-task race (see
        ``deployment_env``); a first try of any other task should succeed. One more race is
        Airflow's: on 3.0 a task's first heartbeat can read its row from before the worker's
        start was committed (state queued, no hostname; SQLite here), and the server answers
        "running_elsewhere" (related: apache/airflow#48719). Such a try is killed before it runs
        any of our code, so it is not counted; every other failed try is.
        """
        failed = []
        rows = self.query("SELECT task_id, run_id, try_number FROM task_instance WHERE dag_id = ?", dag_id)
        for task_id, run_id, tries in rows:
            for attempt in range(1, tries):
                task_dir = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
                path = task_dir / f"attempt={attempt}.log"
                text = path.read_text(errors="replace") if path.exists() else ""
                if not ('"reason":"running_elsewhere"' in text and '"current_hostname":""' in text):
                    failed.append(f"{task_id} ({run_id}) try {attempt}:\n{text[-3000:] or '(no log)'}")
        if failed:  # a supervisor's own complaints (heartbeats, kills) go to the executor's log, not the task's
            complaints = [
                line
                for name in ("scheduler", "worker")
                if name in self.processes
                for line in self.log(name).splitlines()
                if any(word in line for word in ("heartbeat", "Terminating", "terminating", "killed", "Killing"))
            ]
            failed.append("the executor's log on heartbeats and kills:\n" + "\n".join(complaints[-15:]))
        return failed


@dataclass
class Scenario:
    run: Callable[[SharedDeployment], None]
    runs_here: bool  # False where its DAG does not exist (the test is skipped there)


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, runs_here: bool = True):
    """Register ``run(shared_deployment)`` as the scenario ``name``."""

    def register(run: Callable[[SharedDeployment], None]) -> Callable[[SharedDeployment], None]:
        SCENARIOS[name] = Scenario(run, runs_here)
        return run

    return register


@dataclass
class SharedDeployment:
    deployment: Deployment
    emulators: dict  # scenario name -> its own emulator
    threads: dict[str, threading.Thread] = field(default_factory=dict)
    errors: dict[str, BaseException] = field(default_factory=dict)
    stopped: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def home(self) -> Path:
        return self.deployment.home

    def start(self, name: str) -> None:
        def run() -> None:
            try:
                SCENARIOS[name].run(self)
            except BaseException as error:  # reported by the scenario's test
                self.errors[name] = error

        self.threads[name] = thread = threading.Thread(target=run, name=f"scenario-{name}", daemon=True)
        thread.start()

    def result(self, name: str, timeout: float = 540) -> None:
        """Wait for the scenario to end; its failure is the test's. Once every scenario has
        ended the deployment is stopped (it would spend the worker's CPU on idle loops), and
        every process of it must be gone."""
        thread = self.threads[name]
        thread.join(timeout)
        assert not thread.is_alive(), f"scenario {name} still running after {timeout:.0f} s"
        if not any(t.is_alive() for t in self.threads.values()):
            self.stop()
        if name in self.errors:
            raise self.errors[name]

    def stop(self) -> None:
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
            self.deployment.stop()
        for process_name, process in self.deployment.processes.items():
            assert process.poll() is not None, f"{process_name} still running"


# Connection ids of the scenarios that are not the example DAGs' defaults.
EXPIRY_CONN_ID = "linkstats_expiry_links"
RECOVERY_CONN_ID = "linkstats_recovery_links"


def environ_snapshot() -> dict[str, str]:
    """A copy of the environment; a leftover thread of an earlier test in this worker may set a
    variable meanwhile ("dictionary changed size during iteration", seen once on 3.1.8)."""
    for _ in range(20):
        try:
            return dict(os.environ)
        except RuntimeError:
            time.sleep(0.05)
    return dict(os.environ)


def deployment_env(home: Path, dags: Path, api_port: int, emulators: dict) -> dict[str, str]:
    campaign = emulators["campaign"]
    env = {
        **{k: v for k, v in environ_snapshot().items() if not k.startswith("AIRFLOW")},
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db?timeout=60",  # see tests/conftest.py
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor" if AIRFLOW_3 else "SequentialExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        # Airflow 3.3's scheduler can fail a resumed deferred task on a stale executor event
        # (apache/airflow#72716, open); one task retry keeps that race of Airflow's from
        # failing the campaign, while a sensor that really fails fails twice. The expiry
        # scenario checks that none of its tasks needed the retry.
        "AIRFLOW__CORE__DEFAULT_TASK_RETRIES": "1",
        "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "2",
        # A task's supervisor is killed after 3 heartbeats in a row fail, each given 5 s (3.1.1+):
        # on a saturated 2-core machine the api-server's SQLite write (which waits up to 60 s for
        # a lock, see tests/conftest.py) takes longer, and a healthy task died after its first log
        # line (CI, 3.3.2). A real deployment's api-server on PostgreSQL answers in milliseconds.
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "90",
        "AIRFLOW__WORKERS__MAX_FAILED_HEARTBEATS": "10",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
        "AIRFLOW__API__PORT": str(api_port),
        "AIRFLOW__API__WORKERS": "1",  # 3.0-3.2 start 4 by default: each a whole Airflow's import
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW__CORE__INTERNAL_API_SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__WEBSERVER__SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__CORE__FERNET_KEY": FERNET_KEY,
        # The deployment's own learned-service cache: its tasks share what one learned, and no
        # other deployment (another emulator on a reused port) can have left an entry there.
        "AIRFLOW__LINKSTATS__CACHE_DIR": str(home / "learned"),
        "LINKSTATS_CAMPAIGN_POKE_INTERVAL": "1",
        "LINKSTATS_CAMPAIGN_WAIT_TIMEOUT": "300",
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": connection_json(campaign.url),
        # The analytics service's own port: on the links port a website's statistics are answered
        # 422 (not a link statistic), which failed the weekly report whenever it ran while the
        # campaign's website existed (seen under parallel load).
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT": connection_json(campaign.analytics_url, "linkstats_analytics"),
        # The statistics example's warehouse: a SQLite file under the home, as the DAG's docstring says.
        "AIRFLOW_CONN_LINKSTATS_WAREHOUSE": json.dumps(
            {"conn_type": "sqlite", "host": str(home / "linkstats_warehouse.db")}
        ),
    }
    if "expiry" in emulators:
        env["LINKSTATS_EXPIRY_POKE_INTERVAL"] = "1"
        env["LINKSTATS_EXPIRY_CONN_ID"] = EXPIRY_CONN_ID
        env[f"AIRFLOW_CONN_{EXPIRY_CONN_ID.upper()}"] = connection_json(emulators["expiry"].url, default_domain_id=1)
    if "recovery" in emulators:  # the bulk launch, killed and recovered (tests/system/test_deployment_recovery.py)
        env["LINKSTATS_BULK_LAUNCH_CONN_ID"] = RECOVERY_CONN_ID
        env[f"AIRFLOW_CONN_{RECOVERY_CONN_ID.upper()}"] = connection_json(emulators["recovery"].url)
    return env


@contextlib.contextmanager
def shared_deployment(wanted: list[str]):
    """The deployment, with the ``wanted`` scenarios under way; stopped when they have all ended."""
    from airflow_provider_linkstats.emulator import Emulator

    names = [name for name in wanted if SCENARIOS[name].runs_here]
    home = Path(tempfile.mkdtemp(prefix="linkstats-deployment-"))
    dags = home / "dags"
    dags.mkdir()
    # Every example DAG; created unpaused, the scheduled ones run once each on their own.
    (dags / "examples").symlink_to(REPO / "dags_examples", target_is_directory=True)
    api_port = free_port()
    with contextlib.ExitStack() as stack:
        # Always one for the campaign: the default connections of every example DAG point there.
        emulators = {
            name: stack.enter_context(Emulator(api_keys=(API_KEY,), analytics_version=GENERATIONS["44"]))
            for name in dict.fromkeys(["campaign", *names])
        }
        deployment = Deployment(home, deployment_env(home, dags, api_port, emulators))
        shared = SharedDeployment(deployment, emulators)
        if "expiry" in emulators:  # the expiry scenario creates its links with a hook here
            variable = f"AIRFLOW_CONN_{EXPIRY_CONN_ID.upper()}"
            stack.enter_context(pytest.MonkeyPatch.context()).setenv(variable, deployment.env[variable])
        try:
            # A freshly migrated metadata database, copied: the same as `airflow db migrate`
            # here, without its 10-30 s.
            shutil.copyfile(MIGRATED_DB, home / "airflow.db")
            if AIRFLOW_3:
                deployment.start("api-server", "api-server", "--port", str(api_port), "--host", "127.0.0.1")
                deployment.start("dag-processor", "dag-processor")
                # The scheduled examples are queued as soon as the scheduler sees them; a worker
                # started before the api-server answers fails its task ("Connection refused"),
                # which on a loaded machine cascaded into a failed run (seen on 3.0.6). Airflow's
                # docker-compose waits on the same health check.
                deployment.wait_until_answering(f"http://127.0.0.1:{api_port}/api/v2/version", "api-server")
            deployment.start("scheduler", "scheduler")
            deployment.start("triggerer", "triggerer")
            for name in names:
                shared.start(name)
            yield shared
            for thread in shared.threads.values():
                thread.join(540)
        finally:
            shared.stop()
