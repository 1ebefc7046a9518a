"""The warehouse load's driver: the listing, the statistics requests, the links gone meanwhile, the
reload of days found short, the writes into a sink, and the progress lines.

What it decides is ``client.warehouse``'s plan (the day rule, the counters, which links need a
request), without I/O. One module per concept: ``run`` (``LoadRun``, the one value a run's stages
pass on, and the stages every load shares: plan, write), ``links`` and ``websites`` (list, decide,
fetch), ``service`` (the service's clock, a record gone, the account's zone confirmed),
``progress`` (its lines), ``notes`` (its warnings), and the writers: ``sinks`` (which one),
``sql_sink``, ``file_sink``, ``schema``. The operators (``operators/warehouse.py``) turn their
arguments into a sink and an interval and the result into XCom. Imported when a task runs.
"""

from __future__ import annotations

from airflow_provider_linkstats.drivers.warehouse.links import LinkStatsLoad
from airflow_provider_linkstats.drivers.warehouse.progress import PROGRESS_EVERY, Progress
from airflow_provider_linkstats.drivers.warehouse.run import LoadRun, StatsLoad, breakdown_of
from airflow_provider_linkstats.drivers.warehouse.websites import WebsiteStatsLoad

__all__ = ["PROGRESS_EVERY", "LinkStatsLoad", "LoadRun", "Progress", "StatsLoad", "WebsiteStatsLoad", "breakdown_of"]
