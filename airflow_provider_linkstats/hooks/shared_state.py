"""The deployment's shared store, from ``[linkstats] shared_state_conn_id`` (docs/many-hosts.md).

Empty (the default): nothing here runs. Set to a ``redis`` connection: the Redis provider's
``RedisHook`` builds the client, and its settings, with a timeout of their own (``STORE_TIMEOUT``),
go to a ``limits`` storage (the shared budget, ``client/shared.py``) and to the shared learned facts
(``client/shared_learned.py``). A setting that cannot work fails before any request, saying how to
fix it; an unreachable Redis fails the connection test, and slows nothing else.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsConfigError
from airflow_provider_linkstats.client.shared import PREFIX, STORE_TIMEOUT, SharedBudget, StoreHealth, digest

SETTING = "shared_state_conn_id"
_FIX = "or empty [linkstats] shared_state_conn_id (AIRFLOW__LINKSTATS__SHARED_STATE_CONN_ID) to run without it"
PER_KEY_LIMITS = {"links": 120}  # the services' per-user limits a window (phpAnalytics has none)


@dataclass
class SharedState:
    """One process's handles on the shared Redis (made once per connection id)."""

    conn_id: str
    health: StoreHealth
    pool_kwargs: dict[str, Any]
    ssl: bool
    client: Any = None
    pid: int = field(default_factory=os.getpid)  # a forked task process builds its own pool
    _astorages: dict[int, Any] = field(default_factory=dict)  # by event loop

    def storage(self) -> Any:
        from limits.storage import RedisStorage

        return RedisStorage("redis://", connection_pool=self.client.connection_pool, key_prefix=f"{PREFIX}:budget")

    def astorage(self) -> Any:
        """The async twin of ``storage``, per event loop (the triggerer's)."""
        import asyncio

        loop = id(asyncio.get_running_loop())
        if loop not in self._astorages:
            from limits.aio.storage import RedisStorage
            from redis.asyncio import ConnectionPool
            from redis.asyncio.connection import Connection, SSLConnection

            pool = ConnectionPool(connection_class=SSLConnection if self.ssl else Connection, **self.pool_kwargs)
            self._astorages[loop] = RedisStorage(
                "async+redis://", implementation="redispy", connection_pool=pool, key_prefix=f"{PREFIX}:budget"
            )
        return self._astorages[loop]

    def aclient(self) -> Any:
        return self.astorage().bridge.storage

    def ping(self) -> str | None:
        """None when Redis answers, else why not (for the connection test)."""
        try:
            self.client.ping()
        except Exception as error:
            return f"{type(error).__name__}: {str(error)[:200]}"
        return None


_STATES: dict[str, SharedState] = {}
_LOCK = threading.Lock()


def linkstats_setting(name: str) -> str | None:
    """``[linkstats] <name>`` from Airflow's configuration (or its AIRFLOW__LINKSTATS__ variable)."""
    try:
        from airflow.providers.common.compat.sdk import conf

        return conf.get("linkstats", name, fallback=None)
    except Exception:  # an Airflow without the option or the section
        return os.environ.get(f"AIRFLOW__LINKSTATS__{name.upper()}")


def configured() -> str | None:
    """The setting's connection id, or None when it is empty."""
    return (linkstats_setting(SETTING) or "").strip() or None


def shared_state() -> SharedState | None:
    """This process's shared state, or None when the setting is empty; a bad setting raises."""
    conn_id = configured()
    if conn_id is None:
        return None
    with _LOCK:
        state = _STATES.get(conn_id)
        if state is None or state.pid != os.getpid():
            state = _STATES[conn_id] = _build(conn_id)
        return state


def _build(conn_id: str) -> SharedState:
    try:
        from airflow.providers.redis.hooks.redis import RedisHook
    except ImportError:
        raise LinkstatsConfigError(
            f"[linkstats] {SETTING} is {conn_id!r} but the Redis provider is not installed: "
            f"pip install 'airflow-provider-linkstats[redis]', {_FIX}"
        ) from None
    hook = RedisHook(redis_conn_id=conn_id)
    try:
        conn = hook.get_connection(conn_id)
    except Exception as error:
        if type(error).__name__ != "AirflowNotFoundException":
            raise
        raise LinkstatsConfigError(
            f"[linkstats] {SETTING} names connection {conn_id!r}, which is not defined: create it "
            f"(airflow connections add {conn_id} --conn-uri redis://HOST:6379/0), {_FIX}"
        ) from None
    if conn.conn_type != "redis":
        raise LinkstatsConfigError(
            f"[linkstats] {SETTING} names connection {conn_id!r} of type {conn.conn_type!r}; it must be of "
            f"type 'redis' (the deployment's Redis), {_FIX}"
        )
    base = hook.get_conn()
    kwargs = dict(base.connection_pool.connection_kwargs)
    kwargs.update(socket_timeout=STORE_TIMEOUT, socket_connect_timeout=STORE_TIMEOUT, retry_on_timeout=False)
    kwargs.pop("retry", None)
    import redis

    connection_class = base.connection_pool.connection_class
    ssl = issubclass(connection_class, redis.SSLConnection)
    pool = redis.ConnectionPool(connection_class=connection_class, **kwargs)
    where = f"Redis at {kwargs.get('host')}:{kwargs.get('port')}/{kwargs.get('db', 0)} (connection {conn_id!r})"
    return SharedState(conn_id, StoreHealth(where), kwargs, ssl, client=redis.Redis(connection_pool=pool))


def budget_for(state: SharedState, *, service: str, api_key_fingerprint: str, extras: dict[str, Any],
               window: float | None, asynchronous: bool) -> SharedBudget:  # fmt: skip
    """The shared budget of one connection (its key, its service's address)."""
    per_host = str(extras.get("address_per_host", "")).strip().lower() in ("1", "true", "yes", "on")
    # The service (the one the key belongs to) and the address it sees: the key names the service
    # whatever URL a host reaches it by (a proxy of its own, an internal name).
    address = digest(api_key_fingerprint, _hostname() if per_host else "the deployment")
    key_limit = extras.get("rate_limit_per_key")  # checked as the form saves it (``extras_of``)
    configured = key_limit not in (None, "")
    key_limit = int(key_limit) if configured else PER_KEY_LIMITS.get(service)
    return SharedBudget(
        health=state.health,
        key_id=api_key_fingerprint,
        address_id=address,
        key_limit=key_limit,
        key_limit_configured=configured,  # the extra wins over what the service announces
        window=window or 60.0,
        window_pinned=window is not None,
        storage=None if asynchronous else state.storage(),
        astorage=state.astorage if asynchronous else None,
    )


def _hostname() -> str:
    """Airflow's name of this host (``[core] hostname_callable``), as its task instances show it."""
    try:
        from airflow.utils.net import get_hostname

        return get_hostname()
    except Exception:
        import socket

        return socket.getfqdn()
