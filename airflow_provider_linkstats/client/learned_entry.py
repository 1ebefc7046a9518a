"""An entry of what a hook learned (``learned.LearnedStore`` keeps it in a file, ``shared_learned``
in the shared store): whose it is (``EntryKey``: never the key, a one-way fingerprint of it) and
its bytes, written and read back within bounds (size, depth, no NaN or infinity).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any

FORMAT = 1  # of an entry file; another one is ignored
MAX_ENTRY_BYTES = 64 * 1024
MAX_DEPTH = 8  # of nested objects and lists in an entry (ours have 2): deeper is not parsed at all
_FINGERPRINT_LABEL = b"airflow-provider-linkstats learned-service key fingerprint v1"


@dataclass(frozen=True)
class EntryKey:
    """Which entry: a connection, its base URL and a fingerprint of its key (never the key)."""

    conn_id: str
    base_url: str
    fingerprint: str

    @classmethod
    def of(cls, conn_id: str, base_url: str, api_key: str) -> EntryKey:
        return cls(conn_id, base_url, fingerprint(api_key))

    @property
    def name(self) -> str:
        """The entry's file name stem: one-way, so listing the directory tells nothing either."""
        text = json.dumps([self.conn_id, self.base_url, self.fingerprint])
        return hashlib.sha256(text.encode()).hexdigest()[:40]


def fingerprint(api_key: str) -> str:
    """HMAC-SHA256 of the key: tells two keys apart, and cannot be turned back into one."""
    return hmac.new(_FINGERPRINT_LABEL, api_key.encode(), hashlib.sha256).hexdigest()


def entry_bytes(key: EntryKey, facts: dict[str, Any]) -> bytes:
    """An entry as stored (a file here, a value in the shared store): the facts and whose they are."""
    if not isinstance(facts.get("root"), str):
        raise ValueError("learned facts need the API root ('root')")
    record = {"format": FORMAT, "conn_id": key.conn_id, "base_url": key.base_url,
              "key_fingerprint": key.fingerprint, "saved_at": time.time(), "facts": facts}  # fmt: skip
    return json.dumps(record, sort_keys=True).encode()


def parse_entry(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(entry, None), or (None, why not) for bytes too large, too deep or not a JSON object."""
    if len(raw) > MAX_ENTRY_BYTES:
        return None, f"larger than {MAX_ENTRY_BYTES} bytes"
    if _depth(raw) > MAX_DEPTH:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        return None, "not an entry (unreadable JSON)"
    return data, None


def _depth(raw: bytes) -> int:
    """How deeply ``raw``'s JSON nests objects and lists (strings skipped), without parsing it:
    a file nested thousands deep would make the parser raise RecursionError."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number an entry holds")
