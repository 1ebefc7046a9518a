"""The two runs: the campaign DAG with simulated visitors, and a cleanup that loses a worker mid-way."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pendulum
import psutil
import requests

from e2e.deployment import HEARTBEAT_TIMEOUT, AirflowApi
from e2e.procs import Proc, wait_until
from e2e.recorder import Recorder

API = "/public/api/v1"
VISITORS = [  # (X-Country, User-Agent, Accept-Language), as in `make demo`
    ("US", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)", "en-US"),
    ("FR", "Mozilla/5.0 (Linux; Android 14; Pixel 8)", "fr-FR"),
    ("DE", "Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "de-DE"),
    ("GB", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0)", "en-GB"),
]
CLEANUP_LINKS = 2000
CLEANUP_PREFIX = "e2e-old"
CLEANUP_LIVE = 2000  # live links as old as those: the cleanup must keep every one (half of all: its default ceiling)
LIVE_PREFIX = "e2e-live"


class Emulator:
    """This script's own client of the emulator (seeding, visitors, checks), patient with 429s."""

    def __init__(self, url: str, api_key: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {api_key}", "Accept": "application/json"})

    def api(self, method: str, path: str, **kwargs) -> dict:
        for _ in range(30):
            answer = self.session.request(method, f"{self.url}{API}{path}", timeout=30, **kwargs)
            if answer.status_code != 429:
                answer.raise_for_status()
                return answer.json()
            wait = float(answer.headers.get("Retry-After") or 1)
            if wait > 60:  # more than one real window: a clock moved back, not a busy minute
                raise RuntimeError(f"{method} {path}: rate limited for {wait:.0f} s")
            time.sleep(wait)
        raise RuntimeError(f"{method} {path}: still rate limited after 30 tries")

    def links(self, **filters: object) -> list[dict]:
        found, page = [], 1
        while True:
            body = self.api("GET", "/links", params={**filters, "per_page": 100, "page": page})
            found += body["data"]
            if not body["data"] or body["meta"]["current_page"] >= body["meta"]["last_page"]:
                return found
            page += 1

    def click(self, alias: str, visitor: tuple[str, str, str]) -> int:
        country, agent, language = visitor
        headers = {"X-Country": country, "User-Agent": agent, "Accept-Language": language}
        return requests.get(f"{self.url}/{alias}", headers=headers, allow_redirects=False, timeout=10).status_code

    def admin(self, method: str, path: str, **body: object) -> dict:
        answer = requests.request(method, f"{self.url}/__emulator__{path}", json=body or None, timeout=30)
        answer.raise_for_status()
        return answer.json()


@dataclass
class RunResult:
    dag_id: str
    run_id: str = ""
    state: str = "not run"
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.state == "success" and not self.problems


def _duration(run: dict) -> float:
    if run.get("start_date") and run.get("end_date"):
        return (pendulum.parse(run["end_date"]) - pendulum.parse(run["start_date"])).total_seconds()
    return 0.0


def campaign(api: AirflowApi, emulator: Emulator, say, during_wait=None) -> RunResult:
    """Campaign links clicked through the emulator's redirect until they expire; the clock moves for the A/B one.

    ``during_wait(run_id, result)``, when given, runs first (the triggerer kill): the visitors come
    only once it has returned, so the links expire, and the deferred wait ends, after it.
    """
    result = RunResult("linkstats_campaign_launch")
    name = "e2e-" + pendulum.now("UTC").format("MMDDHHmmss")
    stop, come = threading.Event(), threading.Event()
    clicks = [0]

    def visitors() -> None:
        moved = False
        come.wait()
        while not stop.is_set():
            active = emulator.links(search=name, search_by="alias", status=1)
            by_clicks = [link for link in active if link.get("expiration_clicks")]
            for link in by_clicks:
                emulator.click(link["alias"], random.choice(VISITORS))
                clicks[0] += 1
            if active and not by_clicks and not moved:
                say(f"visitors: {clicks[0]} clicks, click-limited links expired; moving the emulator's clock 2 h on")
                emulator.admin("POST", "/clock", advance=2 * 3600)
                moved = True
            stop.wait(1.0)

    clicker = threading.Thread(target=visitors, name="visitors", daemon=True)
    started = time.monotonic()
    # The A/B link ends in a minute of real time: deferred waits sleep until an end time on the
    # triggerer's clock (moving the emulator's clock alone no longer ends the wait).
    result.run_id = api.trigger(result.dag_id, {"campaign": name, "expire_after_clicks": 12, "expire_after_minutes": 1})
    say(f"triggered {result.dag_id} ({result.run_id}), campaign {name}")
    clicker.start()
    try:
        if during_wait is not None:
            try:
                during_wait(result.run_id, result)
            except Exception as error:  # the run still gets its visitors, and the teardown still runs
                result.problems.append(f"during the wait: {error!r}")
                say(f"during the wait: {error!r}")
        come.set()
        run = api.wait_for_run(result.dag_id, result.run_id, timeout=900)
    finally:
        come.set()
        # The clock stays 2 h ahead: the emulator's rate-limit windows run on its clock, and moving
        # it back would leave every client waiting out windows that end 2 h in its future.
        stop.set()
        clicker.join(timeout=30)
    result.state, result.seconds = run["state"], _duration(run) or time.monotonic() - started
    states = api.task_states(result.dag_id, result.run_id)
    failed = {task: state for task, state in states.items() if state != "success"}
    if failed:
        result.problems.append(f"tasks not successful: {failed}")
    left = emulator.links(search=name, search_by="alias")
    if left:
        result.problems.append(f"{len(left)} campaign links left behind")
    result.notes.append(f"{clicks[0]} visitor clicks; tasks: {len(states)} successful" if not failed else "")
    result.campaign = name  # type: ignore[attr-defined]
    return result


def seed_old_expired(emulator: Emulator, count: int, say, live: int = 0) -> tuple[list[int], list[int]]:
    """``count`` links created 40 days ago (emulator clock), each expired by its one allowed click, and
    ``live`` links created then too that never expire. Returns both lists of ids.

    Done first, before any other client uses the emulator: the clock then only moves forward (back
    to now), which rate-limit windows counted on the emulator's clock survive. Seeded in one step
    through the emulator's admin API when it has the route, else link by link through the API.
    """
    emulator.admin("POST", "/clock", now=pendulum.now("UTC").subtract(days=40).isoformat())
    started = time.monotonic()
    try:
        try:
            old = _seed_many(emulator, count, CLEANUP_PREFIX, expiration_clicks=1, clicks=1)
            kept = _seed_many(emulator, live, LIVE_PREFIX) if live else []
        except requests.HTTPError as error:
            if error.response is None or error.response.status_code not in (404, 405):
                raise
            old, kept = _seed_over_the_api(emulator, count, live)
    finally:
        emulator.admin("POST", "/clock", reset=True)
    say(
        f"seeded {len(old)} expired and {len(kept)} live links created 40 days ago in "
        f"{time.monotonic() - started:.1f} s"
    )
    return old, kept


def _seed_many(emulator: Emulator, count: int, prefix: str, **fields: object) -> list[int]:
    url = f"https://example.com/{prefix}"
    seeded = emulator.admin("POST", "/links", count=count, alias_prefix=f"{prefix}-", fields={"url": url, **fields})
    return list(range(seeded["first_id"], seeded["last_id"] + 1))


def _seed_over_the_api(emulator: Emulator, count: int, live: int) -> tuple[list[int], list[int]]:
    def one(index: int) -> int:
        expired = index < count
        prefix = CLEANUP_PREFIX if expired else LIVE_PREFIX
        data = {"url": f"https://example.com/{prefix}/{index}", "alias": f"{prefix}-{index}", "domain_id": 1}
        if expired:
            data["expiration_clicks"] = 1
        link = emulator.api("POST", "/links", data=data)["data"]
        if expired:
            emulator.click(link["alias"], VISITORS[index % len(VISITORS)])
        return int(link["id"])

    pool = ThreadPoolExecutor(max_workers=4)
    try:
        ids = list(pool.map(one, range(count + live)))
    finally:
        pool.shutdown(cancel_futures=True)  # on an error or Ctrl+C, nothing more is sent
    return ids[:count], ids[count:]


def delete_statuses(emulator: Emulator, recorder: Recorder) -> tuple[str, dict[str, list[int]]]:
    """Every DELETE's answers by path: from the emulator's own stats when its entries carry the
    status (newer emulators), else from the recording proxy."""
    entries = emulator.admin("GET", "/stats")["requests"]
    if entries and all("status" in entry for entry in entries):
        found: dict[str, list[int]] = {}
        for entry in entries:
            if entry["method"] == "DELETE":
                found.setdefault(entry["path"], []).append(entry["status"])
        return "the emulator's stats", found
    return "the recording proxy", recorder.statuses_by_path("DELETE")


def descendants(proc: Proc) -> list[psutil.Process]:
    try:
        root = psutil.Process(proc.pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def worker_of(pid: int | None, workers: dict[str, Proc]) -> str | None:
    """Which Celery worker's process tree holds ``pid`` (the task runner the TI reports)."""
    if not pid:
        return None
    for name, proc in workers.items():
        if any(p.pid == pid for p in descendants(proc)):
            return name
    return None


def kill_worker(proc: Proc) -> list[int]:
    """SIGKILL a worker (or a triggerer) the hard way: its own group (Celery main and pool, task
    supervisors; the triggerer and its trigger runner) and the groups of its descendants (the
    supervisor gives each task runner a group of its own)."""
    groups = {proc.pgid}
    for member in descendants(proc):
        try:
            groups.add(os.getpgid(member.pid))
        except ProcessLookupError:
            pass
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.ended = "SIGKILL by the test"
    return sorted(g for g in groups if g)


def daily_cleanup_run(api: AirflowApi, dag_id: str = "linkstats_cleanup_expired") -> str:
    """Unpause the @daily cleanup: the scheduler creates its run for the last day at once (catchup off,
    one active run at most), and no other before tomorrow. Returns that run's id."""
    api.set_paused(dag_id, False)

    def scheduled() -> str | None:
        runs = api.call("GET", f"/dags/{dag_id}/dagRuns", params={"limit": 100})["dag_runs"]
        return next((run["dag_run_id"] for run in runs if run["run_type"] == "scheduled"), None)

    return wait_until(scheduled, 120, f"the scheduler to create {dag_id}'s daily run", 0.5)


def cleanup_with_worker_kill(
    api: AirflowApi,
    emulator: Emulator,
    recorder: Recorder,
    workers: dict[str, Proc],
    ids: list[int],
    say,
    live: list[int] = (),  # type: ignore[assignment]
) -> RunResult:
    """``ids``, ``live``: the old expired and the live links seeded by ``seed_old_expired``. The run is
    the DAG's daily one, created by the scheduler when the DAG is unpaused (its default
    ``older_than_days`` is 30): the streaming cleanup (``delete_old``) walks the listing and deletes
    as it goes; its retry after the kill walks it again."""
    result = RunResult("linkstats_cleanup_expired")
    paths = {f"{API}/links/{link_id}" for link_id in ids}

    def deleted_so_far() -> int:
        return sum(
            statuses.count(200) for path, statuses in recorder.statuses_by_path("DELETE").items() if path in paths
        )

    # Without rate limits the deletes take a few seconds, too short to aim a kill at: a latency on
    # every API answer stretches the cleanup (the rate limit, when there is one, does the rest).
    emulator.admin("POST", "/faults/latency", seconds=0.15)
    started = time.monotonic()
    result.run_id = daily_cleanup_run(api, result.dag_id)
    say(f"unpaused {result.dag_id}: the scheduler started its daily run ({result.run_id})")
    task, victim, runner_pid, at = "delete_old", None, None, 0
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        done = deleted_so_far()
        if done >= 50:
            ti = api.task_instance(result.dag_id, result.run_id, task)
            runner_pid = ti.get("pid")
            victim = worker_of(runner_pid, workers)
            if ti["state"] == "running" and victim:
                at = deleted_so_far()
                killed = kill_worker(workers[victim])
                # The latency only stretched the deletes to aim the kill: the retry's walk runs at the
                # rate limit alone (at 0.15 s an answer, its 1,950 deletes took about 5 minutes).
                emulator.admin("POST", "/faults/latency", seconds=0)
                say(
                    f"{task} try {ti['try_number']} runs in {victim} (task runner pid {runner_pid}); "
                    f"{at}/{len(ids)} links deleted: SIGKILL to process groups {killed}"
                )
                break
        if api.run(result.dag_id, result.run_id)["state"] in ("success", "failed"):
            break
        time.sleep(0.2)
    if victim is None:
        result.problems.append("the bulk delete was not caught running: no worker was killed")
    killed_at = time.monotonic()

    # The retry: which worker runs it (the other one, the only one left).
    retry_worker, retry_pid, retry_try = None, None, None
    while time.monotonic() < deadline and victim:
        ti = api.task_instance(result.dag_id, result.run_id, task)
        if ti["state"] == "running" and ti["try_number"] > 1 and ti.get("pid"):
            retry_worker = worker_of(ti["pid"], workers) or retry_worker
            retry_pid, retry_try = ti["pid"], ti["try_number"]
        if ti["state"] in ("success", "failed") or api.run(result.dag_id, result.run_id)["state"] in (
            "success",
            "failed",
        ):
            break
        time.sleep(0.3)
    run = api.wait_for_run(result.dag_id, result.run_id, timeout=max(60, deadline - time.monotonic()))
    emulator.admin("DELETE", "/faults")
    result.state, result.seconds = run["state"], _duration(run) or time.monotonic() - started

    tries = api.tries(result.dag_id, result.run_id, task)
    try_states = [(t["try_number"], t["state"]) for t in tries]
    if victim:
        detected = [t for t in tries if t["try_number"] == 1]
        result.notes.append(
            f"killed {victim} after {at}/{len(ids)} deletes; tries of {task}: {try_states}; "
            f"retry {retry_try} ran in {retry_worker or '?'} (pid {retry_pid}); "
            f"run finished {time.monotonic() - killed_at:.0f} s after the kill "
            f"(heartbeat timeout {HEARTBEAT_TIMEOUT} s)"
        )
        if len(tries) < 2 or (detected and detected[0]["state"] == "success"):
            result.problems.append(f"{task} was not retried after the kill: tries {try_states}")
        if retry_worker is None or retry_worker == victim:
            result.problems.append(f"the retry did not run on the surviving worker (seen: {retry_worker})")

    source, by_path = delete_statuses(emulator, recorder)
    answered_200 = {path: by_path.get(path, []).count(200) for path in paths}
    twice = sorted(path for path, n in answered_200.items() if n > 1)
    never = sorted(path for path, n in answered_200.items() if n == 0)
    total_200 = sum(answered_200.values())
    others = sorted({s for path in paths for s in by_path.get(path, []) if s != 200})
    if source != "the recording proxy":  # both saw every delete of these links: they must agree
        proxied = recorder.statuses_by_path("DELETE")
        differ = [p for p in paths if sorted(by_path.get(p, [])) != sorted(proxied.get(p, []))]
        if differ:
            result.problems.append(f"the emulator's stats and the proxy disagree on {len(differ)} links")
    left = [link for link in emulator.links(search=CLEANUP_PREFIX, search_by="alias")]
    kept = {int(link["id"]) for link in emulator.links(search=LIVE_PREFIX, search_by="alias")}
    live_paths = {f"{API}/links/{link_id}" for link_id in live}
    live_deletes = sum(len(by_path.get(path, [])) for path in live_paths)
    sent = sum(len(by_path.get(path, [])) for path in paths)
    result.notes.append(
        f"DELETE answered 200 {total_200} times for {len(ids)} links ({sent} sent; from {source}); other answers "
        f"to them: {others or 'none'}; links left: {len(left)}; live links kept: {len(kept)}/{len(live)}, "
        f"DELETEs sent to them: {live_deletes}"
    )
    if total_200 != len(ids) or twice or never:
        result.problems.append(f"DELETE 200s: {total_200} (deleted twice: {len(twice)}, never: {len(never)})")
    if left:
        result.problems.append(f"{len(left)} old links left behind")
    if kept != set(live) or live_deletes:
        result.problems.append(f"live links: {len(kept)}/{len(live)} kept, {live_deletes} DELETEs sent to them")
    states = api.task_states(result.dag_id, result.run_id)
    # Within the ceiling the approval branch (Airflow 3.1+) is skipped.
    skippable = {"approve", "delete_approved"}
    if any(state != "success" and not (task in skippable and state == "skipped") for task, state in states.items()):
        result.problems.append(f"task states: {states}")
    return result
