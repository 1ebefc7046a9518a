"""The asynchronous transport (httpx), for the trigger: same requests, same answers, no blocking call.

Requests are built and answers read by ``protocol`` (and ``expiry``), exactly as the synchronous
client does, so the deferrable sensor cannot drift from the poking one. This module only moves
bytes and maps httpx's errors onto ``LinkstatsTransportError``, telling apart a request that never
left (``sent=False``) from one whose answer was lost.

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
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

import httpx

try:  # httpcore loads anyio's asyncio backend on the first request: load it with this module, not in a run()
    import anyio._backends._asyncio  # noqa: F401
except ImportError:  # pragma: no cover - another anyio layout; then it is loaded on first use
    pass

from airflow_provider_linkstats import __version__
from airflow_provider_linkstats.client.errors import LinkstatsApiError, LinkstatsTransportError
from airflow_provider_linkstats.client.expiry import Poke, PokeOutcome
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, raise_for_status
from airflow_provider_linkstats.client.retry import RetryPolicy

log = logging.getLogger(__name__)

USER_AGENT = f"airflow-provider-linkstats/{__version__}"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 30.0
# Keep the connection open between pokes only when the next one comes sooner than this: servers
# drop idle connections after 5-75 s, and a trigger that polls every few minutes should not hold a
# socket (on both ends) while it sleeps.
KEEP_ALIVE_MAX_IDLE = 20.0

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
        context = await asyncio.wrap_future(future)
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


class AsyncLinkstatsClient:
    """Talks to one service with one API key over one ``httpx.AsyncClient``; use ``async with``.

    Build it with ``await AsyncLinkstatsClient.open(...)``. The key lives only in the httpx
    client's default headers: it is in no attribute, repr or message.
    """

    def __init__(
        self,
        root: str,
        api_key: str,
        *,
        ssl_context: ssl.SSLContext,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        retry: RetryPolicy | None = None,
        keep_alive: bool = True,
    ) -> None:
        self.root = root.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._client = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json", "User-Agent": USER_AGENT},
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
            verify=ssl_context,
            trust_env=False,  # proxies and .netrc from the environment must not see our key
            follow_redirects=False,
            limits=httpx.Limits(
                max_connections=4,
                max_keepalive_connections=1 if keep_alive else 0,
                keepalive_expiry=KEEP_ALIVE_MAX_IDLE + 5.0,
            ),
        )

    @classmethod
    async def open(
        cls,
        root: str,
        api_key: str,
        *,
        verify_ssl: bool = True,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        retry: RetryPolicy | None = None,
        keep_alive: bool = True,
    ) -> AsyncLinkstatsClient:
        return cls(
            root,
            api_key,
            ssl_context=await shared_ssl_context(verify_ssl),
            read_timeout=read_timeout,
            connect_timeout=connect_timeout,
            retry=retry,
            keep_alive=keep_alive,
        )

    def __repr__(self) -> str:
        return f"AsyncLinkstatsClient(root={self.root!r})"

    @property
    def _secrets(self) -> tuple[str, ...]:
        """What to redact from server messages: the key, read back from the client's header (no attribute holds it)."""
        return (str(self._client.headers["Authorization"]).removeprefix("Bearer "),)

    async def __aenter__(self) -> AsyncLinkstatsClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def send(self, request: ApiRequest) -> ApiResponse:
        """One attempt: the answer whatever its status, or ``LinkstatsTransportError``."""
        headers = {}
        content = None
        if request.method in ("POST", "PUT"):
            content = urlencode(list(request.form)).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            response = await self._client.request(
                request.method,
                self.root + request.path,
                params=list(request.params) or None,
                content=content,
                headers=headers or None,
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol) as error:
            raise _transport_error(request, error, sent=False) from None
        except httpx.HTTPError as error:  # read/write timeout, reset, truncated answer...
            raise _transport_error(request, error, sent=True) from None
        return ApiResponse(response.status_code, response.headers, response.content)

    async def call(self, request: ApiRequest) -> ApiResponse:
        """Send ``request`` under the retry policy and return its 2xx response, or raise."""
        if self.retry.max_retries == 0:  # the trigger's case: its poll loop is the retry
            response = await self.send(request)
            raise_for_status(request, response, self._secrets)
            return response
        async for attempt in self.retry.async_retrying(request, log):
            with attempt:
                response = await self.send(request)
                raise_for_status(request, response, self._secrets)
        return response


async def adrive(poke: Poke, call: Callable[[ApiRequest], Awaitable[ApiResponse]]) -> PokeOutcome:
    """Run one poke (see ``expiry.drive``) with an async ``call``."""
    try:
        request = next(poke)
        while True:
            try:
                response = await call(request)
            except LinkstatsApiError as error:
                request = poke.throw(error)
            else:
                request = poke.send(response)
    except StopIteration as stop:
        return stop.value


def _transport_error(request: ApiRequest, error: Exception, *, sent: bool) -> LinkstatsTransportError:
    what = "no connection could be made" if not sent else "the answer was lost"
    return LinkstatsTransportError(f"{request.describe()}: {what} ({type(error).__name__})", sent=sent)
