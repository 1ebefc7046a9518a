"""The warehouse load's driver, one module per concept: ``run`` (``LoadRun``, the one value a run's
stages pass on, and the stages every load shares: plan, write), ``links`` and ``websites`` (list,
decide, fetch), ``service`` (the service's clock, a record gone, the account's zone confirmed),
``progress``, ``notes`` (its warnings), and the writers ``sql_sink``, ``file_sink``, ``schema``
(chosen by ``drivers/sinks.py``). What it decides is ``client.warehouse``'s plan, without I/O.
Imported when a task runs.
"""

from __future__ import annotations

from airflow_provider_linkstats.drivers.warehouse.links import LinkStatsLoad
from airflow_provider_linkstats.drivers.warehouse.websites import WebsiteStatsLoad

__all__ = ["LinkStatsLoad", "WebsiteStatsLoad"]
