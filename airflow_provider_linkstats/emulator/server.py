"""Running the emulator: in a background thread for tests, or in the foreground for the CLI.

Both ways run one uvicorn server per port in one event loop (uvloop and httptools when
installed), sharing one ``EmulatorState``. Sockets are bound before the loop starts, so the port
(a free one when 0) is known as soon as ``start()`` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from zoneinfo import ZoneInfo

import uvicorn

from airflow_provider_linkstats.emulator import spec
from airflow_provider_linkstats.emulator.app import SERVICES, build_app
from airflow_provider_linkstats.emulator.clock import Clock
from airflow_provider_linkstats.emulator.faults import Faults
from airflow_provider_linkstats.emulator.ratelimit import RateLimiter
from airflow_provider_linkstats.emulator.state import EmulatorState
from airflow_provider_linkstats.emulator.stats import Stats
from airflow_provider_linkstats.emulator.store import Store

# Longer than any client's pool keeps an idle connection, so the server never closes one just as
# a client reuses it (which would look like a dropped request).
KEEP_ALIVE_SECONDS = 75
START_TIMEOUT = 15.0


class Emulator:
    """Both Linkstats services on 127.0.0.1: ``with Emulator(api_keys=("k",)) as emu: emu.url``.

    ``analytics_port=None`` serves everything on one port; a number (0 for a free one) serves the
    analytics service there and the links service on ``port``. ``rate_limit`` turns on the real
    limits, scaled: that many requests per client IP per ``rate_limit_window`` seconds (a real
    install: 60 per 60 s), twice that per key on the links service (``key_rate_limit``) and
    ``analytics_rate_limit`` (default: the same) on the analytics service. Off by default.

    ``links_version`` "44" (phpShort 44-45) or "49" (46-49) and ``analytics_version`` "3"
    (phpAnalytics 3.0-3.6) or "31" (3.7 and later) pick the generation each service answers as.
    """

    def __init__(
        self,
        api_keys: Iterable[str] = ("test-key",),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        analytics_port: int | None = None,
        state_file: str | os.PathLike | None = None,
        timezone: str = "UTC",
        base_url: str | None = None,
        log_level: str = "warning",
        rate_limit: int | None = None,
        rate_limit_window: float = 60.0,
        key_rate_limit: int | None = None,
        analytics_rate_limit: int | None = None,
        links_version: str = "44",
        analytics_version: str = "3",
        default_domain: int | None = None,
    ) -> None:
        self._api_keys = tuple(api_keys)
        if not self._api_keys or not all(isinstance(k, str) and k for k in self._api_keys):
            raise ValueError("api_keys must hold at least one non-empty string")
        # One account per key, in this order (account 1 is the first key's).
        self.host = host
        self._ports = {"links": port} if analytics_port is None else {"links": port, "analytics": analytics_port}
        self._base_url = base_url
        self._log_level = log_level
        clock = Clock()
        store = Store(
            clock,
            api_keys=self._api_keys,
            timezone=timezone,
            state_file=state_file,
            links_version=links_version,
            analytics_version=analytics_version,
            default_domain=default_domain,
        )
        self.state = EmulatorState(clock, store, Faults(), Stats(), RateLimiter(clock))
        self.clock, self.store, self.faults, self.stats = clock, self.state.store, self.state.faults, self.state.stats
        self.limiter = self.state.limiter
        self.limiter.configure(rate_limit, rate_limit_window, key_rate_limit, analytics_rate_limit)
        self._sockets: dict[str, socket.socket] = {}
        self._servers: list[uvicorn.Server] = []
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __repr__(self) -> str:  # the keys stay out of it
        return f"Emulator(url={self.url if self._sockets else None!r})"

    @property
    def links_version(self) -> str:
        """The phpShort generation served: "44" or "49"."""
        return self.store.links_version

    @property
    def analytics_version(self) -> str:
        """The phpAnalytics generation served: "3" or "31"."""
        return self.store.analytics_version

    def set_versions(self, links: str | None = None, analytics: str | None = None) -> dict[str, str]:
        """Serve another generation from now on; the records and traffic are dropped (the two
        generations' link rows differ), the accounts get that generation's plan."""
        return self.store.set_versions(links, analytics)

    @property
    def api_key(self) -> str:
        return self._api_keys[0]

    @property
    def url(self) -> str:
        """Base URL of the links service (of both services when they share a port)."""
        return self._url_of("links")

    @property
    def analytics_url(self) -> str:
        """Base URL of the analytics service: its own port, or /analytics on the shared one (both
        services have GET /account and GET /stats/{id}; websites answer at the root too)."""
        if "analytics" in self._sockets:
            return self._url_of("analytics")
        return self._url_of("links") + spec.ANALYTICS_MOUNT

    def configure_account(self, user_id: int = 1, **settings: object) -> dict:
        """See ``Store.configure_account``: api_access, timezone, default_domain, default_space,
        features (the plan's, e.g. ``{"link_stats": False}``)..."""
        return self.store.configure_account(user_id, **settings)

    def record_clicks(
        self, link_id: int, at: dt.datetime | str | None = None, count: int = 1, **visitor: object
    ) -> dict:
        """``count`` clicks on a link at the instant ``at`` (the clock's now by default), with the
        visitor's country, city, platform, browser, device, language, referrer; see ``Store.record_clicks``."""
        return self.store.record_clicks(link_id, at, count, **visitor)

    def record_pageviews(
        self, website_id: int, at: dt.datetime | str | None = None, count: int = 1, **fields: object
    ) -> dict:
        """``count`` pageviews (or custom events) of a website at ``at``; see ``Store.record_pageviews``."""
        return self.store.record_pageviews(website_id, at, count, **fields)

    def record_traffic(self, clicks: Iterable[Mapping] = (), pageviews: Iterable[Mapping] = ()) -> dict:
        """Many of both at once, all or none; see ``Store.record_traffic``."""
        return self.store.record_traffic(clicks, pageviews)

    def reset_counters(self, link_ids: Iterable[int] | None = None, statistics: bool = False) -> dict:
        """Links' ``clicks`` counters back to 0, as the phpShort 46 upgrade; see ``Store.reset_counters``."""
        return self.store.reset_counters(link_ids, statistics)

    def clicks_per_day(self, zone: str = "UTC", link_id: int | None = None) -> dict[tuple[int, str], int]:
        """The truth for a daily load: ``{(link_id, "YYYY-MM-DD"): clicks}`` by calendar day in
        ``zone`` (the zone the generation buckets in: "UTC" for phpShort 44-45, the account's for 46+)."""
        return _per_day(self.store.recorded_clicks(link_id), "link_id", zone)

    def pageviews_per_day(
        self, zone: str = "UTC", website_id: int | None = None, visits: bool = False
    ) -> dict[tuple[int, str], int]:
        """``{(website_id, day): pageviews}`` (``visits=True``: visitors, the pageviews from outside
        the site) by calendar day in ``zone`` (UTC on phpAnalytics 3.x and 31)."""
        rows = [e for e in self.store.recorded_pageviews(website_id) if e.get("event") is None]
        return _per_day([e for e in rows if e.get("visit")] if visits else rows, "website_id", zone)

    def set_rate_limit(
        self, limit: int | None, window: float = 60.0, key_limit: int | None = None, analytics_limit: int | None = None
    ) -> None:
        """Turn the limits on (requests per ``window`` seconds) or off (``limit=None``) at runtime."""
        self.limiter.configure(limit, window, key_limit, analytics_limit)

    def reset(self) -> None:
        self.state.reset()

    # -- in a background thread ----------------------------------------------------------------

    def start(self) -> Emulator:
        if self._thread is not None:
            raise RuntimeError("the emulator is already running")
        self._prepare()
        self._thread = threading.Thread(target=self._run_loop, name="linkstats-emulator", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not all(s.started for s in self._servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the emulator did not start: {self._error!r}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                for server in self._servers:
                    server.force_exit = True
                self._thread.join(timeout=5)
        self._thread = None
        self._close_sockets()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- in the foreground (CLI) -----------------------------------------------------------------

    def run(self, on_ready: Callable[[Emulator], None] | None = None) -> None:
        """Serve until SIGINT or SIGTERM (a second SIGINT stops at once)."""
        self._prepare()

        def handle(signum: int, frame: object) -> None:
            for server in self._servers:
                if server.should_exit and signum == signal.SIGINT:
                    server.force_exit = True
                server.should_exit = True

        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._run_loop(on_ready)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._close_sockets()
        if self._error is not None:
            raise self._error

    # -- internals -------------------------------------------------------------------------------

    def _prepare(self) -> None:
        try:
            for service, port in self._ports.items():
                self._sockets[service] = _listening_socket(self.host, port)
        except OSError:
            self._close_sockets()
            raise
        self.store.base_url = self._base_url or self.url
        shared = len(self._sockets) == 1  # one port serves both services
        self._servers = [
            _server(build_app(self.state, SERVICES if shared else (service,), shared=shared), self._log_level)
            for service in self._sockets  # same order as the sockets, paired in _serve
        ]

    def _run_loop(self, on_ready: Callable[[Emulator], None] | None = None) -> None:
        loop = _new_event_loop()
        try:
            loop.run_until_complete(self._serve(on_ready))
        except BaseException as error:  # reported by start() or run()
            self._error = error
        finally:
            loop.close()

    async def _serve(self, on_ready: Callable[[Emulator], None] | None) -> None:
        sockets = list(self._sockets.values())
        tasks = [asyncio.ensure_future(s.serve(sockets=[sock])) for s, sock in zip(self._servers, sockets, strict=True)]
        while not all(s.started for s in self._servers) and not any(t.done() for t in tasks):
            await asyncio.sleep(0.01)
        if on_ready is not None and all(s.started for s in self._servers):
            on_ready(self)
        await asyncio.gather(*tasks)

    def _url_of(self, service: str) -> str:
        sock = self._sockets.get(service)
        if sock is None:
            raise RuntimeError("the emulator is not started")
        host, port = sock.getsockname()[:2]
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def _close_sockets(self) -> None:
        for sock in self._sockets.values():
            with contextlib.suppress(OSError):
                sock.close()
        self._sockets.clear()


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals to ``Emulator.run`` (one handler for every port)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29's name for the same hook
        pass


def _server(app: Any, log_level: str) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_config=None,  # never reconfigure the host process's logging (pytest, Airflow)
        log_level=log_level,
        access_log=False,  # per-request logging would cost more than the request
        lifespan="off",
        proxy_headers=False,  # the client address is what the statistics count
        server_header=False,
        date_header=False,  # middleware.ServerDate: the emulator's clock, not the host's
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    return _Server(config)


def _listening_socket(host: str, port: int) -> socket.socket:
    """Bound with an explicit IPPROTO_TCP: asyncio turns Nagle off (TCP_NODELAY) only on sockets
    that say so, and with Nagle on every response waits ~40 ms for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(socket.SOMAXCONN)
    except OSError:
        sock.close()
        raise
    return sock


def _per_day(rows: Iterable[Mapping], key: str, zone: str) -> dict[tuple[int, str], int]:
    tz = ZoneInfo(zone)
    days: dict[tuple[int, str], int] = {}
    for row in rows:
        day = dt.datetime.fromisoformat(row["at"]).astimezone(tz).date().isoformat()
        days[(row[key], day)] = days.get((row[key], day), 0) + int(row.get("count", 1))
    return dict(sorted(days.items()))


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
