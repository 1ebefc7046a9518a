"""``python -m e2e`` (``make e2e``): see the package docstring."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

from e2e import deployment, handover, scenarios, services
from e2e.procs import ProcessGroups, free_port, outside_loopback
from e2e.recorder import Recorder, endpoint
from e2e.summary import table

OUT = deployment.REPO / "e2e-output"


def say(message: str) -> None:
    print(f"[e2e {time.strftime('%H:%M:%S')}] {message}", flush=True)


def add_connections(api: deployment.AirflowApi, url: str, api_key: str) -> None:
    """Both default connections, through the REST API (stored encrypted, the key never on a command line)."""
    extra = json.dumps({"timeout": 30, "default_domain_id": 1})
    for conn_id, conn_type in (
        ("linkstats_links_default", "linkstats_links"),
        ("linkstats_analytics_default", "linkstats_analytics"),
    ):
        api.call(
            "POST",
            "/connections",
            json={"connection_id": conn_id, "conn_type": conn_type, "host": url, "password": api_key, "extra": extra},
        )


def request_table(emulator: scenarios.Emulator, recorder: Recorder) -> str:
    """Per endpoint: what the emulator saw from every client (by status when its stats carry it),
    and the answers Airflow's tasks got through the recording proxy."""
    seen: dict[str, Counter] = {}
    for entry in emulator.admin("GET", "/stats")["requests"]:
        status = entry.get("status", "all")
        seen.setdefault(endpoint(entry["method"], entry["path"]), Counter())[
            status if status is not None else "dropped"
        ] += 1
    via_airflow = recorder.counts()
    rows = []
    for name in sorted(set(seen) | {ep for ep, _ in via_airflow}):
        emulator_side = ", ".join(f"{s}: {n}" for s, n in sorted(seen.get(name, Counter()).items(), key=str))
        statuses = sorted((status, n) for (ep, status), n in via_airflow.items() if ep == name)
        rows.append([name, emulator_side or "-", ", ".join(f"{s}: {n}" for s, n in statuses) or "-"])
    return table(["endpoint", "emulator (all clients)", "from Airflow, by status"], rows)


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    signal.signal(signal.SIGTERM, _terminated)  # `timeout` and CI cancellations still tear down
    started = time.monotonic()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    logs = OUT / "logs"
    logs.mkdir()
    # Private to this user (0700): PostgreSQL, which may run as another user, gets a directory of its own.
    root = Path(tempfile.mkdtemp(prefix="linkstats-e2e-"))
    pg_home: Path | None = None
    postgres = None
    groups = ProcessGroups()
    recorder: Recorder | None = None
    emulator: scenarios.Emulator | None = None
    results: list[scenarios.RunResult] = []
    kill: handover.TriggererKill | None = None
    kill_tables = ""
    ui_ok, problems = False, []
    try:
        say(f"temp dir {root}; logs in {logs.relative_to(deployment.REPO)}/")
        postgres, database, pg_home = services.start_postgres(groups)
        say(f"PostgreSQL 15 on 127.0.0.1:{postgres.port} (private cluster in {pg_home}, pid {postgres.pid})")
        redis = services.start_redis(groups, root, logs)
        say(f"Redis on 127.0.0.1:{redis.port} (no persistence)")
        api_key = secrets.token_urlsafe(32)
        emu_proc, limits = services.start_emulator(groups, logs, api_key)
        emulator = scenarios.Emulator(f"http://127.0.0.1:{emu_proc.port}", api_key)
        recorder = Recorder(emu_proc.port).start()
        say(f"emulator on {emulator.url}, rate limits: {limits}; recording proxy on 127.0.0.1:{recorder.port}")

        old_links, live_links = scenarios.seed_old_expired(
            emulator, scenarios.CLEANUP_LINKS, say, live=scenarios.CLEANUP_LIVE
        )

        api_port = free_port()
        env = deployment.airflow_env(root / "airflow-home", database, redis.port, api_port, logs / "tasks")
        say("airflow db migrate (PostgreSQL)")
        deployment.migrate(env, logs)
        procs = deployment.start_airflow(groups, env, logs, api_port)
        api = deployment.AirflowApi(f"http://127.0.0.1:{api_port}", root / "airflow-home")
        api.login()
        say(f"Airflow api-server on 127.0.0.1:{api_port}; scheduler, dag-processor, triggerer-1, 2 Celery workers")
        add_connections(api, f"http://127.0.0.1:{recorder.port}", api_key)
        for dag_id in ("linkstats_campaign_launch", "linkstats_cleanup_expired", handover.EXPIRY_DAG):
            api.wait_for_dag(dag_id)

        problems += [f"listening beyond 127.0.0.1: {where}" for where in outside_loopback(groups)]

        # The worker kill first: the old links are gone before the expiry watcher starts.
        workers = {name: proc for name, proc in procs.items() if name.startswith("worker-")}
        results.append(
            scenarios.cleanup_with_worker_kill(api, emulator, recorder, workers, old_links, say, live_links)
        )
        say(f"cleanup: {results[-1].state} in {results[-1].seconds:.0f} s {results[-1].problems or ''}")

        kill = handover.TriggererKill(
            api,
            emulator,
            recorder,
            handover.Metadata(database),
            procs["triggerer-1"],
            lambda: deployment.start_triggerer(groups, env, logs, "triggerer-2"),
            say,
        )
        kill.prepare()
        api.set_paused("linkstats_campaign_launch", False)
        campaign = scenarios.campaign(api, emulator, say, during_wait=kill.during_wait)
        results.append(campaign)
        results.append(kill.result(campaign))
        say(f"campaign: {campaign.state} in {campaign.seconds:.0f} s {campaign.problems or ''}")
        say(f"event-driven cleanup: {results[-1].state} {results[-1].problems or ''}")

        if os.environ.get("LINKSTATS_E2E_SKIP_UI") != "1":
            from e2e import ui

            connection_host = f"http://127.0.0.1:{recorder.port}"
            ui_ok = ui.check(api, api.base, campaign, emulator.url, connection_host, api_key, OUT, say)
        else:
            say("UI checks skipped (LINKSTATS_E2E_SKIP_UI=1)")
    except BaseException:  # KeyboardInterrupt and SIGTERM included: the teardown must still run
        traceback.print_exc()
        problems.append("the run stopped on an exception (above)")
    finally:
        try:
            wide = outside_loopback(groups)
            if wide:
                problems.append("listening beyond 127.0.0.1: " + ", ".join(wide))
        except Exception as error:  # the summary must not stop the teardown
            problems.append(f"no listening-socket check: {error!r}")
        if kill is not None:
            try:
                kill_tables = kill.tables()
            except Exception as error:  # the summary must not stop the teardown
                kill_tables = ""
                problems.append(f"no triggerer-kill tables: {error!r}")
        if recorder is not None and emulator is not None and emu_proc.alive():
            try:
                print("\nEmulator requests (all clients) and the answers Airflow's tasks got, by endpoint:")
                print(request_table(emulator, recorder))
                throttled = sum(n for (_, status), n in recorder.counts().items() if status == 429)
                print(f"429 answers to Airflow's tasks (one budget shared through Redis): {throttled}")
                if throttled:  # the workers and triggerers pace by one budget: the service never says no
                    problems.append(f"{throttled} answers 429 to Airflow's tasks despite the shared budget")
            except Exception as error:  # the summary must not stop the teardown
                problems.append(f"no request table: {error!r}")
        say("teardown: every process group, newest first")
        sys.stdout.flush()
        if recorder is not None:
            recorder.stop()
        problems += groups.stop_all()
        if postgres is not None:
            services.keep_postgres_log(postgres, logs)
        if pg_home is not None:
            shutil.rmtree(pg_home, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)

    print("\nProcesses:")
    print(
        table(
            ["name", "pid", "pgid", "port", "ended"],
            [[p.name, p.pid, p.pgid, p.port or "-", p.ended] for p in groups.procs]
            + ([["recording proxy (thread)", os.getpid(), "-", recorder.port, "stopped"]] if recorder else []),
        )
    )
    print("\nRuns:")
    print(
        table(
            ["dag", "run", "state", "duration"], [[r.dag_id, r.run_id, r.state, f"{r.seconds:.1f} s"] for r in results]
        )
    )
    for r in results:
        for note in [*r.notes, *(f"PROBLEM: {p}" for p in r.problems)]:
            if note:
                print(f"  {r.dag_id}: {note}")
    if kill_tables:
        print("\n" + kill_tables)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    skipped_ui = os.environ.get("LINKSTATS_E2E_SKIP_UI") == "1"
    ok = len(results) == 3 and all(r.ok for r in results) and (ui_ok or skipped_ui) and not problems
    say(f"{'PASSED' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
