"""The hook's async side, for the triggerer: an async client from the same settings as the sync one,
the connection fetched without blocking, the service's profile found through that client. Mixed
into ``LinkstatsBaseHook``, which gives the connection, the settings, the known service and the key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.hooks.connection import Hidden

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient
    from airflow_provider_linkstats.client.discovery import ServiceProfile
    from airflow_provider_linkstats.client.generations import Generation


class AsyncClientMixin:
    # Given by the hook: the connection (held hidden), its settings and roots, what is known of its service.
    linkstats_conn_id: str
    _connection: Hidden | None
    _roots: tuple[str, ...]

    async def aservice_profile(self, client: AsyncLinkstatsClient, *, account: bool = False) -> ServiceProfile:
        """``service_profile`` through ``client`` (moved to the root that answers), and the service's
        clock as the host's learned facts keep it, if ``client`` has not heard it."""
        known = self.__dict__.get("known")
        if known is None:
            from asgiref.sync import sync_to_async

            known = await sync_to_async(lambda: self.known)()  # parsing the extras may block
        profile = await known.aget(client, account=account)
        await client.recall_clock()  # read in a thread: the event loop never waits on the file
        return profile

    async def aget_generation(self, client: AsyncLinkstatsClient) -> Generation:
        """``generation`` for the triggerer: the extra, the kept profile, or one probe through ``client``."""
        return (await self.aservice_profile(client)).spoken

    aget_dialect = aget_generation

    async def get_async_client(self, *, handed: Any = None, **options: Any) -> AsyncLinkstatsClient:
        """An async client for the triggerer (close it with ``async with`` or ``aclose()``); ``options``
        go to ``AsyncLinkstatsClient``. ``handed``: a ``ServiceProfile`` as JSON from the task that
        deferred, used instead of a look-up if it is this connection's."""
        from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient

        if self._connection is None:
            from airflow.providers.common.compat.connection import get_async_connection

            try:
                conn = await get_async_connection(self.linkstats_conn_id, hook=type(self))
            except Exception as error:
                raise self._missing(error) from error
            self._connection = Hidden(conn)
        from asgiref.sync import sync_to_async

        # Parsing reads conn.extra_dejson, which on Airflow 3.0 masks the extras with a synchronous
        # call to the triggerer's supervisor: on the event loop's thread that raises RuntimeError.
        settings, known = await sync_to_async(lambda: (self.settings, self.known))()
        client = await AsyncLinkstatsClient.open(settings, self._api_key(), **options)
        if "limiter" not in options:  # a handed limiter was given its budget by whoever made it
            client.limiter.shared = await sync_to_async(lambda: self._shared_budget(asynchronous=True))()
        client.contradicted = known.contradicted
        # The host's kept clock, and a clock heard here kept for the host (in a thread: client/aio.py).
        client.clock_source, client.clock_measured = known.recall_clock, known.remember_clock
        if handed is not None and known.profile is None:
            known.adopt(handed)
        if len(self._roots) > 1:
            try:
                await known.aget(client)
            except BaseException:
                await client.aclose()
                raise
        return client

    async def get_polling_client(
        self, interval: float, max_connections: int, handed: Any = None
    ) -> AsyncLinkstatsClient:
        """``get_async_client`` for a poll loop in the triggerer: one attempt per request (the loop,
        paced by ``interval``, is the retry), connections kept alive only if polls come that often."""
        from airflow_provider_linkstats.client.retry import RetryPolicy
        from airflow_provider_linkstats.client.settings import KEEP_ALIVE_MAX_IDLE

        keep_alive = interval <= KEEP_ALIVE_MAX_IDLE
        return await self.get_async_client(
            retry=RetryPolicy(max_retries=0), keep_alive=keep_alive, max_connections=max_connections, handed=handed
        )
