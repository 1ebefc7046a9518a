"""Every default of the provider, and how a client is configured: one frozen object.

This module is the one home of each default (timeouts, retries and their waits, the rate-limit
wait and window, the pool size, bulk delete threads, the waiting knobs): the connection form
(``hooks/connection.py``), the retry policy (``retry.py``), the hooks and the operators read them here.

The hook builds ``ClientSettings`` once (``hooks/linkstats.py``); the sync client (``api.py``) and
the async one (``aio.py``) both read it, so the two cannot be configured apart. The API key is not
in here: it lives in an ``auth.ApiKey``.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_linkstats import __version__

USER_AGENT = f"airflow-provider-linkstats/{__version__}"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_WAIT = 0.5  # first backoff wait; doubles each retry, with jitter
DEFAULT_RETRY_WAIT_MAX = 30.0  # cap of one backoff wait
DEFAULT_MAX_RATE_LIMIT_WAIT = 120.0  # real installs ask for 30-60 s after a 429; more is a real outage
# How long a create answered 502/503/504 (or lost) is looked for before it is called "outcome unknown":
# a gateway's usual upstream timeout (nginx's proxy_read_timeout), past which the PHP request behind it
# has ended too. A create is never sent again within it (a late commit would make a twin).
DEFAULT_LATE_COMMIT_WINDOW = 60.0
DEFAULT_WINDOW = 60.0  # seconds of a rate-limit window assumed until the server shows another (real installs: a minute)
POOL_SIZE = 16  # connections per sync client; a bulk delete runs at most this many threads
DEFAULT_MAX_WORKERS = 8  # threads of a bulk delete (at most POOL_SIZE)
ASYNC_POOL_SIZE = 4  # connections per async client: thousands of triggers may share one event loop
# Keep an async connection open between pokes only when the next one comes sooner than this: servers
# drop idle connections after 5-75 s, and a trigger polling every few minutes should not hold a socket.
KEEP_ALIVE_MAX_IDLE = 20.0
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
    retry_wait: float = DEFAULT_RETRY_WAIT
    retry_wait_max: float = DEFAULT_RETRY_WAIT_MAX
    max_rate_limit_wait: float = DEFAULT_MAX_RATE_LIMIT_WAIT  # longest Retry-After honoured
    late_commit_window: float = DEFAULT_LATE_COMMIT_WINDOW  # seconds an unknown create is looked for
    rate_limit_window: float | None = None  # seconds; None: learned from the server's answers
    timezone: str | None = None  # the service's zone for expiration_date/time; None: the account's
    default_domain_id: int | None = None  # links: domain of creates that name none
    pool_size: int = POOL_SIZE
    conn_id: str | None = None  # the Airflow connection, named in every error
    scheme_assumed: bool = False  # the Base URL had no scheme and https was put in front

    @property
    def connect_timeout(self) -> float:
        return min(DEFAULT_CONNECT_TIMEOUT, self.read_timeout)


# Headers of every request but Authorization (set by auth.ApiKey). Real installs answer 401 in
# JSON only when asked for JSON.
COMMON_HEADERS = {"Accept": "application/json", "User-Agent": USER_AGENT}
