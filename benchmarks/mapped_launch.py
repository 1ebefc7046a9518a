"""Requests per link of a mapped campaign launch in a real deployment, on phpShort 44 and 49.

    python -m benchmarks.mapped_launch [--links 20] [--provider-root PATH] [--json FILE]

A real Airflow 3 deployment (api-server, dag-processor and scheduler; LocalExecutor, so every
mapped task instance runs in a process of its own) runs one DAG per phpShort generation. Each
launches ``--links`` links the way ``dags_examples/linkstats_campaign_launch.py`` does:
``LinkstatsCreateLinkOperator.partial(if_exists="skip").expand_kwargs(...)``, every link with an
``expires_at``, every other one with a click limit, the connection left at ``api_version`` auto on
the bare site URL (no API path) of its own emulator, which allows 60 requests a minute per client
address as real installs do. The emulators count what arrives: requests per link, and what they
were (version probes, account reads, alias look-ups, creates, 429 answers).

``--provider-root`` runs the deployment's processes with the provider found there (a checkout or
worktree of another commit, e.g. before the learned-service cache), for a before/after pair.
Takes 3-8 minutes (most of it Airflow starting and running 40 task processes); ``make bench``
runs it as its mapped-launch rows (``--no-deployment`` skips them).
"""

from __future__ import annotations

import argparse
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
import textwrap
import time
from pathlib import Path

from benchmarks.common import API_KEY, EmulatorProcess

HERE = Path(__file__).resolve().parent
GENERATIONS = ("44", "49")
RUN_TIMEOUT = 600.0
GOAL = 1.1  # issue 26: one create per link plus one discovery for the whole deployment

DAG_FILE = textwrap.dedent(
    '''
    """Benchmark DAGs written by benchmarks/mapped_launch.py: one mapped launch per generation."""

    import os

    import pendulum
    from airflow.providers.common.compat.sdk import DAG, task

    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator

    LINKS = int(os.environ["LINKSTATS_BENCH_LAUNCH_LINKS"])

    for generation in os.environ["LINKSTATS_BENCH_LAUNCH_GENERATIONS"].split(","):
        with DAG(
            dag_id=f"bench_launch_{generation}",
            schedule="@once",
            start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
            catchup=False,
        ) as dag:

            @task
            def plan_links() -> list[dict]:
                expires_at = pendulum.now("UTC").add(days=7).isoformat()
                return [
                    {
                        "url": f"https://example.com/launch?item={i}",
                        "alias": f"launch-{i:04d}",
                        "expires_at": expires_at,
                        **({"expiration_clicks": 100} if i % 2 else {}),
                    }
                    for i in range(LINKS)
                ]

            LinkstatsCreateLinkOperator.partial(
                task_id="create_links", if_exists="skip", linkstats_conn_id=f"bench_launch_{generation}"
            ).expand_kwargs(plan_links())
        globals()[dag.dag_id] = dag
    '''
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def deployment_env(home: Path, api_port: int, emulators: dict[str, EmulatorProcess], links: int, root: str | None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            # A loaded machine answers the tasks' Execution API calls late (5 s by default).
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__API__PORT": str(api_port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
            "AIRFLOW__CORE__INTERNAL_API_SECRET_KEY": secrets.token_urlsafe(32),
            "AIRFLOW__WEBSERVER__SECRET_KEY": secrets.token_urlsafe(32),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            # The deployment's own learned-service cache (a fresh one: the first task discovers).
            "AIRFLOW__LINKSTATS__CACHE_DIR": str(home / "learned"),
            "LINKSTATS_BENCH_LAUNCH_LINKS": str(links),
            "LINKSTATS_BENCH_LAUNCH_GENERATIONS": ",".join(emulators),
        }
    )
    if root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    for generation, emulator in emulators.items():
        # What a user's first connection looks like: the site's URL, the key, the domain; no version.
        connection = {
            "conn_type": "linkstats_links",
            "host": emulator.url,
            "password": API_KEY,
            "extra": {"default_domain_id": 1},
        }
        env[f"AIRFLOW_CONN_BENCH_LAUNCH_{generation}"] = json.dumps(connection)
    return env


