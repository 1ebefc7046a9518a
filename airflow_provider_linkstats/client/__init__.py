"""The Linkstats API without Airflow: contract, validation, encoding, protocol and clients.

Importing this package is cheap (no HTTP library); ``LinkstatsClient`` loads ``requests`` on
first use, so operator modules can import the contract at DAG-parse time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.contract import (
    LINKS,
    PER_PAGE_CHOICES,
    WEBSITES,
    LinkStatus,
    Platform,
    Privacy,
    TargetType,
)
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsConfigError,
    LinkstatsConflictError,
    LinkstatsError,
    LinkstatsExistsError,
    LinkstatsInputError,
    LinkstatsNotFoundError,
    LinkstatsOutcomeUnknownError,
    LinkstatsRateLimitError,
    LinkstatsResponseError,
    LinkstatsRouteMissError,
    LinkstatsServerError,
    LinkstatsTransportError,
    LinkstatsValidationError,
    LinkstatsWriteMismatchError,
)
from airflow_provider_linkstats.client.records import link_status

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.api import LinkstatsClient

__all__ = [
    "LINKS",
    "PER_PAGE_CHOICES",
    "WEBSITES",
    "LinkStatus",
    "LinkstatsApiError",
    "LinkstatsAuthError",
    "LinkstatsClient",
    "LinkstatsConfigError",
    "LinkstatsError",
    "LinkstatsConflictError",
    "LinkstatsExistsError",
    "LinkstatsInputError",
    "LinkstatsNotFoundError",
    "LinkstatsRouteMissError",
    "LinkstatsOutcomeUnknownError",
    "LinkstatsRateLimitError",
    "LinkstatsResponseError",
    "LinkstatsServerError",
    "LinkstatsTransportError",
    "LinkstatsValidationError",
    "LinkstatsWriteMismatchError",
    "Platform",
    "Privacy",
    "TargetType",
    "link_status",
]


def __getattr__(name: str) -> Any:
    if name == "LinkstatsClient":
        from airflow_provider_linkstats.client.api import LinkstatsClient

        return LinkstatsClient
    raise AttributeError(name)
