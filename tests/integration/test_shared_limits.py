"""The shared windows take the limits the service announces (issue 42): an install that allows
more than the generation's 60 a window per address is used to the full, one that lowers its limit
mid-run is followed, and what one host learns is in Redis for every host.

The hosts are processes of their own (tests/support/shared_host.py, through
``test_shared_state._run_hosts``), behind one address (the default): the deployment's address
window is the one the announced limit sizes.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import API_KEY, connection_json
from tests.integration.test_shared_state import _created, _run_hosts
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

WINDOW = 15.0  # seconds of the emulator's windows: 240 a window asks 16 requests a second of the machine
ANNOUNCED = 240  # the emulator's limit per address (its per-key one: twice that), four times the generation's


@pytest.fixture
def redis_server():
    with RedisServer() as server:
        yield server


@pytest.fixture
def generous_emulator():
    from airflow_provider_linkstats.emulator import Emulator

    with Emulator(api_keys=(API_KEY,), rate_limit=ANNOUNCED, rate_limit_window=WINDOW) as emulator:
        yield emulator


def _stored_limits(redis_server) -> tuple[dict, int]:
    redis = redis_server.client()
    (key,) = redis.keys("linkstats:limits:*")
    return json.loads(redis.get(key)), redis.ttl(key)


def _budget(**extras):
    """A fresh process's shared budget for the default connection (no answer seen yet)."""
    from airflow_provider_linkstats.client.learned import fingerprint
    from airflow_provider_linkstats.hooks.shared_state import budget_for, shared_state

    return budget_for(
        shared_state(), service="links", api_key_fingerprint=fingerprint(API_KEY), extras=extras,
        window=None, asynchronous=False,
    )  # fmt: skip


def test_the_announced_limit_is_written_back_for_every_host(tmp_path, generous_emulator, monkeypatch, redis_server):
    from airflow_provider_linkstats.hooks import shared_state
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    monkeypatch.setattr(shared_state, "_STATES", {})
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(generous_emulator.url))
    monkeypatch.setenv("AIRFLOW_CONN_SHARED_REDIS", redis_server.url)
    monkeypatch.setenv("AIRFLOW__LINKSTATS__SHARED_STATE_CONN_ID", "shared_redis")
    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", str(tmp_path / "cache"))
    assert _budget().address_limit == 60  # the generation's, before anything is announced
    hook = LinkstatsLinksHook()
    hook.create_link("https://example.com/a")
    hook.create_link("https://example.com/b")  # its take writes back what the first answer said
    assert (hook.client.limiter.shared.address_limit, hook.client.limiter.shared.key_limit) == (240, 480)
    stored, ttl = _stored_limits(redis_server)
    assert (stored["address"], stored["key"]) == (240, 480) and 0 < ttl <= 3600, (stored, ttl)
    # Another host, before any answer of its own: its first take reads what this one learned.
    other = _budget()
    assert other.take() == 0.0
    assert (other.address_limit, other.key_limit) == (240, 480)
    pinned = _budget(rate_limit_per_key=50)  # the connection's extra wins over what was learned
    assert pinned.take() == 0.0
    assert (pinned.address_limit, pinned.key_limit) == (240, 50)
    # A planted or garbled entry changes nothing: a fresh host stays on the generation's limits.
    redis = redis_server.client()
    (key,) = redis.keys("linkstats:limits:*")
    planted = {"address": 10**9, "address_from": "announced", "key": 10**9, "key_from": "learned"}
    for value in (json.dumps(planted), b"{not json", json.dumps({**stored, "address": "9999"}), b"7" * 300):
        redis.set(key, value, ex=60)
        fresh = _budget()
        assert fresh.take() == 0.0
        assert (fresh.address_limit, fresh.key_limit) == (60, 120), value


