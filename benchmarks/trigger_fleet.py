"""1,000 deferred waits in one event loop: LinkstatsLinkExpiredTrigger next to HttpSensorTrigger.

    python -m benchmarks.trigger_fleet [--links 1000] [--scale 5000] [--poke-interval 2] [--limit 60] [--json FILE]

What a triggerer does with 1,000 deferred sensors: one event loop runs 1,000 triggers until their
links expire. The emulator runs in its own process (``python -m airflow_provider_linkstats.emulator``)
with 1,000 links seeded over its API: half expire by clicks (``GET /{alias}``), half by date (the
emulator's clock is moved), in five waves once every trigger is polling. Each fleet runs in a fresh
child process, so its peak RSS and CPU are its own; requests are counted by the emulator.

Three fleets:

- ``shared``: ``LinkstatsLinkExpiredTrigger`` as it runs now: the triggers of one connection share
  one poller (``triggers/poller.py``), one walk of the Expired listing per interval for all;
- ``unshared``: the same triggers, each on its own connection id, so each has its own poller: what
  a triggerer did before polling was shared (one request per trigger per interval);
- ``http``: the HTTP provider's ``HttpSensorTrigger``. It fires on the first answer that is not a
  404 and cannot look into a body, so it polls a small adapter (in this parent process) that sends
  the very same listing request to the emulator (with the Bearer header the trigger's connection
  extras carry) and answers 404 until the link is listed.

A fourth run repeats ``shared`` with the emulator limited to 60 requests a minute (set after
seeding, through its ``/rate_limit`` admin route) and ``poke_interval`` 300 s of the emulator's
clock: the waves are 5 minutes apart and the clock moves 5 minutes per wave, while the triggers
poll every ``--poke-interval`` real seconds. It counts the 429 answers (none is the goal); it is
reported as pending when the emulator has no rate limit.

Then the shared poller alone with ``--scale`` (5,000) waits in one event loop, seeded and expired
the same way: requests per poll interval, memory and CPU, as a triggerer holding that many
deferred sensors of one connection would see them.

Prints the tables and the issue's goals; ``--json`` also writes the goals for ``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import API_KEY, API_PREFIX, EmulatorProcess, airflow_env

HERE = Path(__file__).resolve().parent
LINKS_CONN = "linkstats_fleet"
HTTP_CONN = "http_fleet"
WAVES = 5
RATE_LIMIT = 60  # requests a minute per client, as a real install
SCALE = 5000  # the shared poller alone, at this many waits in one triggerer event loop
LIMITED_POKE_INTERVAL = 300  # seconds of the emulator's clock between the waves of the rate-limited run
NAMES = {
    "shared": "shared poller",
    "unshared": "one poller each",
    "http": "HttpSensorTrigger",
    "limited": "shared, 60/min limit",
}


# -- the child: one fleet in one event loop ---------------------------------------------------------


def _rss_kb() -> int:
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))


def child(arm: str, links_file: str, result_file: str, poke_interval: float, limit: float) -> None:
    links = json.loads(Path(links_file).read_text())
    ours = arm != "http"
    if ours:
        from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

        # As the sensor defers them: alias known and existence already checked in the worker.
        # "unshared": one connection id per trigger, so each trigger has a poller of its own.
        triggers: list[Any] = [
            LinkstatsLinkExpiredTrigger(
                linkstats_conn_id=f"{LINKS_CONN}_{index}" if arm == "unshared" else LINKS_CONN,
                link_id=link["id"],
                alias=link["alias"],
                poke_interval=poke_interval,
                verified=True,
            )
            for index, link in enumerate(links)
        ]
    else:
        from airflow.providers.http.triggers.http import HttpSensorTrigger

        triggers = [
            HttpSensorTrigger(
                endpoint=f"expired/{link['id']}/{link['alias']}",
                http_conn_id=HTTP_CONN,
                method="GET",
                poke_interval=poke_interval,
            )
            for link in links
        ]
    if ours:
        _follow_the_emulators_clock()
    # Load what a running triggerer has loaded already (Airflow's connection and secrets machinery
    # is imported on the first lookup), so the figures below are the wait's own.
    from airflow.providers.common.compat.sdk import BaseHook

    BaseHook.get_connection(LINKS_CONN if ours else HTTP_CONN)
    fired: dict[int, tuple[float, str]] = {}
    seen_pollers: dict[int, Any] = {}

    async def consume(index: int, trigger: Any) -> None:
        async for event in trigger.run():
            payload = event.payload
            status = payload.get("status", "?") if isinstance(payload, dict) else ("success" if payload else "?")
            fired[index] = (time.time(), status)
            return

    async def watch_pollers(stop: asyncio.Event) -> None:
        """Keep every poller seen (they end with their last trigger), to read their figures after."""
        from airflow_provider_linkstats.triggers.poller import pollers

        while not stop.is_set():
            for poller in pollers().values():
                seen_pollers.setdefault(id(poller), poller)
            try:
                await asyncio.wait_for(stop.wait(), 0.2)
            except asyncio.TimeoutError:
                pass

    async def fleet() -> None:
        stop = asyncio.Event()
        watcher = asyncio.ensure_future(watch_pollers(stop)) if ours else None
        tasks = [asyncio.ensure_future(consume(i, t)) for i, t in enumerate(triggers)]
        Path(result_file + ".started").write_text(str(time.time()))
        done, pending = await asyncio.wait(tasks, timeout=limit)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        stop.set()
        if watcher is not None:
            await watcher

    rss_before = _rss_kb()
    usage_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.time()
    asyncio.run(fleet())
    usage = resource.getrusage(resource.RUSAGE_SELF)
    statuses: dict[str, int] = {}
    for _, status in fired.values():
        statuses[status] = statuses.get(status, 0) + 1
    polled = list(seen_pollers.values())
    result = {
        "rss_before_kb": rss_before,
        "peak_rss_kb": usage.ru_maxrss,
        "cpu_s": (usage.ru_utime - usage_before.ru_utime) + (usage.ru_stime - usage_before.ru_stime),
        "started": started,
        "ended": time.time(),
        "fired": len(fired),
        "statuses": statuses,
        "last_event": max((t for t, _ in fired.values()), default=None),
        "pollers": len(polled),
        "rounds": max((p.rounds for p in polled), default=0),
        "max_round_requests": max((p.max_round_requests for p in polled), default=0),
        "link_polls": sum(p.link_polls for p in polled),
        "throttled": sum(p.limiter.throttled for p in polled if p.limiter is not None),
        "limiter_waited_s": sum(p.limiter.waited for p in polled if p.limiter is not None),
    }
    Path(result_file).write_text(json.dumps(result))


def _follow_the_emulators_clock() -> None:
    """The waits compare end times with the service's clock (``waiting.plan.offset``, learnt from
    the Date header of its answers); the parent moves the emulator's clock in waves, so the
    triggers follow its jumps at once (an offset refreshed by a thread, off the loop)."""
    import threading
    import urllib.request

    from airflow_provider_linkstats.waiting import plan

    base = json.loads(os.environ[f"AIRFLOW_CONN_{LINKS_CONN.upper()}"])["host"]
    offset = [0.0]

    def refresh() -> None:
        while True:
            try:
                with urllib.request.urlopen(base + "/__emulator__/clock", timeout=5) as answer:
                    now = dt.datetime.fromisoformat(json.loads(answer.read())["now"]).timestamp()
                offset[0] = now - time.time()
            except OSError:
                pass
            time.sleep(0.2)

    threading.Thread(target=refresh, name="emulator-clock", daemon=True).start()
    plan.offset = lambda clock: offset[0]  # type: ignore[assignment]
    # No real clock jumps forward by minutes, this one does: the poller must not sleep towards an end
    # it computed before a jump, so it runs a round every interval (one with nothing due sends nothing).
    from airflow_provider_linkstats.waiting.watch import Poll

    Poll.next_end = lambda self: None  # type: ignore[method-assign]


# -- the adapter the HTTP provider's fleet polls ------------------------------------------------------


class Adapter:
    """``GET /expired/{id}/{alias}``: the Expired listing for that alias, 404 unless the id is in it."""

    def __init__(self, emulator_url: str) -> None:
        self.emulator_url = emulator_url
        self.requests = 0
        self.peers: set[tuple] = set()
        self.url = ""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="fleet-adapter", daemon=True)

    def start(self) -> Adapter:
        self._thread.start()
        if not self._ready.wait(15):
            raise RuntimeError("the adapter did not start")
        return self

    def reset(self) -> None:
        self.requests = 0
        self.peers = set()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        import aiohttp
        from aiohttp import web

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64))

        async def expired(request: web.Request) -> web.Response:
            self.requests += 1
            peer = request.transport.get_extra_info("peername") if request.transport else None
            if peer:
                self.peers.add(tuple(peer))
            alias, link_id = request.match_info["alias"], request.match_info["id"]
            params = {"status": "2", "search_by": "alias", "search": alias, "per_page": "100"}
            headers = {"Authorization": request.headers.get("Authorization", ""), "Accept": "application/json"}
            async with session.get(f"{self.emulator_url}{API_PREFIX}/links", params=params, headers=headers) as answer:
                if answer.status != 200:
                    return web.Response(status=answer.status)
                body = await answer.json()
            if any(str(item.get("id")) == link_id for item in body.get("data", [])):
                return web.json_response({"expired": True})
            return web.Response(status=404)

        app = web.Application()
        app.router.add_get("/expired/{id}/{alias}", expired)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()
        await session.close()


# -- the parent: seed, run a fleet, expire the links, count ---------------------------------------------


def _seed(emu: EmulatorProcess, count: int, wave_seconds: int) -> tuple[list[dict], dt.datetime]:
    """Reset the emulator and create ``count`` links: even ones expire at 1 click, odd ones by date."""
    emu.admin("POST", "/reset")
    now = dt.datetime.fromisoformat(emu.admin("GET", "/clock")["now"])
    base = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)

    def expiring(i: int) -> dict:
        # domain_id 1: the install's global domain (phpShort v44 requires a domain on create).
        if i % 2 == 0:
            return {"expiration_clicks": 1, "domain_id": 1}
        moment = base + dt.timedelta(seconds=((i // 2) % WAVES + 1) * wave_seconds)
        return {
            "expiration_date": moment.strftime("%Y-%m-%d"),
            "expiration_time": moment.strftime("%H:%M"),
            "domain_id": 1,
        }

    links = emu.seed_links(count, expiring=expiring)
    # ``how`` follows the seed index in the alias (bench-00042), not the id (seeding is threaded).
    return [
        {"id": link["id"], "alias": link["alias"], "how": "clicks" if int(link["alias"][-5:]) % 2 == 0 else "date"}
        for link in links
    ], base


def _expire_in_waves(
    emu: EmulatorProcess, links: list[dict], base: dt.datetime, wave_seconds: int, gap: float
) -> float:
    """Five waves, ``gap`` real seconds apart: the clock passes the next date group, and a fifth of
    the click links get a click."""
    by_clicks = [link for link in links if link["how"] == "clicks"]
    per_wave = -(-len(by_clicks) // WAVES)
    for wave in range(WAVES):
        moment = base + dt.timedelta(seconds=(wave + 1) * wave_seconds + 1)
        emu.admin("POST", "/clock", {"now": moment.isoformat()})
        for link in by_clicks[wave * per_wave : (wave + 1) * per_wave]:
            status, _ = emu.request("GET", f"/{link['alias']}")
            if status not in (302, 404):
                raise RuntimeError(f"click on {link['alias']}: HTTP {status}")
        if wave < WAVES - 1:
            time.sleep(gap)
    return time.time()


def run_arm(
    arm: str,
    emu: EmulatorProcess,
    adapter: Adapter | None,
    count: int,
    poke_interval: float,
    limit: float,
    *,
    wave_seconds: int = 60,
    wave_gap: float = 1.0,
    rate_limit: int | None = None,
) -> dict[str, Any]:
    links, base = _seed(emu, count, wave_seconds)
    if rate_limit is not None:  # after seeding: the limit is for the triggers' polls
        emu.admin("POST", "/rate_limit", {"limit": rate_limit, "window": 60})
    workdir = Path(tempfile.mkdtemp(prefix=f"linkstats-fleet-{arm}-"))
    links_file, result_file = workdir / "links.json", workdir / "result.json"
    links_file.write_text(json.dumps(links))
    ours = json.dumps({"conn_type": "linkstats_links", "host": emu.url, "password": API_KEY})
    env = {
        **os.environ,
        **airflow_env(),
        f"AIRFLOW_CONN_{LINKS_CONN.upper()}": ours,
        # What an HttpHook user writes: the key as a header in the extras (HttpHook sends extras as headers).
        f"AIRFLOW_CONN_{HTTP_CONN.upper()}": json.dumps(
            {
                "conn_type": "http",
                "host": adapter.url if adapter else "",
                "extra": {"Authorization": f"Bearer {API_KEY}"},
            }
        ),
    }
    if arm == "unshared":
        env.update({f"AIRFLOW_CONN_{LINKS_CONN.upper()}_{index}": ours for index in range(count)})
    emu.reset_stats()
    if adapter:
        adapter.reset()
    log = open(workdir / "child.log", "wb")
    command = [sys.executable, "-m", "benchmarks.trigger_fleet", "--child", "http" if arm == "http" else arm]
    command += ["--links-file", str(links_file), "--result-file", str(result_file)]
    command += ["--poke-interval", str(poke_interval), "--limit", str(limit)]
    process = subprocess.Popen(command, env=env, cwd=HERE.parent, stdout=log, stderr=subprocess.STDOUT)
    try:
        started_marker = Path(str(result_file) + ".started")
        deadline = time.time() + 600  # minutes on a loaded machine: the figures count from the start
        while not started_marker.exists():
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the {arm} fleet did not start: see {workdir / 'child.log'}")
            time.sleep(0.05)
        time.sleep(2 * poke_interval + 0.5)  # every trigger has polled at least once: the wait is real
        last_expiry = _expire_in_waves(emu, links, base, wave_seconds, wave_gap)
        process.wait(timeout=limit + 30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
        if rate_limit is not None:
            emu.admin("POST", "/rate_limit", {"limit": None})
    if not result_file.exists():
        raise RuntimeError(f"the {arm} fleet left no result: see {workdir / 'child.log'}")
    result = json.loads(result_file.read_text())
    result["requests"] = emu.count()
    result["connections"] = emu.connections() if arm != "http" else len(adapter.peers if adapter else ())
    result["notice_s"] = (result["last_event"] - last_expiry) if result["last_event"] else None
    if arm == "http":
        result["link_polls"] = adapter.requests if adapter else 0  # one poll is one link's
    return result


def rate_limit_supported() -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--help"], capture_output=True, text=True
    )
    return "--rate-limit" in done.stdout


def table(count: int, poke_interval: float, results: dict[str, dict[str, Any]]) -> str:
    arms = list(results)

    def mb(kb: int) -> str:
        return f"{kb / 1024:.0f}"

    def fired(r: dict[str, Any]) -> str:
        odd = "" if r["statuses"].keys() <= {"success"} else f" {r['statuses']}"
        return f"{r['fired']}/{count}{odd}"

    def ours(cell):
        return lambda r: cell(r) if r.get("pollers") else "-"

    rows = [
        ("triggers fired", fired),
        ("pollers", ours(lambda r: f"{r['pollers']:,}")),
        ("poll rounds (of the busiest poller)", ours(lambda r: f"{r['rounds']}")),
        ("API requests (counted by the emulator)", lambda r: f"{r['requests']:,}"),
        ("most requests in one poll interval", ours(lambda r: f"{r['max_round_requests']}")),
        ("requests per poll interval (mean)", lambda r: f"{r['requests'] / intervals(r, poke_interval):,.1f}"),
        ("TCP connections opened to the server", lambda r: f"{r['connections']:,}"),
        ("429 answers", ours(lambda r: f"{r['throttled']}")),
        ("seconds held back by the rate limiter", ours(lambda r: f"{r['limiter_waited_s']:.1f}")),
        ("peak RSS of the process (MB)", lambda r: mb(r["peak_rss_kb"])),
        ("RSS growth during the wait (MB)", lambda r: mb(r["peak_rss_kb"] - r["rss_before_kb"])),
        ("CPU seconds during the wait", lambda r: f"{r['cpu_s']:.2f}"),
        ("link-polls (waiting links x polls)", lambda r: f"{r['link_polls']:,}"),
        ("CPU us per poll per waiting link", lambda r: f"{cpu_per_link_poll(r):.0f}"),
        ("wall time of the wait (s)", lambda r: f"{r['ended'] - r['started']:.1f}"),
        ("last event after the last expiry (s)", lambda r: "-" if r["notice_s"] is None else f"{r['notice_s']:.1f}"),
    ]
    width = max(len(label) for label, _ in rows)
    columns = [NAMES[a] for a in arms]
    widths = [max(len(c), 10) for c in columns]
    lines = [
        f"{count:,} links waiting to expire ({count // 2} by clicks, {count - count // 2} by date, in {WAVES} waves); "
        f"poke_interval {poke_interval:g} s; each fleet in one event loop in its own process",
        "",
        f"{'':<{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)),
    ]
    for label, cell in rows:
        cells = [f"{cell(results[a]):>{w}}" for a, w in zip(arms, widths, strict=True)]
        lines.append(f"{label:<{width}}  " + "  ".join(cells))
    notes = [
        "",
        "shared poller and one poller each: LinkstatsLinkExpiredTrigger; 'one poller each' puts every trigger on",
        "its own connection id, as before polling was shared. Link-polls: for a poller, the waiting links summed",
        "over its rounds; for HttpSensorTrigger, its polls (one link each).",
    ]
    if "http" in results:
        notes += [
            "HttpSensorTrigger polls an adapter (in the benchmark's parent process) that sends the same listing",
            "request to the emulator and reads the JSON for it, so that parsing is not in its CPU figure, and its",
            "'TCP connections' are to the adapter (a new aiohttp session per poll).",
        ]
    if "limited" in results:
        notes += [
            f"shared, 60/min limit: the emulator allows {RATE_LIMIT} requests a minute; its clock moves "
            f"{LIMITED_POKE_INTERVAL} s per wave",
            f"(poke_interval {LIMITED_POKE_INTERVAL} s of the service's time) while the triggers poll every "
            f"{poke_interval:g} real seconds.",
        ]
    return "\n".join(lines + notes)


def intervals(result: dict[str, Any], poke_interval: float) -> float:
    return max((result["ended"] - result["started"]) / poke_interval, 1.0)


def cpu_per_link_poll(result: dict[str, Any]) -> float:
    return 1e6 * result["cpu_s"] / max(result["link_polls"], 1)


def goals(count: int, results: dict[str, dict[str, Any]], limited_status: str) -> list[dict[str, str]]:
    """The issue's goals for the shared poller, each with its figure, target and verdict."""
    out: list[dict[str, str]] = []

    def add(what: str, figure: str, target: str, ok: bool | None, ratio: str = "") -> None:
        verdict = "" if ok is None else ("met" if ok else "MISSED")
        out.append({"what": what, "figure": figure, "ratio": ratio, "target": target, "met": verdict})

    shared = results.get("shared")
    if shared is None:
        return out
    bound = math.ceil(count / 100) + 2  # the Expired listing never holds more than the watched links here
    add(
        "shared poller: most requests in one poll interval",
        f"{shared['max_round_requests']}",
        f"<= ceil(expired/100) + 2 = {bound}",
        shared["max_round_requests"] <= bound,
    )
    add("shared poller: TCP connections", f"{shared['connections']}", "<= 2", shared["connections"] <= 2)
    growth = (shared["peak_rss_kb"] - shared["rss_before_kb"]) / 1024
    add("shared poller: peak RSS growth", f"{growth:.0f} MB", "<= 20 MB", growth <= 20)
    if "http" in results:
        ours, theirs = cpu_per_link_poll(shared), cpu_per_link_poll(results["http"])
        add(
            "shared poller: CPU per poll per waiting link",
            f"{ours:.0f} us (HttpSensorTrigger {theirs:.0f} us)",
            "<= 0.2x HttpSensorTrigger's",
            ours <= 0.2 * theirs,
            f"{ours / theirs:.3f}x",
        )
    if "unshared" in results:
        before = results["unshared"]
        add(
            "shared vs one poller each: API requests",
            f"{shared['requests']:,} vs {before['requests']:,}",
            "",
            None,
            f"{shared['requests'] / max(before['requests'], 1):.3f}x",
        )
    limited = results.get("limited")
    if limited is not None:
        add(
            f"shared poller, {RATE_LIMIT}/min limit, poke_interval {LIMITED_POKE_INTERVAL} s: 429 answers",
            f"{limited['throttled']} ({limited['fired']}/{count} fired)",
            "0",
            limited["throttled"] == 0 and limited["fired"] == count,
        )
    else:
        add(
            f"shared poller, {RATE_LIMIT}/min limit, poke_interval {LIMITED_POKE_INTERVAL} s: 429 answers",
            limited_status,
            "0",
            None,
        )
    return out


