"""`make demo`: the example DAGs in real Airflow against the local emulator, live.

1. starts the emulator and points both connections at it through AIRFLOW_CONN_* (a fresh random
   API key);
2. runs the steps of ``STEPS`` with ``dag.test()`` (what ``airflow dags test`` runs) in runner
   processes (dags_examples/demo/runner.py: Airflow imported once per process, SQLite under
   demo-output/), each task's log lines shown as they are written (the full output goes to
   demo-output/<dag_id>.log):

   - campaign: three campaign links and a deferred wait for their expiry, while simulated visitors
     click the two click-limited ones through the redirect until they expire; the A/B link ends on
     its date, one minute of real time after it was made. That minute is idle time, so the
     campaign runs in the background, in a runner of its own against an emulator of its own (a
     second install: its own records and a real install's rate limit), beside the other steps;
   - cleanup: old and fresh expired links seeded, the cleanup DAG deletes only the old ones;
   - report: links and websites with visitors seeded, the report DAG writes its CSV and charts;
   - warehouse: clicks near midnight in New York seeded, a 3-day backfill of the daily load into a
     SQLite table (dags_examples/demo/warehouse.py), the table printed and checked;
   - launch: a bulk launch of ``LAUNCH_COUNT`` links from a CSV in one task, at a real install's
     60 requests a minute (the first half of a minute's budget goes at once, the rest is paced);

3. stops the emulators; exits non-zero if any run failed.

The steps before the launch run with the emulator's budget raised to ``DEMO_RATE_LIMIT`` requests
a minute (the output says so), so that the demo fits in about two minutes; the provider paces
itself by the limit the service announces either way.

``--only campaign`` (repeatable: the steps' names) runs some of the steps; ``make dist`` runs the
campaign from the installed wheel this way, with ``--move-clock``: the A/B link ends when the
emulator's clock moves a minute on instead of after a minute of real time (demo/campaign.py).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pendulum
import requests

from dags_examples.demo import warehouse as warehouse_step
from dags_examples.demo.campaign import AB_MINUTES, VISITORS, visitors

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "demo-output"
HOME = OUT / "airflow-home"
REPORTS = OUT / "reports"
STAMP = pendulum.now("UTC").format("MMDDHHmmss")
CAMPAIGN = f"demo-{STAMP}"
CLICKS_TO_EXPIRE = 12
API = "/public/api/v1"
RATE_LIMIT = 60  # requests a minute per client address on a real install (120 per key)
# The emulator's budget for the steps before the launch: raised (and said so) so that the demo fits
# in about two minutes; their requests are counted and shown per step.
DEMO_RATE_LIMIT = 300
# The bulk launch runs at the real limit: the first 30 creates go at once (half a minute's budget),
# the other 10 are paced, one every 2 seconds or so.
LAUNCH_COUNT = 40

REFERRERS = ["https://news.example.org/spring", "https://mail.example.net/", "https://social.example.com/post/7", ""]

_PRINTING = threading.Lock()  # the background step prints too: whole lines, never interleaved


def say(message: str) -> None:
    with _PRINTING:
        print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Emulator:
    """The emulator in its own process, driven over HTTP like any other client would."""

    def __init__(self, api_key: str, links_version: str = "49", rate_limit: int = RATE_LIMIT, name: str = "") -> None:
        self.links_version = links_version
        self.url = f"http://127.0.0.1:{free_port()}"
        self.analytics_url = self.url + "/analytics"  # both services share the port; analytics under /analytics
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {api_key}"
        env = {**os.environ, "LINKSTATS_EMULATOR_API_KEY": api_key}  # the key stays out of `ps`
        log = OUT / f"emulator{name}.log"
        # Real installs' limits: 60 requests a minute per client address, 120 per key.
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "airflow_provider_linkstats.emulator",
                "--port",
                self.url.rsplit(":", 1)[1],
                "--rate-limit",
                str(rate_limit),
                # phpShort 46-49 and phpAnalytics 31 (current installs), or 44-45 and 3.x.
                "--api-version",
                links_version,
                "--analytics-version",
                "31" if links_version == "49" else "3",
            ],
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        for _ in range(200):
            try:
                requests.get(f"{self.url}/__emulator__/clock", timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError(f"the emulator did not start; see {log.relative_to(REPO)}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

    def api(self, method: str, path: str, **kwargs: object) -> dict:
        """One API call; the demo's own requests count against the rate limit too, so a 429 is waited out."""
        while True:
            response = self.session.request(method, f"{self.url}{API}{path}", timeout=10, **kwargs)
            if response.status_code != 429:
                response.raise_for_status()
                return response.json()
            wait = float(response.headers.get("Retry-After", "5"))
            say(f"  (demo's own request throttled: waiting {wait:.0f} s, as the provider does)")
            time.sleep(wait)

    def links(self, **filters: object) -> list[dict]:
        found, page = [], 1
        while True:
            body = self.api("GET", "/links", params={**filters, "per_page": 100, "page": page})
            found += body["data"]
            if body["meta"]["current_page"] >= body["meta"]["last_page"]:
                return found
            page += 1

    def create_link(self, *, clicks_limit: int | None = None, **fields: object) -> dict:
        """Seeds a link over the API, as the connected generation spells a click limit."""
        if clicks_limit is not None:
            fields["clicks_limit" if self.links_version == "49" else "expiration_clicks"] = clicks_limit
        return self.api("POST", "/links", data={"domain_id": 1, **fields})["data"]

    def seed_links(self, count: int, prefix: str, **fields: object) -> None:
        """Many links in one step through the emulator's control routes (no API request)."""
        body = {"count": count, "alias_prefix": prefix, "fields": fields}
        response = requests.post(f"{self.url}/__emulator__/links", json=body, timeout=30)
        if not response.ok:
            raise RuntimeError(f"seeding {prefix}* links failed: HTTP {response.status_code} {response.text}")

    def create_website(self, domain: str) -> dict:
        return self.api("POST", "/websites", data={"domain": domain})["data"]

    def click(self, alias: str, visitor: tuple[str, str, str], referrer: str | None = None) -> requests.Response:
        """A visitor following the short link (the redirect is not an API call: no rate limit)."""
        country, agent, language = visitor
        headers = {"X-Country": country, "User-Agent": agent, "Accept-Language": language}
        if referrer:
            headers["Referer"] = referrer
        return requests.get(f"{self.url}/{alias}", headers=headers, allow_redirects=False, timeout=5)

    def page_view(self, page: str, visitor_id: str, visitor: tuple[str, str, str]) -> None:
        """A visitor's pageview as the websites' tracking script reports it (no key, no rate limit)."""
        country, agent, language = visitor
        headers = {"X-Country": country, "User-Agent": agent, "Accept-Language": language}
        data = {"page": page, "visitor": visitor_id, "referrer": random.choice(REFERRERS)}
        requests.post(f"{self.analytics_url}/api/event", data=data, headers=headers, timeout=5).raise_for_status()

    def clock(self, **body: object) -> None:
        requests.post(f"{self.url}/__emulator__/clock", json=body, timeout=5).raise_for_status()

    def rate_limit(self, limit: int) -> None:
        """The budget per client address from now on (per key: twice it), as ``--rate-limit`` sets it."""
        requests.post(f"{self.url}/__emulator__/rate_limit", json={"limit": limit}, timeout=5).raise_for_status()

    def requests_served(self) -> int:
        """API requests of both services so far (tracking beacons included)."""
        return requests.get(f"{self.url}/__emulator__/stats", timeout=10).json()["count"]


