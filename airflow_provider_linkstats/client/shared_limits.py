"""How many requests the shared windows hold: the limits the service announces (issue 42).

The rules (which of Laravel's two limiters an answer shows, how the key's limit is learned, that
the connection extra ``rate_limit_per_key`` is never relearned) are in docs/many-hosts.md, "How the
service counts". No I/O here: ``shared.SharedBudget`` reads and writes the encoded form
(``encode``, ``adopt``).
"""

from __future__ import annotations

import json
from typing import Any

LARGEST = 1_000_000  # requests a window: a larger announced or stored limit is garbage
_ENTRY_BYTES = 256  # a stored entry longer than this is garbage
_ADDRESS_SOURCES = ("generation", "announced")
_KEY_SOURCES = ("generation", "scaled", "learned", "configured")


def _count(value: Any) -> int | None:
    """A limit as a whole number of requests, or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LARGEST:
        return None
    return value


class WindowLimits:
    """The requests a window holds for the address (``address``) and the key (``key``; None when
    the service has no per-key limit), and how each is known (``address_from``, ``key_from``)."""

    def __init__(self, address: int, key: int | None, *, key_configured: bool = False) -> None:
        self._base_address, self._base_key = address, key
        self.address, self.key = address, key
        self.address_from = "generation"
        self.key_from = "configured" if key_configured else "generation"

    def __repr__(self) -> str:
        return f"WindowLimits(address={self.address} ({self.address_from}), key={self.key} ({self.key_from}))"

    # -- what an answer says ------------------------------------------------------------------

    def announced(self, limit: int | None, remaining: int | None, status: int) -> bool:
        """Learn from an answer's ``X-RateLimit-Limit`` and ``Remaining``; True when a limit changed."""
        limit = _count(limit)
        if limit is None:
            return False
        key_spoke = status == 429 and not remaining and limit > self.address and self.address_from == "announced"
        if key_spoke:  # the key's limiter, showing its own limit
            return self._key_learned(limit)
        if limit == self.address:  # confirmed (and so, above, a larger one is not the address's)
            confirmed, self.address_from = self.address_from != "announced", "announced"
            return confirmed
        if limit > self.address and limit == self.key:
            return False  # the per-key limiter's (it has less left)
        self.address, self.address_from = limit, "announced"
        self._keep_key_consistent()
        return True

    def _key_learned(self, limit: int) -> bool:
        if self._key_fixed:
            return False
        changed, self.key, self.key_from = self.key != limit, limit, "learned"
        return changed

    @property
    def _key_fixed(self) -> bool:
        """No per-key limit to learn: the service has none, or the connection's extra sets it."""
        return self.key is None or self.key_from == "configured"

    def key_refused(self, counted: int) -> bool:
        """The key's limiter refused (a 429 with ``Remaining`` above 0) when the deployment had
        counted ``counted`` requests in the key's window; True when the key's limit changed."""
        if self._key_fixed or _count(counted) is None:
            return False
        if counted > self.key:  # our window was full too: the windows are apart, not the limits
            return False
        lowered = max(counted - 1, self.key // 2, 1)  # at most halved: a window just opened counts little
        if lowered >= self.key:
            return False
        self.key, self.key_from = lowered, "learned"
        return True

    def _keep_key_consistent(self) -> None:
        if self._key_fixed:
            return
        if self.key_from == "learned":
            self.key = max(self.key, self.address)  # the key's limiter counts every address's requests
            return
        assert self._base_key is not None
        self.key = max(1, round(self._base_key * self.address / self._base_address))
        self.key_from = "scaled"

    # -- the stored form (the shared store's, read under the host cache's rules) ------------------

    def encode(self) -> str:
        return json.dumps(
            {"address": self.address, "address_from": self.address_from, "key": self.key, "key_from": self.key_from},
            separators=(",", ":"),
        )

    def adopt(self, raw: Any) -> bool:
        """Take what another host learned (``encode``'s form); garbage changes nothing. True when
        a limit changed."""
        entry = _parsed(raw)
        if entry is None or entry["address_from"] != "announced":
            return False
        before = (self.address, self.key)
        self.address, self.address_from = entry["address"], "announced"
        if not self._key_fixed:  # the extra wins over any host's
            if entry["key"] is not None and entry["key_from"] != "configured":
                self.key, self.key_from = entry["key"], entry["key_from"]
            else:
                self._keep_key_consistent()
        return (self.address, self.key) != before


def _decoded(raw: Any) -> Any:
    """The JSON of a stored entry not over its size, or None."""
    if isinstance(raw, str):
        raw = raw.encode()
    if not isinstance(raw, bytes) or len(raw) > _ENTRY_BYTES:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def _parsed(raw: Any) -> dict[str, Any] | None:
    """A stored entry, size- and type-checked, or None."""
    entry = _decoded(raw)
    if not isinstance(entry, dict) or set(entry) != {"address", "address_from", "key", "key_from"}:
        return None
    if _count(entry["address"]) is None or entry["address_from"] not in _ADDRESS_SOURCES:
        return None
    if (entry["key"] is not None and _count(entry["key"]) is None) or entry["key_from"] not in _KEY_SOURCES:
        return None
    return entry