def test_three_hosts_use_the_announced_limit_to_the_full(tmp_path, generous_emulator, redis_server):
    """Before: the store's windows held the deployment to the generation's 60 a window (the e2e
    cleanup at 60 a minute against its emulator's 720): 330 creates took 6 windows. Now 2."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    reports, throttled = _run_hosts(
        tmp_path, generous_emulator, redis_server.url, links=110, own_addresses=False, barrier=barrier, window=WINDOW
    )
    assert [report["made"] for report, _ in reports] == [110, 110, 110]
    assert throttled == 0, generous_emulator.stats.endpoints()
    assert _created(generous_emulator) == 330
    wall = max(report["ended"] for report, _ in reports) - generous_emulator.go
    # 330 at 240 a window: the second window's first 90 (our window lasts 1 s longer than the
    # service's); at the generation's 60 a window: 6 windows (84 s).
    assert wall < 3 * WINDOW, f"{wall:.1f} s for 330 creates at {ANNOUNCED} per {WINDOW:g} s"
    stored, _ = _stored_limits(redis_server)
    assert stored["address"] == ANNOUNCED


def test_a_limit_lowered_mid_run_is_followed(tmp_path, generous_emulator, redis_server):
    lowered = ANNOUNCED // 2

    def lower() -> None:
        deadline = time.monotonic() + 300
        while _created(generous_emulator) < 100 and time.monotonic() < deadline:
            time.sleep(0.05)
        generous_emulator.set_rate_limit(lowered, WINDOW)  # its windows start over, at 120 an address

    barrier = tmp_path / "barrier"
    barrier.mkdir()
    reports, throttled = _run_hosts(
        tmp_path, generous_emulator, redis_server.url, links=80, own_addresses=False, barrier=barrier,
        during=lower, window=WINDOW,
    )  # fmt: skip
    assert [report["made"] for report, _ in reports] == [80, 80, 80]
    assert _created(generous_emulator) == 240  # nothing duplicated
    stored, _ = _stored_limits(redis_server)
    assert (stored["address"], stored["key"]) == (lowered, 2 * lowered)
    # The first answers after the change say the new limit; at most one window's misalignment
    # (the service's windows started over within ours) may meet a 429 per host.
    assert throttled <= 3, generous_emulator.stats.endpoints()


def test_the_form_extras_reach_the_shared_budget(tmp_path, emu, monkeypatch, redis_server):
    """The two extras as the connection form saves them (Airflow < 3.2: ``extra__<type>__<name>``),
    checked before any request."""
    from airflow_provider_linkstats.client.errors import LinkstatsError
    from airflow_provider_linkstats.hooks import shared_state
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    monkeypatch.setattr(shared_state, "_STATES", {})
    monkeypatch.setenv("AIRFLOW_CONN_SHARED_REDIS", redis_server.url)
    monkeypatch.setenv("AIRFLOW__LINKSTATS__SHARED_STATE_CONN_ID", "shared_redis")
    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", str(tmp_path / "cache"))
    form = {"extra__linkstats_links__rate_limit_per_key": "50", "extra__linkstats_links__address_per_host": True}
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, **form))
    shared = LinkstatsLinksHook().client.limiter.shared
    assert (shared.key_limit, shared.limits.key_from) == (50, "configured")
    assert shared.address_id != _budget().address_id  # this host's own address window
    for bad in ("abc", 0):
        monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, rate_limit_per_key=bad))
        with pytest.raises(LinkstatsError, match=r"rate_limit_per_key.*whole number >= 1"):
            LinkstatsLinksHook().create_link("https://example.com/a")
    assert emu.stats.count() == 0


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_429_of_the_keys_limiter_lowers_its_limit_for_every_host(redis_server, asynchronous):
    """Remaining above 0 on a 429: the key's limiter spoke, after the deployment had sent what its
    key window counts; that count (less the refused request) is the key's limit from then on."""
    import asyncio

    from limits.aio.storage import RedisStorage as AsyncRedisStorage
    from limits.storage import RedisStorage

    from airflow_provider_linkstats.client.shared import SharedBudget, StoreHealth

    url = redis_server.url.replace("redis://", "async+redis://" if asynchronous else "redis://")
    if asynchronous:
        storage = AsyncRedisStorage(url, implementation="redispy", key_prefix="linkstats:budget")
    else:
        storage = RedisStorage(url, key_prefix="linkstats:budget")

    def budget() -> SharedBudget:
        where = {"astorage": lambda: storage} if asynchronous else {"storage": storage}
        return SharedBudget(health=StoreHealth("test"), key_id="k" * 32, address_id="a", key_limit=50, **where)

    async def take(shared: SharedBudget) -> float:
        return await shared.atake() if asynchronous else shared.take()

    async def scenario() -> None:
        host = budget()
        for _ in range(40):  # the deployment's 40 requests in the key's window (50 assumed)
            assert await take(host) == 0.0
        host.announced(60, 20, 429)  # the key's limiter refused (the address's 60 had 20 left)
        host.throttled(per_key=True)
        assert await take(host) > 0  # the key's window is full until its end
        assert (host.key_limit, host.limits.key_from) == (39, "learned")
        other = budget()
        await take(other)  # another host reads it with its first take
        assert other.key_limit == 39
        assert host.health.faults == other.health.faults == 0

    asyncio.run(scenario())


def test_threads_starting_together_take_the_stored_window_length(redis_server):
    """A bulk delete's threads take their first slots together while the window length another
    host learned is read: none may name its window by the default length meanwhile (in the e2e
    run two tasks set the store aside: "a shared window says 61 s more")."""
    import threading

    from limits.storage import RedisStorage

    from airflow_provider_linkstats.client.shared import SharedBudget, StoreHealth

    storage = RedisStorage(redis_server.url, key_prefix="linkstats:budget")
    redis = redis_server.client()
    for attempt in range(20):
        key_id = f"{attempt:032d}"
        redis.set(f"linkstats:window:{key_id}", "10.0", ex=60)  # learned by another host
        redis.set(f"linkstats:budget:LIMITER/address/a{attempt}/61/second", 1, ex=61)  # a host still at 60 s
        shared = SharedBudget(
            health=StoreHealth("test"), key_id=key_id, address_id=f"a{attempt}", key_limit=None, storage=storage
        )
        start = threading.Barrier(8)

        def first_take(shared=shared, start=start) -> None:
            start.wait()
            shared.take()

        threads = [threading.Thread(target=first_take) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert shared.window == 10.0
        assert shared.health.faults == 0, attempt