# -- running a DAG: dag.test() in a runner process, its lines shown as they come -----------------------

RUNNER_MARK = "DEMO-RUNNER"  # dags_examples/demo/runner.py's own lines

# A log line of Airflow 3 ("2026-... [info     ] message [logger]") or 2.11 ("[2026-...] {file.py:12} INFO - message").
# 2.11 also prints a task's lines a second time in a plain format ("INFO  [airflow.task] message"),
# as alembic prints its own: noise, like the warnings Python prints with a file path.
PLAIN_LOG_LINE = re.compile(r"^[A-Z]+\s+\[[\w.]+\] |^/\S+\.py:\d+ ")
LOG_LINE = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\S+ \[(\w+)\s*\] (.*?)\s+\[[\w.]+\]"
    r"|\[\d{4}-\d\d-\d\d[T ][^\]]+\] \{[^}]*\} (\w+) - (.*?)\s*$)"
)
SHOWN_MESSAGES = re.compile(
    r"^(bulk delete finished|deleted \d+/\d+ |created link|created website|.* deleted$"
    r"|bulk create finished|created \d+/\d+ links|\d+ of \d+ links exist already|waiting \d+ s for"
    r"|created [\d,]+, created by an earlier try .* links done|(?:would delete|deleted) [\d,]+ of [\d,]+ matching links"
    r"|Deferring: |Waiting for \d+ links? to expire|\d+ links? expired$)"
)
TASK_START = re.compile(r"^\[DAG TEST\] starting task_id=(\S+) map_index=(-?\d+)")
# Airflow 2.11's dag.test() does not print that line; its task context's first line names the task.
TASK_START_2 = re.compile(r"^Exporting env vars: .*AIRFLOW_CTX_TASK_ID='([^']+)'")
# Progress lines of a run this short say nothing its summary line does not (and a rate measured
# over three deletes in a few milliseconds reads oddly beside "finished in 0.0 s"): not shown.
# The total: the bulk delete's "deleted 1/3 links", the launch's "...: 28/40 links done", the
# cleanup's "deleted 3 of 3 matching links".
PROGRESS_LINE = re.compile(
    r"^(?:deleted|created) \d+/(\d+) |^created [\d,]+, .*: [\d,]+/([\d,]+) links done"
    r"|^(?:would delete|deleted) [\d,]+ of ([\d,]+) matching links"
)
SHORT_RUN = 10


