"""The asynchronous transport (httpx), for the trigger: same requests, same answers, no blocking call.

The state and the reading of answers are ``sending.SendingClient``'s, as in the synchronous client;
this module only moves bytes and maps httpx's errors onto ``LinkstatsTransportError``, telling apart
a request that never left (``sent=False``) from one whose answer was lost.

Thousands of triggers may share one event loop, so each client is small: a pool of at most a few
connections, one kept alive between pokes only when the next poke comes soon, and one TLS context
shared by every client of the process (building one reads the CA bundle from disk, which is done
once, in a thread).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import ssl
import threading
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from airflow_provider_linkstats.client.auth import ApiKey
from airflow_provider_linkstats.client.clock import ServiceClock, adopt_profile_clock
from airflow_provider_linkstats.client.discovery import ServiceProfile, discover
from airflow_provider_linkstats.client.errors import transport_error
from airflow_provider_linkstats.client.generations import Generation
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, adrive, request_url
from airflow_provider_linkstats.client.ratelimit import RateLimiter
from airflow_provider_linkstats.client.retry import RetryPolicy
from airflow_provider_linkstats.client.sending import SendingClient
from airflow_provider_linkstats.client.settings import (
    ASYNC_POOL_SIZE,
    COMMON_HEADERS,
    KEEP_ALIVE_MAX_IDLE,
    ClientSettings,
)

log = logging.getLogger(__name__)

KEEP_CLOCK_WAIT = 5.0  # seconds ``aclose`` waits for the host's learned facts to take the clock heard


def _httpx() -> Any:
    """The async HTTP stack, loaded on first use, not with this module: the scheduler imports the
    trigger module on every parse of a DAG that names it, and only the triggerer sends requests.

    httpcore loads anyio's asyncio backend on the first request; it is loaded here with httpx, in the
    thread that builds the TLS context (``shared_ssl_context``), so no import blocks an event loop.
    """
    import httpx

    try:
        import anyio._backends._asyncio  # noqa: F401
    except ImportError:  # pragma: no cover - another anyio layout; then it is loaded on first use
        pass
    return httpx


_ssl_contexts: dict[bool, ssl.SSLContext] = {}
_ssl_building: dict[bool, concurrent.futures.Future[ssl.SSLContext]] = {}
_ssl_lock = threading.Lock()  # guards the two dicts; held for a lookup only, never across I/O


async def shared_ssl_context(verify: bool) -> ssl.SSLContext:
    """One TLS context per process and setting, built once in a thread (it reads the CA bundle).

    A thousand triggers starting together all wait for that one build: without the shared future
    each would build its own, and the GIL would serialise a thousand CA-bundle parses.
    """
    ready = _ssl_contexts.get(verify)
    if ready is not None:
        return ready
    with _ssl_lock:
        future = _ssl_building.get(verify)
        if future is None:
            future = _ssl_building[verify] = _build_in_thread(verify)
    try:
        # Shielded: a cancelled trigger would cancel the shared future, so every other waiter too.
        context = await asyncio.shield(asyncio.wrap_future(future))
    except BaseException:
        with _ssl_lock:
            if _ssl_building.get(verify) is future and future.done():
                del _ssl_building[verify]  # let a later trigger try again
        raise
    return _ssl_contexts.setdefault(verify, context)


def _build_in_thread(verify: bool) -> concurrent.futures.Future[ssl.SSLContext]:
    """A future for the context, usable from any event loop (a plain thread, no executor to own)."""
    future: concurrent.futures.Future[ssl.SSLContext] = concurrent.futures.Future()

    def build() -> None:
        try:
            _httpx()  # the imports too, off the event loop
            future.set_result(_build_ssl_context(verify))
        except BaseException as error:  # pragma: no cover - a broken CA bundle
            future.set_exception(error)

    threading.Thread(target=build, name="linkstats-tls-context", daemon=True).start()
    return future


def _build_ssl_context(verify: bool) -> ssl.SSLContext:
    if not verify:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()


class AsyncLinkstatsClient(SendingClient):
    """Talks to one service with one API key over one ``httpx.AsyncClient``; use ``async with``.

    Build it with ``await AsyncLinkstatsClient.open(settings, key)`` (the hook's
    ``get_async_client()`` does). The key lives only in its ``ApiKey``, which signs each request:
    it is in no header default, repr or message. ``clock_source`` and ``clock_measured`` block (a
    file, maybe the shared store), so each runs in a thread, never on the event loop.
    """

    def __init__(
        self,
        settings: ClientSettings,
        api_key: ApiKey | str,
        *,
        ssl_context: ssl.SSLContext,
        retry: RetryPolicy | None = None,
        keep_alive: bool = True,
        max_connections: int = ASYNC_POOL_SIZE,
        limiter: RateLimiter | None = None,
    ) -> None:
        super().__init__(settings, api_key, limiter=limiter, retry=retry)
        self.root = self.root.rstrip("/")
        self.clock.stepped = self._keep_clock  # a step heard here is kept for the host at once
        self._keeping: set[asyncio.Task[None]] = set()  # those writes, awaited by ``aclose``
        httpx = _httpx()
        self._client = httpx.AsyncClient(
            headers=COMMON_HEADERS,
            auth=self._auth,
            timeout=httpx.Timeout(settings.read_timeout, connect=settings.connect_timeout),
            verify=ssl_context,
            trust_env=False,  # proxies and .netrc from the environment must not see our key
            follow_redirects=False,
            limits=httpx.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max_connections if keep_alive else 0,
                keepalive_expiry=KEEP_ALIVE_MAX_IDLE + 5.0,
            ),
        )

    @classmethod
    async def open(cls, settings: ClientSettings, api_key: ApiKey | str, **kwargs: object) -> AsyncLinkstatsClient:
        """A client whose TLS context is the process's shared one (built once, off the event loop)."""
        return cls(settings, api_key, ssl_context=await shared_ssl_context(settings.verify_ssl), **kwargs)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"AsyncLinkstatsClient(root={self.root!r})"

    async def __aenter__(self) -> AsyncLinkstatsClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._keeping:  # the host's learned facts take what this client heard before it goes
            await asyncio.wait(set(self._keeping), timeout=KEEP_CLOCK_WAIT)
        await self._client.aclose()

    async def call(self, request: ApiRequest) -> ApiResponse:
        """Send ``request`` under the retry policy and return its 2xx response, or raise."""

        async def attempt(tried: Any) -> ApiResponse:
            return self._checked(request, await self.send(request), tried)

        return await self.retry.arun(request, attempt, log)

    async def probe(self, request: ApiRequest) -> ApiResponse:
        """The raw answer whatever its status (discovery reads 404 and 422), after waiting out a 429
        or a 502-504 under the retry policy like any request."""

        async def attempt(tried: Any) -> ApiResponse:
            return self._raw(request, await self.send(request), tried)

        return await self.retry.arun(request, attempt, log)

    async def send(self, request: ApiRequest) -> ApiResponse:
        """One attempt, paced by the rate limiter: the answer whatever its status, or ``LinkstatsTransportError``."""
        await self.limiter.await_slot(self.settings.max_rate_limit_wait)
        request = self._at_send(request)
        headers = dict(request.headers)
        content = None
        if request.method in ("POST", "PUT"):
            content = urlencode(list(request.form)).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        sent_at, sent_wall = self.limiter.now(), self.clock.stamp()
        httpx = _httpx()
        url = request_url(self.root, request)
        where = {"conn_id": self.settings.conn_id, "scheme_assumed": self.settings.scheme_assumed}
        try:
            response = await self._client.request(
                request.method,
                (request.root or self.root) + request.path,
                params=list(request.params) or None,
                content=content,
                headers=headers or None,
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol) as error:
            self.limiter.release()
            raise transport_error(request.method, url, error, sent=False, **where) from None
        except httpx.HTTPError as error:  # read/write timeout, reset, truncated answer...
            self.limiter.release()
            raise transport_error(request.method, url, error, sent=True, **where) from None
        answer = ApiResponse(
            response.status_code, response.headers, response.content, url, self.settings.conn_id, self._auth.redact
        )
        return self._observed(request, answer, sent_at, sent_wall)

    async def discover(
        self,
        service: str,
        *,
        roots: tuple[str, ...] | None = None,
        generation: Generation | None = None,
        account: bool = False,
        known: ServiceProfile | None = None,
    ) -> ServiceProfile:
        """``LinkstatsClient.discover``: the same plan, driven with ``await``."""
        plan = discover(service, roots or (self.root,), generation, account=account, known=known)
        return self.adopt(await adrive(plan, self.probe))

    def adopt(self, profile: ServiceProfile) -> ServiceProfile:
        """Use the API root discovery found (and the service's clock as the host measured it, until
        this client hears the service itself)."""
        adopt_profile_clock(self.clock, profile)
        if profile.root != self.root:
            self.root = profile.root.rstrip("/")
            self.settings = replace(self.settings, root=profile.root)
        return profile

    async def ensure_clock(self) -> ServiceClock:
        """The service's clock, known before a decision that needs it (``LinkstatsClient.ensure_clock``):
        from an answer, a handed measurement, the host's learned facts (``recall_clock``), else one
        cheap read (``GET /account``, its answer's Date; kept for the host), at most once per client."""
        if not self.clock.known:
            await self.recall_clock()
        if not self.clock.known and not getattr(self, "_clock_read", False):
            self._clock_read = True
            log.info("Linkstats: reading the service's clock (one GET /account) before a decision that needs it")
            await self.probe(ApiRequest("GET", "/account"))
            if self.clock.known:
                self._keep_clock(self.clock)
        return self.clock

    async def recall_clock(self) -> bool:
        """Start the clock from the offset the host's learned facts hold (``clock_source``, read in a
        thread: a file, maybe the shared store), unless it is known already. True when it is known."""
        if not self.clock.known and self.clock_source is not None:
            await asyncio.to_thread(self.clock_source, self.clock)
        return self.clock.known

    def _keep_clock(self, clock: ServiceClock) -> None:
        """Hand what this client heard of the clock (a step, a read made for it) to ``clock_measured``
        in a thread; called on the event loop's thread (``observe`` runs in ``send``), it never waits."""
        if self.clock_measured is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - a clock observed outside the event loop
            return
        task = loop.create_task(asyncio.to_thread(self.clock_measured, clock))
        self._keeping.add(task)
        task.add_done_callback(self._kept)

    def _kept(self, task: asyncio.Task[None]) -> None:
        self._keeping.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("Linkstats: could not keep the service's clock for this host (%r)", task.exception())