def scale_goals(count: int, poke_interval: float, shared: dict[str, Any]) -> list[dict[str, str]]:
    """The rows for the shared poller alone at ``count`` waits: requests per interval, memory."""
    bound = math.ceil(count / 100) + 2
    growth = (shared["peak_rss_kb"] - shared["rss_before_kb"]) / 1024
    fired = shared["fired"] == count and shared["statuses"].keys() <= {"success"}
    return [
        {
            "what": f"{count:,} deferred waits in one triggerer (shared poller): requests per poll interval",
            "figure": f"{shared['requests'] / intervals(shared, poke_interval):.1f} mean, "
            f"{shared['max_round_requests']} most; {shared['requests']:,} in all, {shared['fired']:,}/{count:,} fired",
            "ratio": f"{shared['requests'] / count:.3f} per wait",
            "target": f"most <= ceil(n/100) + 2 = {bound}",
            "met": "met" if fired and shared["max_round_requests"] <= bound else "MISSED",
        },
        {
            "what": f"{count:,} deferred waits in one triggerer: memory",
            "figure": f"{growth:.0f} MB RSS growth, {shared['peak_rss_kb'] / 1024:.0f} MB peak",
            "ratio": f"{growth * 1024 / count:.1f} KB per wait",
            "target": "",
            "met": "",
        },
        {
            "what": f"{count:,} deferred waits in one triggerer: CPU per poll per waiting link",
            "figure": f"{cpu_per_link_poll(shared):.0f} us ({shared['cpu_s']:.2f} s in all)",
            "ratio": "",
            "target": "",
            "met": "",
        },
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=1000)
    parser.add_argument("--poke-interval", type=float, default=2.0)
    parser.add_argument("--limit", type=float, default=45.0, help="seconds a fleet may wait before it is stopped")
    parser.add_argument("--only", choices=["shared", "unshared", "http", "limited"], action="append", default=None)
    parser.add_argument(
        "--scale", type=int, default=SCALE, help="also run the shared poller alone with this many waits (0: skip)"
    )
    parser.add_argument("--json", help="also write the goals (figure, target, met) to this JSON file")
    parser.add_argument("--child", choices=["shared", "unshared", "http"], help=argparse.SUPPRESS)
    parser.add_argument("--links-file", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.links_file, args.result_file, args.poke_interval, args.limit)
        return 0

    try:
        import aiohttp  # noqa: F401
        import airflow.providers.http.triggers.http  # noqa: F401

        http_available = True
    except ImportError:
        http_available = False
    arms = args.only or ["shared", "unshared", "http", "limited"]
    if "http" in arms and not http_available:
        arms.remove("http")
    results: dict[str, dict[str, Any]] = {}
    limited_status = "not run"
    with EmulatorProcess() as emu:
        adapter = Adapter(emu.url).start() if "http" in arms else None
        try:
            for arm in arms:
                if arm != "limited":
                    results[arm] = run_arm(arm, emu, adapter, args.links, args.poke_interval, args.limit)
        finally:
            if adapter:
                adapter.stop()
        if "limited" in arms and rate_limit_supported():
            results["limited"] = run_arm(
                "shared",
                emu,
                None,
                args.links,
                args.poke_interval,
                args.limit + 60,
                wave_seconds=LIMITED_POKE_INTERVAL,
                wave_gap=args.poke_interval + 0.5,  # about one poll per wave (per 5 minutes of service time)
                rate_limit=RATE_LIMIT,
            )
        elif "limited" in arms:
            limited_status = "pending: this emulator has no rate limit (--rate-limit) yet"
    print(table(args.links, args.poke_interval, results))
    met = goals(args.links, results, limited_status)
    if args.scale:
        with EmulatorProcess() as emu:
            scaled = run_arm("shared", emu, None, args.scale, args.poke_interval, args.limit + 60)
        print()
        print(table(args.scale, args.poke_interval, {"shared": scaled}))
        met += scale_goals(args.scale, args.poke_interval, scaled)
    print("\nGoals (issue 13):")
    for goal in met:
        ratio = f" ({goal['ratio']})" if goal["ratio"] else ""
        verdict = f" [{goal['met']}]" if goal["met"] else ""
        print(f"- {goal['what']}: {goal['figure']}{ratio}; target {goal['target'] or '-'}{verdict}")
    if not http_available and not args.only:
        print("\n(apache-airflow-providers-http is not installed: HttpSensorTrigger not measured)")
    if args.json:
        Path(args.json).write_text(json.dumps(met))
    return 0


if __name__ == "__main__":
    sys.exit(main())
