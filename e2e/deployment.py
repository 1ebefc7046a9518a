"""Airflow 3 on CeleryExecutor: configuration, its six processes, and a small REST client for the runs.

Configuration goes through AIRFLOW__* variables shared by every component (one JWT secret, one
Fernet key, one execution-API URL), so a task started by either worker talks to the same api-server.
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import requests

from e2e.procs import Proc, ProcessGroups, wait_until

REPO = Path(__file__).resolve().parents[1]
ADMIN = "admin"
# Triggerer HA: each triggerer heartbeats every second; one silent for longer than the threshold
# (default 30 s) is taken for dead, and the others take its triggers over. Integer seconds: 3.3
# reads it with getint. Kept well above the heartbeat: a triggerer slowed by a busy machine must
# not lose its triggers to the other while it still runs them.
TRIGGERER_HEARTBEAT = 1
# Workers and triggerers serve their logs over HTTP on every interface (uvicorn host "", no option
# to bind 127.0.0.1). Not needed here: every process writes to the same log folder, which the
# api-server reads directly.
LOGS = ("--skip-serve-logs",)
TRIGGERER_HEALTH_CHECK_THRESHOLD = 8
# How long a task may go without a heartbeat before the scheduler fails it (default 300 s): a
# SIGKILLed worker sends none, and its task must be retried while the job still has work to do.
HEARTBEAT_TIMEOUT = 20


def airflow_env(home: Path, database: str, redis_port: int, api_port: int, task_logs: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "PYTHONPATH": str(REPO),
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags_examples"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            # Paused until the run needs them: the event-driven cleanup's watcher would otherwise report
            # the old links that the worker-kill scenario deletes (see scenarios.unpause).
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            "AIRFLOW__CORE__FERNET_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN}:admin",
            "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
            # Every task retried once more than it needs; the cleanup's delete task relies on it.
            "AIRFLOW__CORE__DEFAULT_TASK_RETRIES": "2",
            "AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY": "2",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://{database}",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": f"postgresql+asyncpg://{database}",
            "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
            # Many hosts, one budget (docs/many-hosts.md): the workers and triggerers share the rate
            # limit and what was learned through the broker's Redis, in a database of its own
            # (RedisHook reads the database from the `db` extra, not from the URI's path).
            "AIRFLOW_CONN_LINKSTATS_SHARED_STATE": f"redis://127.0.0.1:{redis_port}/?db=1",
            "AIRFLOW__LINKSTATS__SHARED_STATE_CONN_ID": "linkstats_shared_state",
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql+psycopg2://{database}",
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": "4",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(api_port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{api_port}",
            "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(task_logs),  # kept after the run, unlike the home
            "AIRFLOW__TRIGGERER__CAPACITY": "100",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": str(TRIGGERER_HEARTBEAT),
            "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": str(TRIGGERER_HEALTH_CHECK_THRESHOLD),
            # The campaign's wait checks every 2 s instead of every 5 minutes.
            "LINKSTATS_CAMPAIGN_POKE_INTERVAL": "2",
            "LINKSTATS_CAMPAIGN_WAIT_TIMEOUT": "900",
            # The expiry watcher (linkstats_cleanup_on_expiry) walks the Expired listing every 2 s.
            "LINKSTATS_EXPIRY_POKE_INTERVAL": "2",
            # The watcher sees only the handover's links (handover.EXPIRY_PREFIX): the campaign's A/B
            # link ends a minute after its create, and a slow handover once let the watcher report
            # it, its cleanup delete it, and the campaign's wait meet a 404.
            "LINKSTATS_EXPIRY_ALIAS_SEARCH": "e2e-expiry",
        }
    )
    return env


def airflow(*args: str) -> list[str]:
    return [sys.executable, "-m", "airflow", *args]


def migrate(env: dict[str, str], out: Path) -> None:
    with (out / "db-migrate.log").open("w") as log:
        subprocess.run(airflow("db", "migrate"), env=env, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=600)


def start_triggerer(groups: ProcessGroups, env: dict[str, str], out: Path, name: str) -> Proc:
    """One more triggerer (Airflow HA: any number share the triggers). No log server (see ``LOGS``)."""
    return groups.start(Proc(name, airflow("triggerer", *LOGS), out / f"{name}.log", None, env), cwd=REPO)


def start_airflow(groups: ProcessGroups, env: dict[str, str], out: Path, api_port: int) -> dict[str, Proc]:
    """api-server, scheduler, dag-processor, the first triggerer and two Celery workers, each in its own
    group. The second triggerer joins during the campaign (``handover.py``)."""

    def component(name: str, argv: list[str], port: int | None = None, **extra_env: str) -> Proc:
        return groups.start(Proc(name, argv, out / f"{name}.log", port, {**env, **extra_env}), cwd=REPO)

    procs = {"api-server": component("api-server", airflow("api-server", "--workers", "1"), api_port)}
    procs["scheduler"] = component("scheduler", airflow("scheduler"))
    procs["dag-processor"] = component("dag-processor", airflow("dag-processor"))
    procs["triggerer-1"] = start_triggerer(groups, env, out, "triggerer-1")
    for number in (1, 2):
        procs[f"worker-{number}"] = component(
            f"worker-{number}",
            airflow("celery", "worker", "--celery-hostname", f"worker{number}@%h", "--concurrency", "4", *LOGS),
        )
    groups.wait_port(procs["api-server"], 300)
    return procs


class AirflowApi:
    """The public REST API (v2) with a JWT from the simple auth manager's generated password."""

    def __init__(self, base: str, home: Path) -> None:
        self.base = base
        self.home = home
        self.session = requests.Session()

    def password(self) -> str:
        import json

        path = self.home / "simple_auth_manager_passwords.json.generated"
        return json.loads(wait_until(lambda: path.exists() and path.read_text(), 120, path.name))[ADMIN]

    def login(self) -> None:
        answer = requests.post(
            f"{self.base}/auth/token", json={"username": ADMIN, "password": self.password()}, timeout=30
        )
        answer.raise_for_status()
        self.session.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"

    def call(self, method: str, path: str, **kwargs) -> dict:
        answer = self.session.request(method, f"{self.base}/api/v2{path}", timeout=60, **kwargs)
        if answer.status_code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {answer.status_code} {answer.text[:300]}")
        return answer.json() if answer.content else {}

    def wait_for_dag(self, dag_id: str, timeout: float = 300) -> None:
        def parsed() -> bool:
            return self.session.get(f"{self.base}/api/v2/dags/{dag_id}", timeout=30).status_code == 200

        wait_until(parsed, timeout, f"the dag-processor to parse {dag_id}", 2)

    def set_paused(self, dag_id: str, paused: bool) -> None:
        self.call("PATCH", f"/dags/{dag_id}", params={"update_mask": "is_paused"}, json={"is_paused": paused})

    def reparse(self, dag_id: str) -> None:
        """Ask the dag-processor to parse the DAG's file now (it also adds or drops the file's asset watchers)."""
        token = self.call("GET", f"/dags/{dag_id}")["file_token"]
        self.call("PUT", f"/parseDagFile/{token}")

    def trigger(self, dag_id: str, conf: dict) -> str:
        run = self.call("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})
        return run["dag_run_id"]

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}")

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.run(dag_id, run_id)
            if run["state"] in ("success", "failed"):
                return run
            time.sleep(2)
        raise TimeoutError(f"{dag_id} run {run_id} still {run['state']} after {timeout:.0f} s")

    def task_instance(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> dict:
        suffix = f"/{map_index}" if map_index >= 0 else ""
        return self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}{suffix}")

    def tries(self, dag_id: str, run_id: str, task_id: str) -> list[dict]:
        return self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/tries")["task_instances"]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        found = self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 100})
        states: dict[str, str] = {}
        for ti in found["task_instances"]:
            key = ti["task_id"] + (f"[{ti['map_index']}]" if ti["map_index"] >= 0 else "")
            states[key] = ti["state"]
        return states
