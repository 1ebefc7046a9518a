"""How a client is configured: one frozen object, built once from a connection and its overrides.

The hook builds it (``hooks/linkstats.py``); the sync client (``api.py``) and the async one
(``aio.py``) both read it, so the two cannot be configured apart. The API key is not in here: it is
handed to a transport, which keeps it only in its Authorization header.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from airflow_provider_linkstats import __version__

USER_AGENT = f"airflow-provider-linkstats/{__version__}"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_RATE_LIMIT_WAIT = 120.0  # real installs ask for 30-60 s after a 429; more is a real outage
DEFAULT_WINDOW = 60.0  # seconds of a rate-limit window assumed until the server shows another (real installs: a minute)
POOL_SIZE = 16  # connections per sync client; a bulk delete runs at most this many threads
# Waiting for links to expire (the sensor and its trigger)
DEFAULT_EXISTENCE_CHECK_EVERY = 10  # pokes between checks that the watched links still exist
DEFAULT_MAX_TRANSPORT_FAILURES = 5  # transient failures in a row that end a deferred wait


@dataclass(frozen=True)
class ClientSettings:
    """Everything a client needs but the key."""

    root: str  # the API root, e.g. https://links.example.com/api/v1
    read_timeout: float = DEFAULT_READ_TIMEOUT
    verify_ssl: bool = True
    max_retries: int = DEFAULT_MAX_RETRIES
    retry_wait: float = 0.5  # first backoff wait; doubles each retry
    retry_wait_max: float = 30.0  # cap of one backoff wait
    max_rate_limit_wait: float = DEFAULT_MAX_RATE_LIMIT_WAIT  # longest Retry-After honoured
    rate_limit_window: float | None = None  # seconds; None: learned from the server's answers
    timezone: str | None = None  # the service's zone for expiration_date/time; None: the account's
    default_domain_id: int | None = None  # links: domain of creates that name none
    pool_size: int = POOL_SIZE

    @property
    def connect_timeout(self) -> float:
        return min(DEFAULT_CONNECT_TIMEOUT, self.read_timeout)


def auth_headers(api_key: str) -> dict[str, str]:
    """Headers of every request. Real installs answer 401 in JSON only when asked for JSON."""
    return {"Authorization": f"Bearer {api_key}", "Accept": "application/json", "User-Agent": USER_AGENT}


def key_from_headers(headers: Mapping[str, str]) -> str:
    """The key back from a transport's Authorization header, for redaction: no attribute holds it."""
    return str(headers.get("Authorization", "")).removeprefix("Bearer ")
