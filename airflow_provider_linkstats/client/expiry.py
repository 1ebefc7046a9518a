"""Deprecated: the plan for waiting moved to ``airflow_provider_linkstats.waiting``."""

from __future__ import annotations

import warnings

from airflow_provider_linkstats.waiting.plan import LinkGoneError, adrive, drive, record_id, walk_pages
from airflow_provider_linkstats.waiting.watch import Watch as ExpiryWatch

__all__ = ["ExpiryWatch", "LinkGoneError", "adrive", "drive", "record_id", "walk_pages"]

warnings.warn(
    "airflow_provider_linkstats.client.expiry is deprecated: use airflow_provider_linkstats.waiting",
    DeprecationWarning,
    stacklevel=2,
)
