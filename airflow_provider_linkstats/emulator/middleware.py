"""The outer ASGI layers: the server's Date header, request statistics and injected faults, then
the per-IP rate limit.

Pure ASGI rather than Starlette's BaseHTTPMiddleware, so the hot path costs a dict lookup and a
dropped connection can be produced below the framework.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from email.utils import format_datetime
from typing import Any

from airflow_provider_linkstats.emulator import paths, spec
from airflow_provider_linkstats.emulator.faults import AfterPage, FaultRule, Faults
from airflow_provider_linkstats.emulator.ratelimit import RateLimiter, Verdict
from airflow_provider_linkstats.emulator.stats import Stats

Scope = dict[str, Any]


def is_counted(path: str) -> bool:
    return paths.api_relative(path) is not None or path.endswith(spec.TRACKING_PATH)


class ServerDate:
    """Every answer's ``Date`` is the emulator's clock, as a real install's is its own server's
    clock: a test that sets the clock back ten minutes has a service whose clock is ten minutes
    behind the worker's, in its answers as in its expiry decisions."""

    def __init__(self, app: Any, clock: Any) -> None:
        self.app = app
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        await self.app(scope, receive, _Dated(send, self.clock).send)


class _Dated:
    """``send`` with the Date header stamped; a bound method whose owner still shows the server's
    request cycle (``transport``, ``disconnected``), which ``_drop_connection`` needs."""

    def __init__(self, send: Any, clock: Any) -> None:
        self._send = send
        self._clock = clock
        self._cycle = getattr(send, "__self__", None)

    @property
    def transport(self) -> Any:
        return getattr(self._cycle, "transport", None)

    @property
    def disconnected(self) -> bool:
        return getattr(self._cycle, "disconnected", True)

    async def send(self, message: Any) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
            stamp = format_datetime(self._clock.now(), usegmt=True).encode()
            message = {**message, "headers": [*kept, (b"date", stamp)]}
        await self._send(message)


class FaultsAndStats:
    def __init__(self, app: Any, faults: Faults, stats: Stats, store: Any = None, clock: Any = None) -> None:
        self.app = app
        self.faults = faults
        self.stats = stats
        self.store = store  # for the after-page changes (a delete after a listing's page)
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not is_counted(scope["path"]):
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        entry = self.stats.record(method, path, scope.get("query_string", b""), scope.get("client"))

        async def noting_status(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry[3] = message["status"]
            await send(message)

        decision = self.faults.take(method, path)
        if decision.latency:
            await asyncio.sleep(decision.latency)
        if decision.fail is not None and decision.fail.commit_after is not None:
            body = await _read_body(receive)  # kept: the request is handled after its answer went out
            await _answer(noting_status, decision.fail)  # a gateway answers at once...
            later = asyncio.get_running_loop().create_task(  # ...and the PHP request commits later
                _handle_later(self.app, scope, body, decision.fail.commit_after)
            )
            _RUNNING_ON.add(later)  # held until done (the loop keeps only a weak reference)
            later.add_done_callback(_RUNNING_ON.discard)
        elif decision.fail is not None and decision.fail.after_commit:
            await self.app(scope, receive, _discard)  # the change is committed...
            await _answer(noting_status, decision.fail)  # ...and a gateway answers in its place
        elif decision.fail is not None:
            await _answer(noting_status, decision.fail)
        elif decision.drop:
            await self.app(scope, receive, _discard)  # the change is committed...
            await _drop_connection(send)  # ...and the client never hears of it
        else:
            after = self.faults.take_after(method, path, _query(scope))
            sending = noting_status if after is None else self._changing(noting_status, after, path)
            await self.app(scope, receive, sending)

    def _changing(self, send: Any, rule: AfterPage, path: str) -> Any:
        """``send`` that applies ``rule`` (deletes, a clock step) before the answer's last byte leaves."""
        table = (paths.api_relative(path) or path).strip("/").split("/", 1)[0]

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body"):
                for record_id in rule.delete:
                    try:
                        self.store.delete(table, record_id)
                    except Exception:  # gone already: passed over
                        pass
                if rule.advance:
                    self.clock.advance(rule.advance)
            await send(message)

        return sending


def _query(scope: Scope) -> dict[str, str]:
    from urllib.parse import parse_qsl

    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))


