"""``make bench``: the provider against raw requests and the HTTP provider, one table, one run.

    python -m benchmarks.run [--quick] [--full] [--no-write]

Starts the emulator in a subprocess on a free port (its CPU is not the client's), seeds it over
its API, measures, and prints one Markdown table, which it also writes to benchmarks/RESULTS.md
with the machine and the date. ``--quick`` repeats less (about two minutes; figures noisier);
``--full`` also times all 2,000 sequential deletes instead of extrapolating from 200 (adds ~40 s).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from importlib import metadata
from pathlib import Path

from benchmarks.common import EmulatorProcess, Row, airflow_env, connection_env

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
TOTAL_LINKS = 10_000
READ_CALLS = 2_000
BULK = 2_000
SEQUENTIAL_SAMPLE = 200
RATE_LIMITED_BULK = 300  # deleted under the emulator's 60-a-minute limit
LEARNED_BULK = 60  # deleted under a 20-per-10-s limit the hook is not told (issue 20)
EXPIRING = 1_000  # the newest links expire by date, for the sensor
DAY = 86_400
FLEET_TIMEOUT = 720  # four fleets of 1,000 triggers (the rate-limited one waits on the limiter), then 5,000 shared
END_TIMES_TIMEOUT = 900  # two generations of 20 waits ending 1-2 minutes ahead (twice with a polling root)
CLEANUP_TIMEOUT = 2400  # 110,000 + 20,000 + 20,000 links deleted, each run seeded fresh, and 500 at the limit
LAUNCH_TIMEOUT = 900  # a real Airflow 3 deployment starting, then 40 mapped task processes
WAREHOUSE_TIMEOUT = 600  # 10,000 links seeded, 7 daily loads of 600 requests each


def machine() -> list[str]:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    return [
        f"- Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}, Airflow {version('apache-airflow')}, "
        f"apache-airflow-providers-http {version('apache-airflow-providers-http')}, "
        f"requests {version('requests')}, airflow-provider-linkstats {version('airflow-provider-linkstats')}",
        f"- Load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
    ]


def trigger_fleet(env: dict[str, str]) -> tuple[str, str, list[Row]]:
    """Run benchmarks/trigger_fleet.py (1,000 deferred sensors; shared poller vs HttpSensorTrigger).

    Returns its status, its printed table and one row per goal of issue 13 for the main table.
    """
    goals_file = Path(tempfile.mkstemp(prefix="linkstats-fleet-goals-", suffix=".json")[1])
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.trigger_fleet", "--json", str(goals_file)],
            env={**os.environ, **env},
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=FLEET_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return "timeout", f"benchmarks/trigger_fleet.py ran over {FLEET_TIMEOUT} s and was stopped", []
    took = time.perf_counter() - start
    if done.returncode != 0:
        return "failed", f"exit {done.returncode} after {took:.0f} s:\n{(done.stderr or done.stdout)[-1500:]}", []
    goals = json.loads(goals_file.read_text() or "[]")
    goals_file.unlink(missing_ok=True)
    rows = [Row("4. sensor", g["what"], g["figure"], g["ratio"], g["target"], g["met"]) for g in goals]
    return "ok", done.stdout.strip() + f"\n(ran in {took:.0f} s)", rows


def end_times(env: dict[str, str]) -> list[Row]:
    """Run benchmarks/end_times.py (waits that know when a link ends, next to polling).

    The polling side of (a) needs a checkout of the provider before end times were known:
    ``LINKSTATS_BENCH_POLLING_ROOT`` (e.g. a worktree of an older commit); without it only ours runs.
    """
    rows_file = Path(tempfile.mkstemp(prefix="linkstats-end-times-", suffix=".json")[1])
    command = [sys.executable, "-m", "benchmarks.end_times", "--json", str(rows_file)]
    if os.environ.get("LINKSTATS_BENCH_POLLING_ROOT"):
        command += ["--polling-root", os.environ["LINKSTATS_BENCH_POLLING_ROOT"]]
    try:
        done = subprocess.run(
            command,
            env={**os.environ, **env},
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=END_TIMES_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return [Row("4. sensor", "waits that know their end (benchmarks/end_times.py)", "timeout")]
    if done.returncode != 0:
        return [
            Row("4. sensor", "waits that know their end (benchmarks/end_times.py)", f"failed: {done.stderr[-300:]}")
        ]
    rows = json.loads(rows_file.read_text() or "[]")
    rows_file.unlink(missing_ok=True)
    return [Row("4. sensor", r["what"], r["figure"], r["ratio"], r["target"], r["met"]) for r in rows]


def mapped_launch(env: dict[str, str]) -> list[Row]:
    """Run benchmarks/mapped_launch.py (20 mapped creates per phpShort generation in a real
    Airflow 3 deployment, every task instance a process of its own)."""
    rows_file = Path(tempfile.mkstemp(prefix="linkstats-launch-", suffix=".json")[1])
    what = "mapped launch of 20 links in a real deployment (benchmarks/mapped_launch.py)"
    command = [sys.executable, "-m", "benchmarks.mapped_launch", "--json", str(rows_file)]
    # The deployment is its own: not the benchmark's Airflow home (its processes read their own config).
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    child_env.pop("AIRFLOW_HOME", None)
    try:
        done = subprocess.run(
            command, env=child_env, cwd=HERE.parent, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return [Row("2. bulk", what, "timeout")]
    text = rows_file.read_text() if rows_file.exists() else ""
    rows_file.unlink(missing_ok=True)
    if done.returncode != 0 or not text:
        return [Row("2. bulk", what, f"failed: {done.stderr[-300:]}")]
    return [
        Row("2. bulk", r["what"], r["figure"], "", r["target"], "met" if r["met"] == "met" else "MISSED")
        for r in json.loads(text)["rows"]
    ]


def shared_store(window: float) -> list[Row]:
    """Run benchmarks/shared_store.py (a real redis-server; three hosts, then 20 pods, each a process)."""
    rows_file = Path(tempfile.mkstemp(prefix="linkstats-shared-", suffix=".json")[1])
    what = "many hosts through a shared Redis (benchmarks/shared_store.py)"
    if shutil.which("redis-server") is None:
        return [Row("8. many hosts", what, "skipped: redis-server is not installed")]
    command = [sys.executable, "-m", "benchmarks.shared_store", "--window", str(window), "--json", str(rows_file)]
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__LINKSTATS", "AIRFLOW_CONN_"))}
    try:
        done = subprocess.run(command, env=child_env, cwd=HERE.parent, capture_output=True, text=True, timeout=1200)
    except subprocess.TimeoutExpired:
        return [Row("8. many hosts", what, "timeout")]
    text = rows_file.read_text() if rows_file.exists() else ""
    rows_file.unlink(missing_ok=True)
    if done.returncode != 0 or not text:
        return [Row("8. many hosts", what, f"failed: {done.stderr[-300:]}")]
    return [Row(**r) for r in json.loads(text)["rows"]]


def cleanup(env: dict[str, str], quick: bool) -> list[Row]:
    """Run benchmarks/cleanup.py (the streaming cleanup at 10,000 and 100,000 links, 500 at 60 requests a
    minute, and the old example)."""
    rows_file = Path(tempfile.mkstemp(prefix="linkstats-cleanup-", suffix=".json")[1])
    sizes = "2000,10000" if quick else "10000,100000"
    command = [sys.executable, "-m", "benchmarks.cleanup", "--sizes", sizes, "--json", str(rows_file)]
    if quick:
        command += ["--old", "2000", "--live", "100", "--limited", "100"]  # about 2 min at the limit
    else:
        command += ["--limited", "500"]  # about 8.5 min at 60 requests a minute
    what = "streaming cleanup (benchmarks/cleanup.py)"
    try:
        done = subprocess.run(
            command, env={**os.environ, **env}, cwd=HERE.parent, capture_output=True, text=True, timeout=CLEANUP_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return [Row("6. cleanup", what, "timeout")]
    rows = json.loads(rows_file.read_text() or "[]")
    rows_file.unlink(missing_ok=True)
    if not rows:
        return [Row("6. cleanup", what, f"failed: {done.stderr[-300:]}")]
    return [Row(r["section"], r["what"], r["figure"], r["ratio"], r["target"], r["verdict"]) for r in rows]


def warehouse(env: dict[str, str]) -> list[Row]:
    """Run benchmarks/warehouse.py (7 daily loads of 10,000 links, 500 clicked a day, into SQLite)."""
    rows_file = Path(tempfile.mkstemp(prefix="linkstats-warehouse-", suffix=".json")[1])
    what = "daily statistics into a warehouse (benchmarks/warehouse.py)"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.warehouse", "--json", str(rows_file)],
            env={**os.environ, **env},
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=WAREHOUSE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return [Row("7. warehouse", what, "timeout")]
    rows = json.loads(rows_file.read_text() or "[]")
    rows_file.unlink(missing_ok=True)
    if not rows:
        return [Row("7. warehouse", what, f"failed: {done.stderr[-300:]}")]
    return [Row(r["section"], r["what"], r["figure"], r["ratio"], r["target"], r["verdict"]) for r in rows]


NOTES = """
How to read it:

