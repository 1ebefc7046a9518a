"""Where a warehouse load writes: kept at this path for the DAGs that import from it
(``check_table``); the sinks live in ``drivers/warehouse/`` (``sinks``, ``sql_sink``, ``file_sink``)."""

from __future__ import annotations

from airflow_provider_linkstats.drivers.warehouse.sinks import *  # noqa: F403
from airflow_provider_linkstats.drivers.warehouse.sinks import __all__  # noqa: F401