class ClientRateLimit:
    """``throttle:60,1`` in front of authentication, keyed by client IP; its headers are the ones
    a client sees, because this outer limiter writes them last."""

    def __init__(self, app: Any, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or paths.api_relative(path) is None:
            await self.app(scope, receive, send)
            return
        service = paths.service_of(path)
        limits = self.limiter.limits
        limit = limits.analytics if service == "analytics" else limits.per_ip
        verdict = self.limiter.hit((service, "ip", client_address(scope)), limit)
        if verdict is None:
            await self.app(scope, receive, send)
            return
        if not verdict.allowed:
            await too_many(send, verdict, wants_json(scope))
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {b"x-ratelimit-limit", b"x-ratelimit-remaining"}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                extra = [(k.lower().encode(), v.encode()) for k, v in verdict.headers().items()]
                message = {**message, "headers": kept + extra}
            await send(message)

        await self.app(scope, receive, with_headers)


_LOOPBACK = ("127.0.0.1", "::1")


def client_address(scope: Mapping[str, Any]) -> str:
    """The address Laravel's ``request->ip()`` gives behind ``TrustProxies``: a request from a trusted
    proxy (here: loopback, where tests run their forwarding proxies) is counted for the address its
    ``X-Forwarded-For`` ends with (the one that proxy added); any other for its peer's."""
    peer = (scope.get("client") or ("unknown",))[0]
    if peer not in _LOOPBACK:
        return peer
    headers = {k.lower(): v for k, v in scope.get("headers", [])}
    forwarded = headers.get(b"x-forwarded-for", b"").decode("latin-1").split(",")[-1].strip()
    return forwarded or peer


def wants_json(scope: Mapping[str, Any]) -> bool:
    """Laravel's expectsJson(): the first Accept type is JSON, or an XHR that accepts anything."""
    headers = {k.lower(): v for k, v in scope.get("headers", [])}
    accept = headers.get(b"accept", b"").decode("latin-1").lower()
    first = accept.split(",")[0].split(";")[0].strip()
    ajax = headers.get(b"x-requested-with", b"").decode("latin-1") == "XMLHttpRequest"
    return "/json" in first or "+json" in first or (ajax and first in ("", "*/*"))


async def too_many(send: Any, verdict: Verdict, as_json: bool) -> None:
    if as_json:
        body, content_type = json.dumps({"message": spec.TOO_MANY}).encode(), b"application/json"
    else:
        body, content_type = f"<!DOCTYPE html><title>{spec.TOO_MANY}</title>".encode(), b"text/html; charset=UTF-8"
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in verdict.headers().items()]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_RUNNING_ON: set[asyncio.Task[None]] = set()  # requests handled after their gateway answered (``commit_after``)


async def _read_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return body
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _handle_later(app: Any, scope: Scope, body: bytes, delay: float) -> None:
    """Handle a request ``delay`` seconds from now (its answer discarded), from its kept body."""
    await asyncio.sleep(delay)
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    await app(scope, replay, _discard)


async def _answer(send: Any, rule: FaultRule) -> None:
    if rule.body is None:
        body = json.dumps({"message": f"Injected fault: HTTP {rule.status}."}).encode()
        content_type = "application/json"
    else:
        body, content_type = rule.body.encode(), rule.content_type
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    if rule.retry_after is not None:
        headers.append((b"retry-after", rule.retry_after.encode()))
    await send({"type": "http.response.start", "status": rule.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _discard(message: Any) -> None:
    pass


async def _drop_connection(send: Any) -> None:
    """Abort the TCP connection under uvicorn (its ``send`` is a method of the request cycle,
    which holds the transport). Elsewhere, start a response and fail it, which also cuts it short."""
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise ConnectionAbortedError("injected fault: connection dropped")
    transport.abort()
    # Let the server see the connection lost before this call returns, so it does not try to
    # answer "returned without starting a response" on a dead socket.
    for _ in range(100):
        if getattr(cycle, "disconnected", True):
            break
        await asyncio.sleep(0)
