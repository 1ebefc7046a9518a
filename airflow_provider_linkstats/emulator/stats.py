"""What reached the API since the last reset, so tests can count requests server-side."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs

from airflow_provider_linkstats.emulator.faults import api_path_prefix


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[tuple[str, str, bytes]] = []  # raw, decoded on demand (hot path stays cheap)
        self._clients: set[tuple] = set()

    def record(self, method: str, path: str, query_string: bytes, client: tuple | None) -> None:
        with self._lock:
            self._requests.append((method, path, query_string))
            if client:
                self._clients.add(tuple(client))

    def requests(self) -> list[dict]:
        """Each API request: {"method", "path", "query": {name: [values]}}, oldest first."""
        with self._lock:
            raw = list(self._requests)
        return [
            {"method": m, "path": p, "query": parse_qs(q.decode("latin-1"), keep_blank_values=True)} for m, p, q in raw
        ]

    def count(self, method: str | None = None, path_prefix: str | None = None) -> int:
        """API requests since the reset, optionally only one method and/or path (full or relative to the API root)."""
        method = method.upper() if method else None
        prefix = api_path_prefix(path_prefix)
        with self._lock:
            return sum(
                1
                for m, p, _ in self._requests
                if (method is None or m == method) and (prefix is None or p.startswith(prefix))
            )

    def connections(self) -> int:
        """Distinct client connections (peer host and port) that sent API requests since the reset."""
        with self._lock:
            return len(self._clients)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._clients.clear()
