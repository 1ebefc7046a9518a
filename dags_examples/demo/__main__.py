"""`make demo`: the three example DAGs in real Airflow against the local emulator.

1. prepares an Airflow home with SQLite under demo-output/ and starts the emulator;
2. points both connections at it through AIRFLOW_CONN_* (a fresh random API key);
3. runs the campaign DAG with `airflow dags test` while simulated visitors click the campaign
   links through the emulator's redirect until they expire (the A/B link expires by date: the
   emulator's clock is moved past it);
4. seeds old and fresh expired links, runs the cleanup DAG and checks only the old ones went;
5. runs the report DAG and prints where the report is;
6. runs the bulk launch DAG: 200 links from a CSV in one task, at the real 60 requests a minute
   (about 3.5 minutes), and checks every link is there;
7. stops the emulator; exits non-zero if any run failed.

``--only campaign`` (repeatable: campaign, cleanup, report, launch) runs some of the DAGs; ``make dist``
runs the campaign from the installed wheel this way.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pendulum
import requests

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "demo-output"
HOME = OUT / "airflow-home"
REPORTS = OUT / "reports"
CAMPAIGN = "demo-" + pendulum.now("UTC").format("MMDDHHmmss")
CLICKS_TO_EXPIRE = 12
API = "/public/api/v1"
RATE_LIMIT = 60  # requests a minute, as on a real install
LAUNCH_COUNT = 200  # links of the bulk launch: 200 creates take 3 min 20 s at the rate limit

REFERRERS = ["https://news.example.org/spring", "https://mail.example.net/", "https://social.example.com/post/7", ""]
VISITORS = [  # (X-Country, User-Agent, Accept-Language)
    ("US", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)", "en-US"),
    ("FR", "Mozilla/5.0 (Linux; Android 14; Pixel 8)", "fr-FR"),
    ("DE", "Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "de-DE"),
    ("GB", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0)", "en-GB"),
]


def say(message: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Emulator:
    """The emulator in its own process, driven over HTTP like any other client would."""

    def __init__(self, api_key: str, links_version: str = "49") -> None:
        self.links_version = links_version
        self.url = f"http://127.0.0.1:{free_port()}"
        self.analytics_url = self.url + "/analytics"  # both services share the port; analytics under /analytics
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {api_key}"
        env = {**os.environ, "LINKSTATS_EMULATOR_API_KEY": api_key}  # the key stays out of `ps`
        # Real installs' limits: 60 requests a minute per client address, 120 per key.
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "airflow_provider_linkstats.emulator",
                "--port",
                self.url.rsplit(":", 1)[1],
                "--rate-limit",
                str(RATE_LIMIT),
                # phpShort 46-49 and phpAnalytics 31 (current installs), or 44-45 and 3.x.
                "--api-version",
                links_version,
                "--analytics-version",
                "31" if links_version == "49" else "3",
            ],
            env=env,
            stdout=(OUT / "emulator.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        for _ in range(100):
            try:
                requests.get(f"{self.url}/__emulator__/clock", timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("the emulator did not start; see demo-output/emulator.log")

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


def airflow(env: dict, *args: str, log: Path | None = None) -> int:
    with (log or Path(os.devnull)).open("w") as handle:
        return subprocess.run(
            [sys.executable, "-m", "airflow", *args], env=env, stdout=handle, stderr=subprocess.STDOUT
        ).returncode


LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\S+ \[(\w+)\s*\] (.*?)\s+\[[\w.]+\]")
SHOWN_MESSAGES = re.compile(
    r"^(bulk delete finished|deleted \d+/\d+ |created link|created website|.* deleted$"
    r"|bulk create finished|created \d+/\d+ links|\d+ of \d+ links exist already)"
)


def excerpt(text: str) -> list[str]:
    """What the tasks printed (tables, summaries) and their key log messages, without the noise."""
    shown = []
    for line in text.splitlines():
        match = LOG_LINE.match(line)
        if match and SHOWN_MESSAGES.match(match.group(2)):
            shown.append(match.group(2))
        elif not match and line.strip() and not re.match(r"^(\d{4}-|You might|Run `pip)", line):
            shown.append(line.rstrip())
    return shown


def shorten(line: str, width: int = 150) -> str:
    """A line cut to ``width`` says so with an ellipsis, never a list that seems to end at a comma."""
    if len(line) <= width:
        return line
    return line[: width - 4].rstrip(" ,;") + " ..."


def run_dag(env: dict, dag_id: str, conf: dict) -> bool:
    log = OUT / f"{dag_id}.log"
    say(f"airflow dags test {dag_id} (log: {log.relative_to(REPO)})")
    started = time.monotonic()
    code = airflow(env, "dags", "test", dag_id, "--conf", json.dumps(conf), log=log)
    text = log.read_text()
    for line in excerpt(text):
        say("  | " + shorten(line))
    ok = code == 0 and "state=success" in text
    say(f"{dag_id}: {'success' if ok else 'FAILED'} in {time.monotonic() - started:.1f} s")
    return ok


def visitors(emulator: Emulator, stop: threading.Event) -> None:
    """Click the campaign links until they expire; the A/B link ends by itself a minute after it was made.

    Visitors see expiry the way people do, through the redirect (the click-limited links answer
    404 once used up), so this costs no API request: under the rate limit every one counts. The
    A/B link's end is real time: the deferred wait sleeps until it on the triggerer's clock.
    """
    clicks = 0
    click_limited = {f"{CAMPAIGN}-geo": False, f"{CAMPAIGN}-app": False}  # alias -> has redirected yet
    while not stop.is_set():
        for alias, seen in list(click_limited.items()):
            if seen is None:
                continue  # expired
            status = emulator.click(alias, random.choice(VISITORS)).status_code
            if status == 302:
                click_limited[alias] = True
                clicks += 1
            elif seen:  # it redirected before and answers 404 now: used up
                click_limited[alias] = None
        if all(seen is None for seen in click_limited.values()):
            break
        stop.wait(0.2)
    if stop.is_set():
        return
    say(f"visitors: {clicks} clicks; the click-limited links have expired, the A/B link ends on its date")
    emulator.click(f"{CAMPAIGN}-ab", random.choice(VISITORS))


def seed_expired(emulator: Emulator, count: int, prefix: str) -> None:
    for index in range(count):
        link = emulator.create_link(
            url=f"https://example.com/old/{index}", alias=f"{prefix}-{index}", clicks_limit=1
        )
        emulator.click(link["alias"], VISITORS[index % len(VISITORS)])  # its one click: expired


DAGS = ("campaign", "cleanup", "report", "launch")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dags_examples.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=DAGS, help="run only this DAG (repeatable)")
    parser.add_argument(
        "--api-version",
        choices=("44", "49"),
        default="49",
        help="phpShort generation the emulator serves: 49 (46-49, with phpAnalytics 31) or 44 (44-45, with 3.x)",
    )
    options = parser.parse_args(argv)
    wanted = set(options.only or DAGS)
    for folder in (HOME, REPORTS):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    api_key = secrets.token_urlsafe(24)
    emulator = Emulator(api_key, options.api_version)
    analytics = "31" if options.api_version == "49" else "3.x"
    say(f"emulator on {emulator.url} (both services: phpShort {options.api_version}, phpAnalytics {analytics})")
    say(f"rate limits on: {RATE_LIMIT} requests a minute, as on a real install")
    links_connection = {"host": emulator.url, "password": api_key, "extra": {"timeout": 10, "default_domain_id": 1}}
    analytics_connection = {"host": emulator.analytics_url, "password": api_key, "extra": {"timeout": 10}}
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags_examples"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "LINKSTATS_CAMPAIGN_POKE_INTERVAL": "5",
        "LINKSTATS_CAMPAIGN_WAIT_TIMEOUT": "300",
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": json.dumps({"conn_type": "linkstats_links", **links_connection}),
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT": json.dumps(
            {"conn_type": "linkstats_analytics", **analytics_connection}
        ),
    }
    results: dict[str, bool] = {}
    try:
        say("preparing the Airflow metadata database (SQLite)")
        if airflow(env, "db", "migrate", log=OUT / "db-migrate.log") != 0:
            say("airflow db migrate failed; see demo-output/db-migrate.log")
            return 1

        if "campaign" in wanted:
            stop = threading.Event()
            clicker = threading.Thread(target=visitors, args=(emulator, stop), daemon=True)
            clicker.start()
            conf = {"campaign": CAMPAIGN, "expire_after_clicks": CLICKS_TO_EXPIRE, "expire_after_minutes": 1}
            results["campaign"] = run_dag(env, "linkstats_campaign_launch", conf)
            stop.set()
            clicker.join(timeout=10)
            emulator.clock(reset=True)
            left = emulator.links(search=CAMPAIGN, search_by="alias")
            say(f"campaign links left behind: {len(left)}")
            results["campaign"] &= not left

        if "cleanup" in wanted:
            say("seeding 30 expired links created 40 days ago and 5 created today")
            emulator.clock(now=pendulum.now("UTC").subtract(days=40).isoformat())
            seed_expired(emulator, 30, "old")
            emulator.clock(reset=True)
            seed_expired(emulator, 5, "fresh")
            # 30 of 35 links is more than the DAG's default ceiling (half of all links), which on Airflow
            # 3.1+ waits for a person's approval: the demo lifts the share limit instead.
            conf = {"older_than_days": 30, "max_share": 1}
            results["cleanup"] = run_dag(env, "linkstats_cleanup_expired", conf)
            remaining = sorted(link["alias"].split("-")[0] for link in emulator.links(status=2))
            say(f"expired links after cleanup: {len(remaining)} ({', '.join(sorted(set(remaining))) or 'none'})")
            results["cleanup"] &= remaining == ["fresh"] * 5

        if "report" in wanted:
            say("creating 5 evergreen links with 3 to 15 visits each, and 2 tracked websites with visitors")
            for rank in range(1, 6):
                emulator.create_link(url=f"https://example.com/evergreen/{rank}", alias=f"evergreen-{rank}")
                for visit in range(3 * rank):
                    referrer = REFERRERS[(visit + rank) % len(REFERRERS)]
                    emulator.click(f"evergreen-{rank}", VISITORS[visit % len(VISITORS)], referrer or None)
            for index, domain in enumerate(("shop.example.com", "blog.example.com")):
                emulator.create_website(domain)
                for visitor in range(12 - 5 * index):
                    for page in range(1 + visitor % 3):
                        emulator.page_view(
                            f"https://{domain}/page-{page}", f"v{visitor}", VISITORS[visitor % len(VISITORS)]
                        )
            results["report"] = run_dag(env, "linkstats_weekly_report", {"top_n": 5, "output_dir": str(REPORTS)})
            kinds = sorted({path.suffix for path in REPORTS.iterdir()})
            counts = ", ".join(f"{len(list(REPORTS.glob('*' + kind)))} {kind[1:].upper()}" for kind in kinds)
            say(f"report files in {REPORTS.relative_to(REPO)}/: {counts or 'none'}")
            charts = sorted(REPORTS.glob("*.png"))
            for chart in charts:
                say(f"chart: {chart}")
            if not charts:
                say("no charts: matplotlib is missing (pip install 'airflow-provider-linkstats[demo]')")
        if "launch" in wanted:
            campaign = f"{CAMPAIGN}-bulk"
            ideal = LAUNCH_COUNT / RATE_LIMIT * 60
            say(f"bulk launch: {LAUNCH_COUNT} links from a CSV at {RATE_LIMIT} requests a minute (ideal {ideal:.0f} s)")
            conf = {"campaign": campaign, "count": LAUNCH_COUNT, "workdir": (OUT / "launch").as_uri()}
            started = time.monotonic()
            results["launch"] = run_dag(env, "linkstats_bulk_launch", conf)
            elapsed = time.monotonic() - started
            made = emulator.links(search=campaign, search_by="alias")
            ratio = elapsed / ideal
            say(f"bulk launch: {len(made)} links stored; the DAG run took {elapsed:.0f} s ({ratio:.2f}x ideal)")
            results["launch"] &= len({link["alias"] for link in made}) == LAUNCH_COUNT
    finally:
        emulator.stop()
        say("emulator stopped")
    failed = [name for name, ok in results.items() if not ok]
    say("all runs succeeded" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed or len(results) < len(wanted) else 0


if __name__ == "__main__":
    sys.exit(main())
