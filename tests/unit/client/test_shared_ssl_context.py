"""The process's one TLS context (client/aio.py): triggers waiting for its build wait on their own."""

from __future__ import annotations

import asyncio
import ssl
import threading

import pytest

from airflow_provider_linkstats.client import aio


@pytest.fixture
def held_build(monkeypatch):
    """The build, held in its thread until the test lets it go (so a cancel lands while it runs)."""
    monkeypatch.setattr(aio, "_ssl_contexts", {})
    monkeypatch.setattr(aio, "_ssl_building", {})
    go, build = threading.Event(), aio._build_ssl_context

    def held(verify: bool) -> ssl.SSLContext:
        go.wait(10)
        return build(verify)

    monkeypatch.setattr(aio, "_build_ssl_context", held)
    return go


def test_a_cancelled_waiter_leaves_the_others_their_context(held_build):
    async def main():
        first = asyncio.create_task(aio.shared_ssl_context(True))
        second = asyncio.create_task(aio.shared_ssl_context(True))
        await asyncio.sleep(0.05)  # both wait on the build
        first.cancel()
        held_build.set()
        context = await asyncio.wait_for(second, 10)
        with pytest.raises(asyncio.CancelledError):
            await first
        return context, await aio.shared_ssl_context(True)

    context, later = asyncio.run(main())
    assert isinstance(context, ssl.SSLContext) and later is context