class Processes:
    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home, self.env = home, env
        self.running: dict[str, subprocess.Popen] = {}

    def run(self, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "airflow", *args], env=self.env, cwd=self.home, capture_output=True, text=True
        )
        if done.returncode:
            raise RuntimeError(f"airflow {' '.join(args)} failed: {done.stderr[-2000:]}")

    def start(self, name: str, *args: str) -> None:
        log = (self.home / f"{name}.log").open("w")
        self.running[name] = subprocess.Popen(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            cwd=self.home,  # not the checkout: ``python -m`` puts the current directory first on sys.path
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def check(self) -> None:
        for name, process in self.running.items():
            if process.poll() is not None:
                log = (self.home / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited ({process.returncode}):\n{log}")

    def stop(self) -> None:
        for process in self.running.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in self.running.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


def dag_run_states(home: Path) -> dict[str, str]:
    uri = f"file:{home / 'airflow.db'}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as db:
            return dict(db.execute("SELECT dag_id, state FROM dag_run").fetchall())
    except sqlite3.Error:
        return {}


def task_states(home: Path, dag_id: str) -> dict[str, int]:
    uri = f"file:{home / 'airflow.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as db:
        rows = db.execute(
            "SELECT state, count(*) FROM task_instance WHERE dag_id = ? AND task_id = 'create_links' GROUP BY state",
            (dag_id,),
        ).fetchall()
    return {str(state): count for state, count in rows}


def what_arrived(emulator: EmulatorProcess) -> dict[str, int]:
    """The API requests the emulator saw, by kind."""
    kinds = {"probe": 0, "account": 0, "lookup": 0, "create": 0, "other": 0, "429": 0}
    for request in emulator.admin("GET", "/stats")["requests"]:
        endpoint = request["endpoint"]
        if request["status"] == 429:
            kinds["429"] += 1
        if endpoint.startswith("GET ") and endpoint.endswith("/stats/{id}"):
            kinds["probe"] += 1
        elif endpoint.endswith("GET /account") or endpoint.endswith("/account"):
            kinds["account"] += 1
        elif endpoint.startswith("GET ") and endpoint.endswith("/links"):
            kinds["lookup"] += 1
        elif endpoint.startswith("POST ") and endpoint.endswith("/links"):
            kinds["create"] += 1
        else:
            kinds["other"] += 1
    kinds["total"] = len(emulator.admin("GET", "/stats")["requests"])
    return kinds


def measure(links: int, root: str | None, keep: bool = False) -> dict[str, dict]:
    import airflow

    if airflow.__version__.startswith("2."):
        raise SystemExit("benchmarks.mapped_launch needs Airflow 3 (LocalExecutor on SQLite)")
    home = Path(tempfile.mkdtemp(prefix="linkstats-bench-launch-"))
    (home / "dags").mkdir()
    (home / "dags" / "bench_mapped_launch.py").write_text(DAG_FILE)
    results: dict[str, dict] = {}
    with contextlib.ExitStack() as stack:
        emulators = {
            generation: stack.enter_context(
                EmulatorProcess(("--api-version", generation, "--rate-limit", "60", "--rate-limit-window", "60"))
            )
            for generation in GENERATIONS
        }
        api_port = free_port()
        processes = Processes(home, deployment_env(home, api_port, emulators, links, root))
        started = time.monotonic()
        processes.run("db", "migrate")
        for emulator in emulators.values():
            emulator.reset_stats()
        try:
            processes.start("api-server", "api-server", "--port", str(api_port), "--host", "127.0.0.1")
            processes.start("dag-processor", "dag-processor")
            _wait_for_api(f"http://127.0.0.1:{api_port}/api/v2/version", processes)
            processes.start("scheduler", "scheduler")
            deadline = time.monotonic() + RUN_TIMEOUT
            wanted = {f"bench_launch_{g}" for g in GENERATIONS}
            while True:
                processes.check()
                states = dag_run_states(home)
                if all(states.get(dag_id) in ("success", "failed") for dag_id in wanted):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the launches did not end in {RUN_TIMEOUT:.0f} s: {states}")
                time.sleep(2)
        finally:
            processes.stop()
        took = time.monotonic() - started
        for generation, emulator in emulators.items():
            dag_id = f"bench_launch_{generation}"
            arrived = what_arrived(emulator)
            status, body = emulator.request("GET", "/public/api/v1/links?per_page=100")
            created = len(body.get("data", [])) if isinstance(body, dict) else None
            results[generation] = {
                "run": states[dag_id],
                "tasks": task_states(home, dag_id),
                "requests": arrived,
                "per_link": arrived["total"] / links,
                "links_created": created,
                "seconds": round(took, 1),
            }
    if keep:
        print(f"The deployment's home is kept: {home}", file=sys.stderr)
    elif all(result["run"] == "success" for result in results.values()):
        shutil.rmtree(home, ignore_errors=True)
    else:
        print(f"A launch failed; the deployment's home is kept: {home}", file=sys.stderr)
        for path in sorted((home / "logs").rglob("*.log")):
            text = path.read_text(errors="replace")
            if '"level":"error"' in text or "Traceback" in text:
                print(f"--- {path.relative_to(home)}\n{text[-2500:]}", file=sys.stderr)
                break
    return results


def _wait_for_api(url: str, processes: Processes, timeout: float = 180) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        processes.check()
        with contextlib.suppress(requests.RequestException):
            if requests.get(url, timeout=5).status_code == 200:
                return
        time.sleep(0.5)
    raise RuntimeError(f"the api-server did not answer {url} in {timeout:.0f} s")


def rows(results: dict[str, dict], links: int, label: str) -> list[dict]:
    out = []
    for generation, result in results.items():
        r = result["requests"]
        what = (
            f"{r['probe']} probes, {r['account']} account reads, {r['lookup']} alias look-ups, "
            f"{r['create']} creates, {r['other']} other; {r['429']} answered 429"
        )
        met = result["run"] == "success" and result["per_link"] <= GOAL and result["links_created"] == links
        out.append(
            {
                "what": f"mapped launch of {links} links, phpShort {generation} ({label}): {r['total']} requests "
                f"({what}); run {result['run']}, {result['links_created']} links",
                "figure": f"{result['per_link']:.2f} per link",
                "target": f"<= {GOAL}",
                "met": "met" if met else "not met",
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mapped_launch", description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=20)
    parser.add_argument("--provider-root", default=None, help="run the deployment with the provider found here")
    parser.add_argument("--label", default=None, help="what the figures are of (default: this checkout, or the root)")
    parser.add_argument("--json", default=None, help="write the rows to this file as well")
    parser.add_argument("--keep-home", action="store_true", help="keep the deployment's home (logs, database)")
    args = parser.parse_args(argv)
    label = args.label or (f"provider from {args.provider_root}" if args.provider_root else "this checkout")
    results = measure(args.links, args.provider_root, args.keep_home)
    table = rows(results, args.links, label)
    print("| Measurement | Figure | Target | Met |\n|---|---|---|---|")
    for row in table:
        print(f"| {row['what']} | {row['figure']} | {row['target']} | {row['met']} |")
    for generation, result in results.items():
        print(f"phpShort {generation}: tasks {result['tasks']}, {result['seconds']} s in all")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": table, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
