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
from airflow_provider_linkstats.client.shared import PREFIX, StoreHealth

log = logging.getLogger(__name__)

Facts = dict[str, Any]
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

    # -- reading and writing ------------------------------------------------------------------

    def recall(self, key: EntryKey, allowed_roots: Iterable[str]) -> Facts | None:
        roots = tuple(allowed_roots)
        raw = self._call(lambda: self._client.get(self._name(key)))
        facts = self._checked(key, roots, raw)
        return facts if facts is not None else self.host.recall(key, roots)

    def remember(self, key: EntryKey, facts: Facts) -> bool:
        data = entry_bytes(key, facts)
        self.host.remember(key, facts)
        return self._call(lambda: self._client.set(self._name(key), data, ex=self._seconds)) is not None

    def forget(self, key: EntryKey, reason: str) -> bool:
        dropped = bool(self._call(lambda: self._client.delete(self._name(key))))
        return self.host.forget(key, reason) or dropped

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
        self._call(lambda: self._client.delete(self._name(key)))  # learned again, written anew
        return None

    def _call(self, command: Callable[[], Any]) -> Any:
        if self._client is None or not self.health.usable():
            return None
        try:
            answer = command()
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
        roots, lock, token = tuple(allowed_roots), f"{PREFIX}:lock:{key.name}", secrets.token_hex(8)
        deadline = time.monotonic() + wait
        while True:
            facts = self.recall(key, roots)
            if facts is not None and enough(facts):
                return facts, True
            taken = self._call(lambda: self._client.set(lock, token, nx=True, px=max(1, int(wait * 1000))))
            if taken or not self.health.usable() or time.monotonic() >= deadline:
                break
            time.sleep(_POLL)
        try:
            facts = learn(facts)
            self.remember(key, facts)
            return facts, False
        finally:
            if taken:
                self._call(lambda: self._release(lock, token))

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
        roots, lock, token = tuple(allowed_roots), f"{PREFIX}:lock:{key.name}", secrets.token_hex(8)
        deadline = time.monotonic() + wait
        while True:
            raw = await self._acall(lambda client: client.get(self._name(key)))
            facts = self._checked(key, roots, raw) or self.host.recall(key, roots)
            if facts is not None and enough(facts):
                return facts, True
            taken = await self._acall(lambda client: client.set(lock, token, nx=True, px=max(1, int(wait * 1000))))
            if taken or not self.health.usable() or time.monotonic() >= deadline:
                break
            await asyncio.sleep(_POLL)
        try:
            facts = await learn(facts)
            self.host.remember(key, facts)
            data = entry_bytes(key, facts)
            await self._acall(lambda client: client.set(self._name(key), data, ex=self._seconds))
            return facts, False
        finally:
            if taken:
                await self._acall(lambda client: client.delete(lock))

    def _release(self, lock: str, token: str) -> None:
        """Drop the lock if it is still ours (it may have expired and been taken by another host)."""
        held = self._client.get(lock)
        if held is not None and (held.decode() if isinstance(held, bytes) else str(held)) == token:
            self._client.delete(lock)

    # -- seeing and clearing (the host's part) -----------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        return self.host.entries()

    def clear(self) -> int:
        return self.host.clear()
