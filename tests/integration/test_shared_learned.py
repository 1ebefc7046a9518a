"""The learned facts in a real Redis (client/shared_learned.py): the lock of the one who discovers
is its own to drop, and the triggerer's path never blocks its event loop on the sync client."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore
from airflow_provider_linkstats.client.shared import StoreHealth
from airflow_provider_linkstats.client.shared_learned import SharedLearnedStore
from tests.support.redis_server import RedisServer

KEY = EntryKey.of("linkstats_links_default", "http://links.example", "the key")
ROOT = "http://links.example/api/v1"
LOCK = f"linkstats:lock:{KEY.name}"
ENTRY = f"linkstats:learned:{KEY.name}"


@pytest.fixture
def redis_server():
    with RedisServer() as server:
        yield server


def _store(tmp_path, sync_client, aclient=None) -> SharedLearnedStore:
    return SharedLearnedStore(LearnedStore(tmp_path / "cache"), StoreHealth("the test's Redis"), sync_client, aclient)


def _async_client(server: RedisServer):
    import redis.asyncio

    return redis.asyncio.Redis(host="127.0.0.1", port=server.port)


def test_a_learner_whose_lock_expired_leaves_the_next_holders_lock(tmp_path, redis_server):
    redis = redis_server.client()

    def learn(previous):
        time.sleep(0.3)  # past the lock's 0.1 s: another host takes it
        redis.set(LOCK, b"another host", px=5000)
        return {"root": ROOT}

    assert _store(tmp_path, redis).recall_or_learn(KEY, [ROOT], learn, wait=0.1) == ({"root": ROOT}, False)
    assert redis.get(LOCK) == b"another host"


def test_an_async_learner_whose_lock_expired_leaves_the_next_holders_lock(tmp_path, redis_server):
    redis = redis_server.client()

    async def learn(previous):
        await asyncio.sleep(0.3)
        redis.set(LOCK, b"another host", px=5000)
        return {"root": ROOT}

    async def main():
        aredis = _async_client(redis_server)
        try:
            store = _store(tmp_path, redis, lambda: aredis)
            return await store.arecall_or_learn(KEY, [ROOT], learn, wait=0.1)
        finally:
            await aredis.aclose()

    assert asyncio.run(main()) == ({"root": ROOT}, False)
    assert redis.get(LOCK) == b"another host"


def test_the_async_path_drops_a_bad_entry_without_the_sync_client(tmp_path, redis_server):
    """The sync client here reaches a server that never answers: touching it from the event loop
    would stall the loop for its timeout and set the store aside."""
    import redis as redis_py

    redis_server.client().set(ENTRY, b"{not json", ex=60)

    async def learn(previous):
        return {"root": ROOT}

    async def main(store):
        aredis = _async_client(redis_server)
        store._aclient = lambda: aredis
        gaps, ticking = [], True

        async def tick():
            last = time.monotonic()
            while ticking:
                await asyncio.sleep(0.01)
                gaps.append(time.monotonic() - last)
                last = time.monotonic()

        ticker = asyncio.create_task(tick())
        try:
            return await store.arecall_or_learn(KEY, [ROOT], learn, wait=1.0), max(gaps, default=0.0)
        finally:
            ticking = False
            await ticker
            await aredis.aclose()

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        never = redis_py.Redis(host="127.0.0.1", port=port, socket_timeout=0.5, socket_connect_timeout=0.5)
        store = _store(tmp_path, never)
        (facts, recalled), longest_gap = asyncio.run(main(store))
    assert (facts, recalled) == ({"root": ROOT}, False)
    assert store.health.faults == 0
    assert longest_gap < 0.25, longest_gap
    assert json.loads(redis_server.client().get(ENTRY))["facts"] == {"root": ROOT}  # learned again, written anew
