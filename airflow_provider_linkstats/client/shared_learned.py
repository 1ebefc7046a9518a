"""What a hook learned about its service, shared by every host of a deployment through Redis.

``SharedLearnedStore`` has the face of the host cache (``learned.LearnedStore``) and keeps the same
entries under the same rules (docs/many-hosts.md). Writes go to both stores; reads try Redis
first, then the host cache. One process discovers while the others wait: the first to miss takes
a lock in Redis (``SET NX`` with a TTL of the wait), the others poll for the entry it writes. A
fault of Redis is never a fault of the task: the host cache alone answers. No Airflow import here.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore, entry_bytes, parse_entry
from airflow_provider_linkstats.client.shared import PREFIX, StoreHealth, _answer, _at_once

log = logging.getLogger(__name__)

Facts = dict[str, Any]
Call = Callable[[Callable[[Any], Any]], Any]  # runs a Redis command: ``_call`` (sync) or ``_acall`` (async)
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_POLL = 0.1  # seconds between looks for the entry another host is discovering


class SharedLearnedStore:
    """The host cache ``host`` with Redis in front of it (``client`` sync; ``aclient`` gives the
    async client of the running event loop)."""

    def __init__(
        self, host: LearnedStore, health: StoreHealth, client: Any, aclient: Callable[[], Any] | None = None
    ) -> None:
        self.host = host
        self.health = health
        self.ttl = host.ttl if host.enabled else 3600.0
        self._client, self._aclient = client, aclient
        self.directory = host.directory

    def __repr__(self) -> str:
        return f"SharedLearnedStore({self.health.where}, host={self.host!r})"

    enabled = True

    @staticmethod
    def _name(key: EntryKey) -> str:
        return f"{PREFIX}:learned:{key.name}"

    # -- reading and writing: one body each, run at once on the sync client, awaited on the async one --

    def recall(self, key: EntryKey, allowed_roots: Iterable[str]) -> Facts | None:
        return _at_once(self._recall(key, tuple(allowed_roots), self._call))

    def remember(self, key: EntryKey, facts: Facts) -> bool:
        return _at_once(self._remember(key, facts, self._call))

    def forget(self, key: EntryKey, reason: str) -> bool:
        dropped = bool(self._call(lambda redis: redis.delete(self._name(key))))
        return self.host.forget(key, reason) or dropped

    async def _recall(self, key: EntryKey, roots: tuple[str, ...], call: Call) -> Facts | None:
        raw = await _answer(call(lambda redis: redis.get(self._name(key))))
        facts = self._checked(key, roots, raw)
        if raw is not None and facts is None:
            await _answer(call(lambda redis: redis.delete(self._name(key))))  # learned again, written anew
        return facts if facts is not None else self.host.recall(key, roots)

    async def _remember(self, key: EntryKey, facts: Facts, call: Call) -> bool:
        data = entry_bytes(key, facts)
        self.host.remember(key, facts)
        return await _answer(call(lambda redis: redis.set(self._name(key), data, ex=self._seconds))) is not None

    @property
    def _seconds(self) -> int:
        return max(1, int(self.ttl))

    def _checked(self, key: EntryKey, roots: tuple[str, ...], raw: Any) -> Facts | None:
        """The facts of a value read from Redis, checked as a file of the host cache is."""
        if raw is None:
            return None
        data, problem = parse_entry(raw if isinstance(raw, bytes) else str(raw).encode())
        if data is not None:
            problem = self.host.problem(data, key, roots)
        if problem is None:
            return dict(data["facts"])  # type: ignore[index]
        log.info("Linkstats connection %r: not using the shared store's entry (%s)", key.conn_id, problem)
        return None

    def _call(self, command: Callable[[Any], Any]) -> Any:
        if self._client is None or not self.health.usable():
            return None
        try:
            answer = command(self._client)
        except Exception as error:  # Redis down, slow or answering garbage: the host cache alone
            self.health.failed(error)
            return None
        self.health.answered()
        return answer

    async def _acall(self, command: Callable[[Any], Awaitable[Any]]) -> Any:
        if self._aclient is None or not self.health.usable():
            return None
        try:
            answer = await command(self._aclient())
        except Exception as error:
            self.health.failed(error)
            return None
        self.health.answered()
        return answer

    # -- one discovers, the others wait ---------------------------------------------------------

    def recall_or_learn(
        self,
        key: EntryKey,
        allowed_roots: Iterable[str],
        learn: Callable[[Facts | None], Facts],
        *,
        wait: float,
        enough: Callable[[Facts], bool] = lambda facts: True,
    ) -> tuple[Facts, bool]:
        """``LearnedStore.recall_or_learn`` across hosts: the lock and the entry are in Redis."""
        return _at_once(self._recall_or_learn(key, tuple(allowed_roots), learn, wait, enough, self._call, time.sleep))

    async def arecall_or_learn(
        self,
        key: EntryKey,
        allowed_roots: Iterable[str],
        learn: Callable[[Facts | None], Awaitable[Facts]],
        *,
        wait: float,
        enough: Callable[[Facts], bool] = lambda facts: True,
    ) -> tuple[Facts, bool]:
        """``recall_or_learn`` for the triggerer, through the async client."""
        return await self._recall_or_learn(key, tuple(allowed_roots), learn, wait, enough, self._acall, asyncio.sleep)

    async def _recall_or_learn(
        self, key: EntryKey, roots: tuple[str, ...], learn: Callable[[Facts | None], Any], wait: float,
        enough: Callable[[Facts], bool], call: Call, pause: Callable[[float], Any],
    ) -> tuple[Facts, bool]:  # fmt: skip
        lock, token = f"{PREFIX}:lock:{key.name}", secrets.token_hex(8)
        deadline = time.monotonic() + wait
        while True:
            facts = await self._recall(key, roots, call)
            if facts is not None and enough(facts):
                return facts, True
            taken = await _answer(call(lambda redis: redis.set(lock, token, nx=True, px=max(1, int(wait * 1000)))))
            if taken or not self.health.usable() or time.monotonic() >= deadline:
                break
            await _answer(pause(_POLL))
        try:
            facts = await _answer(learn(facts))
            await self._remember(key, facts, call)
            return facts, False
        finally:
            if taken:  # dropped only while still ours: it may have expired and been taken by another host
                await _answer(call(lambda redis: redis.eval(_RELEASE, 1, lock, token)))

    # -- seeing and clearing (the host's part) -----------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        return self.host.entries()

    def clear(self) -> int:
        return self.host.clear()
