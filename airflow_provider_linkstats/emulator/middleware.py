"""The outermost ASGI layer: counts API requests and applies the injected faults.

Pure ASGI rather than a Starlette BaseHTTPMiddleware, so the hot path costs a dict lookup and a
dropped connection can be produced below the framework.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from airflow_provider_linkstats.client.contract import API_PREFIX
from airflow_provider_linkstats.emulator.faults import FaultRule, Faults
from airflow_provider_linkstats.emulator.stats import Stats

Scope = dict[str, Any]


class FaultsAndStats:
    def __init__(self, app: Any, faults: Faults, stats: Stats) -> None:
        self.app = app
        self.faults = faults
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(API_PREFIX):
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        self.stats.record(method, path, scope.get("query_string", b""), scope.get("client"))
        decision = self.faults.take(method, path)
        if decision.latency:
            await asyncio.sleep(decision.latency)
        if decision.fail is not None:
            await _answer(send, decision.fail)
        elif decision.drop:
            await self.app(scope, receive, _discard)  # the change is committed...
            await _drop_connection(send)  # ...and the client never hears of it
        else:
            await self.app(scope, receive, send)


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