- 1: every way returns the record as a dict (status checked, JSON parsed). The floor is what
  anyone writes, a reused `requests.Session()`; its default `trust_env=True` looks up proxy
  settings on every request, which our transport turns off (so the environment's proxies never
  see the key), hence the second, stricter floor. `HttpHook.run` fetches the connection and
  builds a new Session on every call (it reuses its adapter's TCP connection).
- 2: sequential deletes are timed on 200 links and multiplied up, unless `--full`. Ideal =
  N x latency / max_workers; the rest is client CPU under the GIL (requests is synchronous)
  on a 2-core machine shared with the emulator.
- 4: requests are counted by the emulator; `poke()` is called directly, in poke mode.
- 6: each cleanup runs in a child process of its own (the task's process: its peak RSS is the
  task's, Airflow and the provider imported first, shown in brackets), against a fresh emulator
  without rate limit seeded through its admin API (and one at 60 requests a minute per client
  address); requests are counted by the emulator, against the minimum N deletes + ceil(N/100)
  pages (the confirming read of each page before its deletes costs ceil(N/100) more).
- 7: the emulator's clock plays 7 days; each day 500 random links of 10,000 get 1-3 clicks, then the
  day's load runs in the benchmark's process (peak RSS: Airflow and the provider imported first);
  requests are counted by the emulator. The naive loop asks every link's statistics every day.
- 5: each sample is two fresh interpreters, one per side, each importing `airflow.sdk` and then
  the side's modules with plain imports; bytecode caches warm on both sides (a pip install
  compiles them).
"""


def table(rows: list[Row]) -> str:
    lines = ["| # | Measurement | Figure | Ratio | Target | Met |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row.section} | {row.what} | {row.figure} | {row.ratio} | {row.target} | {row.verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (figures noisier)")
    parser.add_argument("--full", action="store_true", help="time all 2,000 sequential deletes (no extrapolation)")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {RESULTS.name}")
    parser.add_argument("--no-fleet", action="store_true", help="skip the 1,000-trigger benchmark")
    parser.add_argument("--no-cleanup", action="store_true", help="skip the cleanup at 100,000 links")
    parser.add_argument(
        "--no-deployment", action="store_true", help="skip the mapped launch in a real Airflow 3 deployment"
    )
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore", category=DeprecationWarning)  # one-line notices in the table
    own_home = "LINKSTATS_BENCH_AIRFLOW_HOME" not in os.environ
    env = airflow_env()
    os.environ.update(env)  # before anything imports Airflow
    try:
        return measure(args, env)
    finally:
        if own_home:
            shutil.rmtree(env["AIRFLOW_HOME"], ignore_errors=True)


def measure(args: argparse.Namespace, env: dict[str, str]) -> int:
    header = machine()
    started = time.perf_counter()
    rows: list[Row] = []

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f} s] {message}", file=sys.stderr, flush=True)

    from benchmarks import bulk, bulk_create, listing, parse_cost, per_call, rate_limited_bulk, sensor_cost

    with EmulatorProcess() as emu:
        os.environ.update(connection_env(emu.url))
        progress(f"emulator at {emu.url}; seeding {TOTAL_LINKS:,} links")
        expires_on = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)).strftime("%Y-%m-%d")
        expiry = {"expiration_date": expires_on, "expiration_time": "12:00"}
        first_expiring = TOTAL_LINKS - EXPIRING
        records = emu.seed_links(
            TOTAL_LINKS,
            expiring=lambda i: expiry if i >= first_expiring else {},
        )
        ids = [r["id"] for r in records]

        progress("1. per-call overhead")
        rows += per_call.run(emu, ids[:READ_CALLS], calls=READ_CALLS, repeats=1 if args.quick else 3)

        progress("3. listing")
        rows += listing.run(emu, TOTAL_LINKS, repeats=1 if args.quick else 2)

        progress("4. sensor")
        # Seeding threads interleave the ids; the alias bench-<index> says which were seeded expiring.
        expiring = [r for r in records if int(r["alias"].rsplit("-", 1)[1]) >= first_expiring]
        rows += sensor_cost.run(emu, TOTAL_LINKS, expiring, expire_after=3 * DAY)

        progress("2. bulk delete with 20 ms latency")
        sequential = BULK if args.full else SEQUENTIAL_SAMPLE
        rows += bulk.run(emu, ids[:BULK], ids[BULK : BULK + sequential + 1])

        window = 6.0 if args.quick else 60.0
        ideal = RATE_LIMITED_BULK / 60 * window
        progress(f"2. bulk delete of {RATE_LIMITED_BULK} links at 60 requests per {window:g} s (about {ideal:.0f} s)")
        spare = ids[BULK + sequential + 1 : BULK + sequential + 1 + RATE_LIMITED_BULK]
        rows += rate_limited_bulk.run(emu, spare, window=window)
        progress(f"2. bulk delete of {LEARNED_BULK} links at 20 requests per 10 s, the window learned (about 30 s)")
        first = BULK + sequential + 1 + RATE_LIMITED_BULK
        rows += rate_limited_bulk.run_learned(emu, ids[first : first + LEARNED_BULK])
        launch = 200 if args.quick else bulk_create.N
        about = 2 * launch / bulk_create.LIMIT * bulk_create.WINDOW
        progress(
            f"2. bulk create of {launch:,} links at 60 requests per {bulk_create.WINDOW:g} s, then the same killed "
            f"at half and retried (about {about:.0f} s)"
        )
        rows += bulk_create.run(emu, launch, window=bulk_create.WINDOW, result_dir=env["AIRFLOW_HOME"])
        server_cpu = emu.cpu_seconds()

    fleet_status, fleet_output = ("skipped", "--no-fleet") if args.no_fleet else (None, None)
    fleet_rows: list[Row] = []
    if fleet_status is None:
        progress("4. 1,000 triggers (benchmarks/trigger_fleet.py)")
        fleet_status, fleet_output, fleet_rows = trigger_fleet(env)
    rows.append(
        Row(
            "4. sensor",
            "1,000 deferred sensors: shared poller, one poller each, HttpSensorTrigger (benchmarks/trigger_fleet.py)",
            fleet_status if fleet_status != "ok" else "see below",
        )
    )
    rows += fleet_rows

    if not args.no_fleet:
        progress("4. waits that know their end (benchmarks/end_times.py, about 5 minutes)")
        rows += end_times(env)

    if not args.no_deployment:
        progress("2. mapped launch of 20 links per generation in a deployment (benchmarks/mapped_launch.py, 3-8 min)")
        rows += mapped_launch(env)

    if not args.no_cleanup:
        progress("6. streaming cleanup of 10,000 and 100,000 links (benchmarks/cleanup.py, a few minutes)")
        rows += cleanup(env, args.quick)

    progress("8. many hosts, one budget through Redis (benchmarks/shared_store.py, about 8 minutes)")
    rows += shared_store(window=6.0 if args.quick else 60.0)

    progress("7. daily statistics into a warehouse (benchmarks/warehouse.py, about a minute)")
    rows += warehouse(env)

    progress("5. DAG parse cost")
    rows += parse_cost.run(env, samples=7 if args.quick else 15)  # a loaded machine moves single samples by 2x
    rows.sort(key=lambda r: r.section[:2])

    header.append(
        f"- Load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"run took {time.perf_counter() - started:.0f} s; emulator CPU {server_cpu:.1f} s"
        + (" (--quick)" if args.quick else "")
        + (" (--full)" if args.full else "")
    )
    body = "\n".join(header) + "\n\n" + table(rows) + "\n"
    if fleet_output and fleet_status == "ok":
        body += f"\n### 1,000 deferred sensors (`python -m benchmarks.trigger_fleet`)\n\n```\n{fleet_output}\n```\n"
    elif fleet_output:
        body += f"\n1,000 triggers: {fleet_status}: {fleet_output}\n"
    body += NOTES
    print(body)
    if not args.no_write:
        RESULTS.write_text(
            "# Benchmark results\n\nWritten by `make bench` (`python -m benchmarks.run`); see README, Benchmarks.\n\n"
            + body
        )
        progress(f"wrote {RESULTS.relative_to(HERE.parent)}")
    for row in rows:
        if row.verdict == "MISSED":
            progress(f"target MISSED: {row.what}: {row.figure} {row.ratio} (target {row.target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
