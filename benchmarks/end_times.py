"""Waits that know when a link ends, next to polling.

    python -m benchmarks.end_times [--waits 20] [--poke-interval 5] [--polling-root /work/main] [--api-url]
                                   [--versions 44,49] [--json FILE]

(a) **20 deferred waits** for links that end by date 1 to 2 minutes ahead, ``poke_interval`` 5 s,
    in one event loop as a triggerer runs them, against the emulator in its own process (phpShort
    44 and 49). Each trigger gets what the sensor hands over when it defers from a created link's
    record (id, alias, end time). Counted: the API requests the emulator got during the whole wait,
    and how long after its end time each wait fired. "polling" is the same run with the provider
    found at ``--polling-root`` (the shared poller before waits knew end times): it walks the
    Expired listing every interval, which on phpShort 49 never lists a link whose window ended.
    The connection gives the bare site URL with ``api_version``, so the API root must be found:
    the worker's sensor finds it before deferring (``GET /stats/0``, not counted: it is the
    worker's) and hands it over in the trigger's kwargs (``service_profile``), with the service's
    clock that answer told (``service_clock``), so the triggerer, whose host has nothing learned
    yet (a private, empty learned-service cache), asks nothing; a provider without the handover
    looks the root up once there (and, without the clock, reads it once: ``GET /account``). With
    ``--api-url`` the connection gives the API URL, as the connections page recommends, and nobody
    looks it up (the sensor reads the clock in the worker).
    Every request the emulator got during the wait is counted, whatever its root, and sorted into
    look-ups and the waits' reads; the goal is at most 8 for 20 waits.
(b) **1,000 waits ending over an hour** (``poke_interval`` 60 s, one existence check every 10
    intervals): ``waiting.watch.Poll`` rounds driven by a simulated clock against canned answers of
    a phpShort 49 account, paced as the shared poller paces them; next to polling's cost on a
    44-45 install, where one walk of the Expired listing answers every wait (ceil(expired / 100)
    requests a round, plus the existence checks), from the same clock.
(c) **20 waits ending in a week, over a day** (``poke_interval`` 300 s, ``existence_check_every``
    10: a staleness bound of 50 minutes): the cost of the staleness re-reads alone, shared by the
    poller, next to one read per wait and bound (poke and reschedule modes), simulated clock.

Not a timed test: figures printed side by side; ``--json`` writes the rows for ``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONN = "linkstats_end_times"


# -- (a) the child: the waits in one event loop --------------------------------------------------------


def child(links_file: str, result_file: str, poke_interval: float, limit: float) -> None:
    import inspect

    from airflow.providers.common.compat.sdk import BaseHook

    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    BaseHook.get_connection(CONN)  # what a running triggerer has loaded already
    # Ready: the parent creates the links only now, so their ends are 1-2 minutes ahead of the
    # waits however long this process took to start (minutes on a loaded machine).
    Path(result_file + ".ready").write_text(str(time.time()))
    while not Path(links_file).exists():
        time.sleep(0.05)
    links = json.loads(Path(links_file).read_text())
    accepted = inspect.signature(LinkstatsLinkExpiredTrigger).parameters
    knows_ends = "known" in accepted
    handover_file = Path(links_file + ".handover")
    handover = json.loads(handover_file.read_text()) if handover_file.exists() else {}
    # What the deferring sensor hands over, as far as this provider's trigger takes it.
    handed = {name: value for name, value in handover.items() if value is not None and name in accepted}
    triggers = [
        LinkstatsLinkExpiredTrigger(
            linkstats_conn_id=CONN,
            link_id=link["id"],
            alias=link["alias"],
            poke_interval=poke_interval,
            verified=True,  # as the sensor defers from a create task's record
            **({"known": {str(link["id"]): [link["ends"], False]}} if knows_ends else {}),
            **handed,
        )
        for link in links
    ]
    fired: dict[int, float] = {}

    async def consume(index: int, trigger: Any) -> None:
        async for event in trigger.run():
            if event.payload.get("status") == "success":
                fired[index] = time.time()
            return

    async def fleet() -> None:
        tasks = [asyncio.ensure_future(consume(i, t)) for i, t in enumerate(triggers)]
        Path(result_file + ".started").write_text(str(time.time()))
        _, pending = await asyncio.wait(tasks, timeout=limit)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    asyncio.run(fleet())
    delays = [fired[i] - link["ends"] for i, link in enumerate(links) if i in fired]
    result = {"fired": len(fired), "delays": delays, "knows_ends": knows_ends, "handed": sorted(handed)}
    Path(result_file).write_text(json.dumps(result))


def run_waits(
    version: str, root: Path, waits: int, poke_interval: float, limit: float, api_url: bool = False
) -> dict[str, Any]:
    from benchmarks.common import API_KEY, EmulatorProcess, airflow_env

    with EmulatorProcess(("--api-version", version)) as emu:
        workdir = Path(tempfile.mkdtemp(prefix="linkstats-end-times-"))
        links_file, result_file = workdir / "links.json", workdir / "result.json"
        env = {
            **os.environ,
            **airflow_env(),
            "PYTHONPATH": f"{root}{os.pathsep}{HERE.parent}",
            # A triggerer host that has learned nothing yet (not the user's ~/.cache).
            "AIRFLOW__LINKSTATS__CACHE_DIR": str(workdir / "learned"),
            f"AIRFLOW_CONN_{CONN.upper()}": json.dumps(
                {
                    "conn_type": "linkstats_links",
                    "host": emu.url + ("/public/api/v1" if api_url else ""),  # the API URL: no look-up
                    "password": API_KEY,
                    "extra": {"api_version": version},
                },
            ),
        }
        code = (
            f"import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path({str(Path(__file__))!r}, run_name='__main__')"
        )
        command = [sys.executable, "-c", code, "end_times", "--child", str(links_file), str(result_file)]
        command += ["--poke-interval", str(poke_interval), "--limit", str(limit)]
        with open(workdir / "child.log", "wb") as log:
            process = subprocess.Popen(command, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
            try:
                ready, deadline = Path(str(result_file) + ".ready"), time.time() + 600
                while not ready.exists() and process.poll() is None and time.time() < deadline:
                    time.sleep(0.05)
                now = time.time()
                ends = [now + 60 + 60 * i / max(1, waits - 1) for i in range(waits)]  # 1 to 2 minutes ahead

                def expiry(i: int) -> dict[str, str]:
                    moment = dt.datetime.fromtimestamp(ends[i], dt.timezone.utc)
                    if version == "44":  # minutes: the service keeps the date and the HH:MM
                        date, hhmm = moment.strftime("%Y-%m-%d"), moment.strftime("%H:%M")
                        return {"expiration_date": date, "expiration_time": hhmm}
                    start = moment - dt.timedelta(hours=1)
                    return {
                        "active_period_start_at": start.strftime("%Y-%m-%dT%H:%M:%S"),
                        "active_period_end_at": moment.strftime("%Y-%m-%dT%H:%M:%S"),
                    }

                from airflow_provider_linkstats.client.records import link_timing

                links = []
                for record in emu.seed_links(waits, expiring=expiry, threads=1):
                    end = link_timing(record).ends_at
                    ends_at = end.timestamp() if end else None
                    links.append({"id": record["id"], "alias": record["alias"], "ends": ends_at})
                # What the sensor found in the worker before deferring (its requests are the worker's).
                (workdir / "links.json.handover").write_text(json.dumps(_worker_handover(emu.url, version, api_url)))
                emu.reset_stats()
                (workdir / "links.tmp").write_text(json.dumps(links))
                (workdir / "links.tmp").rename(links_file)
                process.wait(timeout=limit + 60)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        # Every request, under whichever root it was sent (a look-up of the wrong root counts too).
        sent = [r for r in emu.admin("GET", "/stats").get("requests", []) if not r["path"].startswith("/__emulator__")]
    result = json.loads(result_file.read_text()) if result_file.exists() else {"fired": 0, "delays": []}
    lookups = sum(1 for r in sent if r["path"].endswith("/stats/0"))
    result.update(
        requests=len(sent), lookups=lookups, reads=len(sent) - lookups, waits=waits, version=version,
        sent=[_shown(r) for r in sent],
    )  # fmt: skip
    return result


def _worker_handover(url: str, version: str, api_url: bool) -> dict[str, Any]:
    """What a deferring sensor hands its trigger besides the inputs (``LinkstatsLinkExpiredSensor._defer``):
    the service profile its hook found (none when the connection gives the API URL: no look-up) and
    the service's clock it measured before deferring (``_handed_clock``: from the look-up's answer,
    else one ``GET /account``). Both are the worker's requests, made before the count starts; empty
    with a provider that has neither."""
    try:
        from airflow_provider_linkstats.client.api import LinkstatsClient
        from airflow_provider_linkstats.client.auth import ApiKey
        from airflow_provider_linkstats.client.generations import generation_for
        from airflow_provider_linkstats.client.protocol import api_roots
        from airflow_provider_linkstats.client.settings import ClientSettings
        from benchmarks.common import API_KEY, API_PREFIX
    except ImportError:
        return {}
    roots = (url + API_PREFIX,) if api_url else api_roots(url)
    client = LinkstatsClient(ClientSettings(root=roots[0]), ApiKey(API_KEY))
    handover: dict[str, Any] = {}
    try:
        if not api_url:
            profile = client.discover("links", roots=roots, generation=generation_for("links", version))
            handover["service_profile"] = {
                "service": profile.service, "root": profile.root, "generation": profile.generation,
            }  # fmt: skip
        clock = client.ensure_clock() if hasattr(client, "ensure_clock") else None
        if clock is not None and clock.known:
            handover["service_clock"] = {"offset": round(clock.offset, 3), "uncertainty": round(clock.uncertainty, 3)}
    finally:
        client.close()
    return handover


def _shown(request: dict[str, Any]) -> str:
    """``GET /links?status=0&page=1``: what a request asked, for the printout."""
    query = "&".join(f"{k}={v[0] if isinstance(v, list) else v}" for k, v in sorted(request.get("query", {}).items()))
    path = request["path"].removeprefix("/public/api/v1")
    return f"{request['method']} {path}{'?' + query if query else ''}"


# -- (b) 1,000 waits over an hour, on a simulated clock ------------------------------------------------


class CannedAccount:
    """A phpShort 49 account answered from memory: reads, and the All listing oldest first."""

    def __init__(self, records: dict[int, dict]) -> None:
        self.records = records
        self.requests = 0

    def __call__(self, request: Any) -> Any:
        from airflow_provider_linkstats.client.protocol import ApiResponse

        self.requests += 1
        parts = request.path.strip("/").split("/")
        if len(parts) == 2:
            return _answer(ApiResponse, {"data": self.records[int(parts[1])]})
        params = dict(request.params)
        rows = sorted(self.records.values(), key=lambda r: r["id"], reverse=params.get("sort") != "asc")
        if params.get("status") == "2":  # v49: only links that reached their click limit (none here)
            rows = []
        page, per_page = int(params.get("page", 1)), int(params.get("per_page", 10))
        last = max(1, math.ceil(len(rows) / per_page))
        meta = {"current_page": page, "last_page": last}
        return _answer(ApiResponse, {"data": rows[(page - 1) * per_page : page * per_page], "meta": meta})


def _answer(response_class: Any, payload: Any) -> Any:
    return response_class(200, {"content-type": "application/json"}, json.dumps(payload).encode())


def simulate_hour(waits: int = 1000, interval: float = 60.0, every: int = 10, seed: int = 7) -> dict[str, Any]:
    from airflow_provider_linkstats.client.protocol import drive
    from airflow_provider_linkstats.triggers.poller import BATCH
    from airflow_provider_linkstats.waiting.watch import Poll, Watch

    rng = random.Random(seed)
    start = 1_800_000_000.0
    ends = sorted(start + rng.uniform(0, 3600) for _ in range(waits))
    iso = "%Y-%m-%dT%H:%M:%S.000000Z"
    records = {
        i + 1: {
            "id": i + 1,
            "alias": f"w{i + 1}",
            "clicks": 0,
            "clicks_limit": None,
            "active_period_start_at": dt.datetime.fromtimestamp(start - 3600, dt.timezone.utc).strftime(iso),
            "active_period_end_at": dt.datetime.fromtimestamp(end, dt.timezone.utc).strftime(iso),
        }
        for i, end in enumerate(ends)
    }
    account = CannedAccount(records)
    watches = [Watch.from_inputs(link_id=record, existence_check_every=every) for record in records.values()]
    poll = Poll(watches, interval=interval, batch=BATCH)
    now, rounds, fired, delays = start, 0, 0, []
    while poll.watches and now <= start + 3600 + 2 * interval:
        result = drive(poll.round(now), account)
        rounds += 1
        for watch, got in result.expired.items():
            poll.watches.remove(watch)
            fired += 1
            delays.append(now - ends[got[0]["id"] - 1])
        now = poll.next_round(now)  # the shared poller's pace
    # Polling on 44-45: a walk of the Expired listing each interval (at least one page), plus the
    # existence check of the pending links every 10 intervals (the All listing, ceil(pending / 100)).
    polling, expired, pending = 0, 0, waits
    for k in range(math.ceil(3600 / interval) + 1):
        t = start + k * interval
        expired = sum(1 for e in ends if e <= t)
        pending = waits - expired
        polling += max(1, math.ceil(expired / 100))
        if k % every == 0 and pending:
            polling += math.ceil(pending / 100)
    return {
        "waits": waits,
        "interval": interval,
        "requests": account.requests,
        "rounds": rounds,
        "fired": fired,
        "max_delay": max(delays, default=0.0),
        "polling": polling,
        "per_wait_polling": waits * math.ceil(3600 / interval),
    }


def simulate_day(waits: int = 20, interval: float = 300.0, every: int = 10, hours: float = 24.0) -> dict[str, Any]:
    """Waits for links ending a week on, over ``hours``: what the staleness re-reads cost the
    shared poller (one ``Poll`` for all, as deferred waits share it), and what one read per wait
    and bound costs (each sensor in poke or reschedule mode reads its own link)."""
    from airflow_provider_linkstats.client.protocol import drive
    from airflow_provider_linkstats.triggers.poller import BATCH
    from airflow_provider_linkstats.waiting.watch import Poll, Watch, staleness_bound

    start = 1_800_000_000.0
    iso = "%Y-%m-%dT%H:%M:%S.000000Z"
    week = dt.datetime.fromtimestamp(start + 7 * 86400, dt.timezone.utc).strftime(iso)
    begun = dt.datetime.fromtimestamp(start - 3600, dt.timezone.utc).strftime(iso)
    records = {
        i: {"id": i, "alias": f"d{i}", "clicks": 0, "clicks_limit": None,
            "active_period_start_at": begun, "active_period_end_at": week}
        for i in range(1, waits + 1)
    }  # fmt: skip
    account = CannedAccount(records)
    poll = Poll(
        [Watch.from_inputs(link_id=dict(r), existence_check_every=every) for r in records.values()],
        interval=interval,
        batch=BATCH,
    )
    now, rounds = start, 0
    while now < start + hours * 3600:
        drive(poll.round(now), account)
        rounds += 1
        now = poll.next_round(now)
    bound = staleness_bound(interval, every)
    per_wait = waits * math.floor(hours * 3600 / bound)
    return {
        "waits": waits, "interval": interval, "every": every, "hours": hours, "bound": bound,
        "requests": account.requests, "rounds": rounds, "per_wait": per_wait,
    }  # fmt: skip


# -- the table ----------------------------------------------------------------------------------------------


GOAL = 8  # requests for 20 deferred waits ending 1-2 minutes ahead (issue 27)


def goal_line(r: dict[str, Any]) -> str:
    """``phpShort 49: 9 requests for 20 waits (goal <= 8), 0.45 a wait: 1 look-up + 8 reads``."""
    return (
        f"phpShort {r['version']}: {r['requests']} requests for {r['waits']} waits (goal <= {GOAL}), "
        f"{r['requests'] / max(1, r['waits']):.2f} a wait: {r.get('lookups', 0)} API-root look-up + "
        f"{r.get('reads', r['requests'])} reads"
    )


def rows(
    results: dict[str, dict], hour: dict[str, Any], poke_interval: float, day: dict[str, Any] | None = None
) -> list[dict[str, str]]:
    out = []
    for version in ("44", "49"):
        ours, theirs = results.get(f"sleep-{version}"), results.get(f"polling-{version}")
        if not ours:
            continue

        def describe(r: dict | None) -> str:
            if not r:
                return "not run"
            delay = f"max delay {max(r['delays']):.1f} s" if r["delays"] else "no wait fired"
            split = f" ({r['lookups']} API-root look-up + {r['reads']} reads)" if "lookups" in r else ""
            return f"{r['requests']} requests{split}, {r['fired']}/{r['waits']} fired, {delay}"

        met = ours["fired"] == ours["waits"] and ours["requests"] <= GOAL and max(ours["delays"] or [99]) <= 10
        out.append(
            {
                "what": f"{ours['waits']} deferred waits ending by date 1-2 min ahead, poke {poke_interval:g} s, "
                f"phpShort {version}",
                "figure": describe(ours),
                "ratio": f"polling: {describe(theirs)}",
                "target": f"<= {GOAL} requests, <= 10 s after the end",
                "met": "met" if met else "MISSED",
            }
        )
    out.append(
        {
            "what": f"{hour['waits']:,} waits ending over an hour, poke {hour['interval']:g} s (simulated clock)",
            "figure": f"{hour['requests']} requests in {hour['rounds']} rounds, max delay {hour['max_delay']:.0f} s",
            "ratio": f"polling (shared walk, 44-45): {hour['polling']}; per wait: {hour['per_wait_polling']:,}",
            "target": "",
            "met": "",
        }
    )
    if day:
        out.append(
            {
                "what": f"{day['waits']} waits ending in a week, over {day['hours']:g} h, poke {day['interval']:g} s, "
                f"existence_check_every {day['every']} (bound {day['bound'] / 60:g} min; simulated clock)",
                "figure": f"{day['requests']} requests deferred ({day['requests'] / day['hours']:.1f} an hour)",
                "ratio": f"poke or reschedule, a read per wait and bound: {day['per_wait']} "
                f"({day['per_wait'] / day['hours']:.1f} an hour)",
                "target": "",
                "met": "",
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waits", type=int, default=20)
    parser.add_argument("--poke-interval", type=float, default=5.0)
    parser.add_argument("--limit", type=float, default=170.0, help="seconds a run of waits may take")
    parser.add_argument("--polling-root", default=None, help="a checkout with the polling provider (e.g. main)")
    parser.add_argument("--versions", default="44,49")
    parser.add_argument(
        "--api-url", action="store_true", help="give the connection the API URL, not the site URL (no look-up)"
    )
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child, args.poke_interval, args.limit)
        return 0
    results: dict[str, dict] = {}
    for version in args.versions.split(","):
        results[f"sleep-{version}"] = run_waits(
            version, HERE.parent, args.waits, args.poke_interval, args.limit, args.api_url
        )
        if args.polling_root:
            root = Path(args.polling_root)
            results[f"polling-{version}"] = run_waits(
                version, root, args.waits, args.poke_interval, args.limit, args.api_url
            )
    hour, day = simulate_hour(), simulate_day()
    table = rows(results, hour, args.poke_interval, day)
    for row in table:
        print(f"- {row['what']}: {row['figure']} | {row['ratio']} | target {row['target'] or '-'} {row['met']}")
    for name, result in results.items():
        if name.startswith("sleep-"):
            print(f"  {goal_line(result)}: {'met' if result['requests'] <= GOAL else 'MISSED'}")
        print(f"  {name}: requests sent: {', '.join(result.get('sent', [])) or 'none'}")
    if args.json:
        Path(args.json).write_text(json.dumps(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