def shown_line(line: str) -> str | None:
    """The part of one output line the demo shows, or None for noise."""
    match = LOG_LINE.match(line)
    if match:
        message = match.group(2) if match.group(2) is not None else match.group(4)
        task = TASK_START.match(message)
        if task:
            mapped = f"[{task.group(2)}]" if task.group(2) != "-1" else ""
            return f"task {task.group(1)}{mapped} started"
        task = TASK_START_2.match(message)
        if task:
            return f"task {task.group(1)} started"
        progress = PROGRESS_LINE.match(message)
        if progress and int(next(g for g in progress.groups() if g).replace(",", "")) < SHORT_RUN:
            return None
        return message if SHOWN_MESSAGES.match(message) else None
    if PLAIN_LOG_LINE.match(line):
        return None
    if line.strip() and not re.match(r"^(\d{4}-|\[\d{4}-|You might|Run `pip)", line):
        return line.rstrip()
    return None


def shorten(line: str, width: int = 150) -> str:
    """A line cut to ``width`` says so with an ellipsis, never a list that seems to end at a comma."""
    if len(line) <= width:
        return line
    return line[: width - 4].rstrip(" ,;") + " ..."


class Runner:
    """A runner process (dags_examples/demo/runner.py: Airflow imported once, DAGs run with
    ``dag.test()`` one after the other) and the thread that shows its lines as they come."""

    def __init__(self, env: dict, name: str) -> None:
        self.name = name
        self.label = name
        self.log = (OUT / f"runner-{name}.log").open("w")
        self.dag_log: Any = None  # demo-output/<dag_id>.log while a DAG runs
        self.answers: queue.Queue[list[str] | None] = queue.Queue()
        self.started = time.monotonic()
        self.ready_after: float | None = None
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("runner.py"))],
            env={**env, "PYTHONUNBUFFERED": "1"},  # the tasks' lines as they are written, not in blocks
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            bufsize=1,
        )
        threading.Thread(target=self._read, name=f"runner-{name}", daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._keep(line)
            if line.startswith(RUNNER_MARK):
                self.answers.put(line.split()[1:])
                continue
            shown = shown_line(line)
            if shown is not None:
                say(f"  {self.label} | " + shorten(shown))
        self.answers.put(None)  # the process ended

    def _keep(self, line: str) -> None:
        """Into the running DAG's log, or the runner's (a late line after its run's log closed)."""
        for handle in (self.dag_log, self.log):
            try:
                if handle is not None:
                    handle.write(line)
                    return
            except ValueError:  # closed meanwhile
                continue

    def wait_ready(self) -> bool:
        if self.ready_after is None:
            answer = self.answers.get()
            if answer != ["ready"]:
                say(f"{self.name}: the Airflow runner did not start; see {Path(self.log.name).relative_to(REPO)}")
                return False
            self.ready_after = time.monotonic() - self.started
            say(f"{self.name}: Airflow ready (imports and metadata database) in {self.ready_after:.1f} s")
        return True

    def run(
        self, dag_id: str, conf: dict, label: str, *, logical_date: str | None = None, env: dict | None = None
    ) -> bool:
        """What ``airflow dags test <dag_id> [<logical_date>] --conf ...`` does, its output in
        demo-output/<dag_id>.log (<dag_id>-<date>.log for one run of a backfill)."""
        if not self.wait_ready():
            return False
        log = OUT / (f"{dag_id}-{logical_date[:10]}.log" if logical_date else f"{dag_id}.log")
        when = f" for {logical_date}" if logical_date else ""
        say(f"{label}: dag.test() of {dag_id}{when}, as `airflow dags test` runs it (log: {log.relative_to(REPO)})")
        self.label, self.dag_log = label, log.open("w")
        request = {"dag_id": dag_id, "conf": conf, "logical_date": logical_date, "env": env or {}}
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            answer = self.answers.get()
        finally:
            self.dag_log.close()
            self.dag_log = None
        return answer == [dag_id, "success"]

    def close(self) -> None:
        """Ends the runner once its DAGs are done (an Airflow process takes seconds to exit by itself:
        nothing is left to wait for, the runs are recorded)."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the runner's loop ends
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
        self.log.close()


# -- the steps ------------------------------------------------------------------------------------------


@dataclass
class Demo:
    """What the steps share: the demo's emulator, the generation it serves, and each step's figures."""

    emulator: Emulator
    api_version: str
    move_clock: bool = False  # --move-clock (demo/campaign.py)
    seconds: dict[str, float] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)


def _nothing(demo: Demo, emulator: Emulator) -> None:
    return None


def _no_check(demo: Demo, emulator: Emulator) -> bool:
    return True


@dataclass
class Step:
    """One example DAG in the demo: what it needs seeded, its run's conf, what it must leave behind.

    Add a DAG to the demo by adding a Step to ``STEPS``: the steps run in that order in one
    Airflow process, except a ``background`` one, which starts at once in a process of its own
    beside the others (its time is mostly waiting). ``own_emulator`` gives the step an emulator of
    its own at that many requests a minute (a second install: its records, accounts and rate
    limit apart from the other steps'), else it uses the demo's. ``prepare`` seeds the emulator
    before the run, ``check`` says whether the run left what it should. A step that should stay
    on the demo's raised limit goes before the launch, which sets the real one.
    """

    name: str
    dag_id: str
    conf: Callable[[Demo], dict]
    prepare: Callable[[Demo, Emulator], None] = _nothing
    check: Callable[[Demo, Emulator], bool] = _no_check
    background: bool = False
    own_emulator: int | None = None
    # One run per logical date (ISO 8601), in order: a backfill; None: one manual run.
    logical_dates: Callable[[Demo], list[str]] | None = None
    # Variables the runner sets before the step's runs (e.g. an AIRFLOW_CONN_* the DAG needs).
    env: Callable[[Demo], dict[str, str]] | None = None


def connections(emulator: Emulator, api_key: str) -> dict[str, str]:
    links = {"host": emulator.url, "password": api_key, "extra": {"timeout": 10, "default_domain_id": 1}}
    analytics = {"host": emulator.analytics_url, "password": api_key, "extra": {"timeout": 10}}
    return {
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": json.dumps({"conn_type": "linkstats_links", **links}),
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT": json.dumps({"conn_type": "linkstats_analytics", **analytics}),
    }


_VISITORS_STOP = threading.Event()


def prepare_campaign(demo: Demo, emulator: Emulator) -> None:
    clicking = (emulator, CAMPAIGN, _VISITORS_STOP, say, demo.move_clock)
    threading.Thread(target=visitors, args=clicking, daemon=True).start()


def check_campaign(demo: Demo, emulator: Emulator) -> bool:
    _VISITORS_STOP.set()
    left = emulator.links(search=CAMPAIGN, search_by="alias")
    say(f"  campaign | campaign links left behind: {len(left)}")
    return not left


def prepare_cleanup(demo: Demo, emulator: Emulator) -> None:
    say("cleanup: seeding 30 expired links created 40 days ago and 5 created today")
    limit = "clicks_limit" if demo.api_version == "49" else "expiration_clicks"
    expired = {"url": "https://example.com/old", limit: 1, "clicks": 1}  # its one click: expired
    emulator.clock(now=pendulum.now("UTC").subtract(days=40).isoformat())
    emulator.seed_links(30, "old-", **expired)
    emulator.clock(reset=True)
    emulator.seed_links(5, "fresh-", **expired)


def check_cleanup(demo: Demo, emulator: Emulator) -> bool:
    remaining = sorted(link["alias"].split("-")[0] for link in emulator.links(status=2))
    say(f"  cleanup | expired links after cleanup: {len(remaining)} ({', '.join(sorted(set(remaining))) or 'none'})")
    return remaining == ["fresh"] * 5


def prepare_report(demo: Demo, emulator: Emulator) -> None:
    say("report: seeding 5 evergreen links with 3 to 15 visits each, and 2 tracked websites with visitors")
    for rank in range(1, 6):
        emulator.create_link(url=f"https://example.com/evergreen/{rank}", alias=f"evergreen-{rank}")
        for visit in range(3 * rank):
            referrer = REFERRERS[(visit + rank) % len(REFERRERS)]
            emulator.click(f"evergreen-{rank}", VISITORS[visit % len(VISITORS)], referrer or None)
    for index, domain in enumerate(("shop.example.com", "blog.example.com")):
        emulator.create_website(domain)
        for visitor in range(12 - 5 * index):
            for page in range(1 + visitor % 3):
                emulator.page_view(f"https://{domain}/page-{page}", f"v{visitor}", VISITORS[visitor % len(VISITORS)])


def check_report(demo: Demo, emulator: Emulator) -> bool:
    kinds = sorted({path.suffix for path in REPORTS.iterdir()})
    counts = ", ".join(f"{len(list(REPORTS.glob('*' + kind)))} {kind[1:].upper()}" for kind in kinds)
    say(f"  report | report files in {REPORTS.relative_to(REPO)}/: {counts or 'none'}")
    charts = sorted(REPORTS.glob("*.png"))
    for chart in charts:
        say(f"  report | chart: {chart.relative_to(REPO)}")
    if not charts:
        say("  report | no charts: matplotlib is missing (pip install 'airflow-provider-linkstats[demo]')")
    return bool(kinds)


LAUNCH = f"bulk-{STAMP}"


def prepare_launch(demo: Demo, emulator: Emulator) -> None:
    emulator.rate_limit(RATE_LIMIT)
    paced = max(0, LAUNCH_COUNT - RATE_LIMIT // 2)
    say(
        f"launch: the emulator back at a real install's {RATE_LIMIT} requests a minute; {LAUNCH_COUNT} links from"
        f" a CSV in one task: the first {RATE_LIMIT // 2} at once (half a minute's budget), then {paced} paced"
        f" over the rest of the minute"
    )


def check_launch(demo: Demo, emulator: Emulator) -> bool:
    made = emulator.links(search=LAUNCH, search_by="alias")
    say(f"  launch | {len(made)} links stored")
    return len({link["alias"] for link in made}) == LAUNCH_COUNT


STEPS = [
    # The A/B link ends one minute of real time after it is made: the wait runs beside the others.
    Step(
        "campaign",
        "linkstats_campaign_launch",
        lambda demo: {
            "campaign": CAMPAIGN,
            "expire_after_clicks": CLICKS_TO_EXPIRE,
            "expire_after_minutes": AB_MINUTES,
        },
        prepare_campaign,
        check_campaign,
        background=True,
        own_emulator=RATE_LIMIT,
    ),
    # 30 of 35 links is more than the DAG's default ceiling (half of all links), which on Airflow
    # 3.1+ waits for a person's approval: the demo lifts the share limit instead.
    Step(
        "cleanup",
        "linkstats_cleanup_expired",
        lambda demo: {"older_than_days": 30, "max_share": 1},
        prepare_cleanup,
        check_cleanup,
    ),
    Step(
        "report",
        "linkstats_weekly_report",
        lambda demo: {"top_n": 5, "output_dir": str(REPORTS)},
        prepare_report,
        check_report,
    ),
    # A 3-day backfill of the daily statistics load into SQLite, then the table (demo/warehouse.py).
    Step(
        "warehouse",
        "linkstats_stats_to_warehouse",
        lambda demo: {},
        lambda demo, emulator: warehouse_step.prepare_warehouse(emulator, say),
        lambda demo, emulator: warehouse_step.check_warehouse(HOME, say),
        logical_dates=warehouse_step.warehouse_dates,
        env=lambda demo: warehouse_step.warehouse_env(HOME),
    ),
    # Last of the demo's emulator: it sets the budget back to a real install's.
    Step(
        "launch",
        "linkstats_bulk_launch",
        lambda demo: {"campaign": LAUNCH, "count": LAUNCH_COUNT, "workdir": (OUT / "launch").as_uri()},
        prepare_launch,
        check_launch,
    ),
]
NAMES = tuple(step.name for step in STEPS)


def run_step(step: Step, demo: Demo, emulator: Emulator, runner: Runner, results: dict[str, bool]) -> None:
    started = time.monotonic()
    ok = False
    try:
        step.prepare(demo, emulator)
        before = emulator.requests_served()
        env = step.env(demo) if step.env else None
        dates: list[str | None] = list(step.logical_dates(demo)) if step.logical_dates else [None]
        ok = bool(dates)
        for date in dates:  # every run, even after a failed one: a backfill's days stand apart
            ok = runner.run(step.dag_id, step.conf(demo), step.name, logical_date=date, env=env) and ok
        demo.requests[step.name] = emulator.requests_served() - before
        ok = step.check(demo, emulator) and ok
    except Exception as error:  # one step's failure is reported, the others still run
        say(f"{step.name}: {type(error).__name__}: {error}")
    finally:
        demo.seconds[step.name] = time.monotonic() - started
        results[step.name] = ok
        made = f", {demo.requests[step.name]} API requests" if step.name in demo.requests else ""
        say(f"{step.name} ({step.dag_id}): {'success' if ok else 'FAILED'} in {demo.seconds[step.name]:.1f} s{made}")


def run_lane(steps: list[Step], demo: Demo, emulator: Emulator, runner: Runner, results: dict[str, bool]) -> None:
    try:
        for step in steps:
            run_step(step, demo, emulator, runner, results)
    finally:
        runner.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dags_examples.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=NAMES, help="run only this step (repeatable)")
    parser.add_argument(
        "--api-version",
        choices=("44", "49"),
        default="49",
        help="phpShort generation the emulator serves: 49 (46-49, with phpAnalytics 31) or 44 (44-45, with 3.x)",
    )
    parser.add_argument("--move-clock", action="store_true", help="the A/B link ends by the emulator's clock, moved on")
    options = parser.parse_args(argv)
    wanted = [step for step in STEPS if step.name in set(options.only or NAMES)]
    began = time.monotonic()
    for folder in (HOME, REPORTS):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    api_key = secrets.token_urlsafe(24)
    emulator = Emulator(api_key, options.api_version, DEMO_RATE_LIMIT)
    analytics = "31" if options.api_version == "49" else "3.x"
    say(f"emulator on {emulator.url} (both services: phpShort {options.api_version}, phpAnalytics {analytics})")
    say(
        f"its rate limit: {DEMO_RATE_LIMIT} requests a minute, raised from a real install's {RATE_LIMIT} so that"
        f" the demo fits in about two minutes (the bulk launch and the campaign run at {RATE_LIMIT})"
    )
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags_examples"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "LINKSTATS_CAMPAIGN_POKE_INTERVAL": "5",
        "LINKSTATS_CAMPAIGN_WAIT_TIMEOUT": "300",
    }
    demo = Demo(emulator, options.api_version, options.move_clock)
    results: dict[str, bool] = {}
    emulators, runners, lanes = [emulator], [], []
    try:
        # One Airflow process (and SQLite database) per lane: each background step, then the others in order.
        plan = [(step.name, [step]) for step in wanted if step.background]
        in_order = [step for step in wanted if not step.background]
        plan += [("main", in_order)] if in_order else []
        for name, steps in plan:
            own = steps[0].own_emulator
            lane_emulator = emulator
            if own is not None:
                lane_emulator = Emulator(api_key, options.api_version, own, name=f"-{name}")
                emulators.append(lane_emulator)
                say(f"{name}: an emulator of its own on {lane_emulator.url} ({own} requests a minute)")
            database = f"sqlite:///{HOME / name}.db"
            lane_env = {**env, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database, **connections(lane_emulator, api_key)}
            runner = Runner(lane_env, name)
            if name == "main" and len(plan) > 1 and hasattr(os, "setpriority"):
                # The background step is the longest line (its wait is a fixed minute after Airflow
                # starts): the others, which have time to spare, yield the CPU to its start.
                os.setpriority(os.PRIO_PROCESS, runner.process.pid, 5)
            runners.append(runner)
            lanes.append(
                threading.Thread(target=run_lane, args=(steps, demo, lane_emulator, runner, results), daemon=True)
            )
        lines = "; ".join(f"{name}: {', '.join(step.name for step in steps)}" for name, steps in plan)
        say(f"starting Airflow, one process per line of steps ({lines})")
        for lane in lanes:
            lane.start()
        for lane in lanes:
            lane.join()
    finally:
        for runner in runners:
            runner.close()
        for running in emulators:
            running.stop()
        say("emulators stopped")
    failed = [name for name, ok in results.items() if not ok]
    times = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in demo.seconds.items())
    say(f"demo finished in {time.monotonic() - began:.0f} s ({times})")
    say("all runs succeeded" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed or len(results) < len(wanted) else 0


if __name__ == "__main__":
    sys.exit(main())
