"""Operators for tracked websites on the analytics service.

The website field ``email`` (e-mail reports on or off) is the argument ``email_reports`` here,
because ``email`` on every Airflow operator already means "where to send failure alerts".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_linkstats.client.contract import WEBSITES
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS
from airflow_provider_linkstats.operators.base import (
    WEBSITE_ARGUMENTS,
    AnalyticsServiceMixin,
    LinkstatsCreateOperatorBase,
    LinkstatsDeleteOperatorBase,
    LinkstatsGetOperatorBase,
    LinkstatsListOperatorBase,
    LinkstatsUpdateOperatorBase,
    document_fields,
    document_filters,
)

__all__ = [
    "LinkstatsCreateWebsiteOperator",
    "LinkstatsUpdateWebsiteOperator",
    "LinkstatsGetWebsiteOperator",
    "LinkstatsDeleteWebsiteOperator",
    "LinkstatsListWebsitesOperator",
]

RENAMED = WEBSITE_ARGUMENTS  # operator argument -> API field
_TO_ARGUMENT = {api: arg for arg, api in RENAMED.items()}
CREATE_ARGUMENTS = tuple(_TO_ARGUMENT.get(s.name, s.name) for s in WEBSITES.fields_for("create"))
UPDATE_ARGUMENTS = tuple(_TO_ARGUMENT.get(s.name, s.name) for s in WEBSITES.fields_for("update"))
LIST_FILTERS = tuple(spec.name for spec in WEBSITES.list_params)



@document_fields(WEBSITES, "create", renamed=RENAMED)
class LinkstatsCreateWebsiteOperator(AnalyticsServiceMixin, LinkstatsCreateOperatorBase):
    """Create a tracked website and return its record.

    :param if_exists: what an existing website with the same ``domain`` means: "fail" (default),
        "skip" (return it unchanged) or "update" (write the given fields to it). Templated.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", *CREATE_ARGUMENTS, "if_exists")

    def __init__(
        self,
        *,
        domain: str,
        privacy: int | None = None,
        password: str | None = None,
        email_reports: int | bool | None = None,
        exclude_bots: int | bool | None = None,
        exclude_params: Sequence[str] | None = None,
        exclude_ips: Sequence[str] | None = None,
        if_exists: str = "fail",
        **kwargs: Any,
    ) -> None:
        super().__init__(if_exists=if_exists, **kwargs)
        self.domain = domain
        self.privacy = privacy
        self.password = password
        self.email_reports = email_reports
        self.exclude_bots = exclude_bots
        self.exclude_params = exclude_params
        self.exclude_ips = exclude_ips
        self.mask_secrets()


@document_fields(WEBSITES, "update", renamed=RENAMED)
class LinkstatsUpdateWebsiteOperator(AnalyticsServiceMixin, LinkstatsUpdateOperatorBase):
    """Change a website; only the fields given are sent.

    :param website_id: the website to change: its id, or its record. Templated.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", "website_id", *UPDATE_ARGUMENTS)
    id_argument = "website_id"

    def __init__(
        self,
        *,
        website_id: int | str,
        privacy: int | None = None,
        password: str | None = None,
        email_reports: int | bool | None = None,
        exclude_bots: int | bool | None = None,
        exclude_params: Sequence[str] | None = None,
        exclude_ips: Sequence[str] | None = None,
        favorite: int | bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.website_id = website_id
        self.favorite = favorite
        self.privacy = privacy
        self.password = password
        self.email_reports = email_reports
        self.exclude_bots = exclude_bots
        self.exclude_params = exclude_params
        self.exclude_ips = exclude_ips
        self.mask_secrets()


class LinkstatsGetWebsiteOperator(AnalyticsServiceMixin, LinkstatsGetOperatorBase):
    """Read one website and return its record.

    :param website_id: the website's id, or its record. Templated.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", "website_id")
    id_argument = "website_id"

    def __init__(
        self, *, website_id: int | str, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.website_id = website_id


class LinkstatsDeleteWebsiteOperator(AnalyticsServiceMixin, LinkstatsDeleteOperatorBase):
    """Delete one website (``website_id``) or many (``website_ids``) and return the id(s).

    :param missing_ok: a website that is already gone counts as deleted instead of failing.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", "website_id", "website_ids", "max_workers")
    id_argument = "website_id"
    ids_argument = "website_ids"

    def __init__(
        self,
        *,
        website_id: int | str | None = None,
        website_ids: Sequence[int | str] | None = None,
        missing_ok: bool = False,
        max_workers: int = DEFAULT_MAX_WORKERS,
        **kwargs: Any,
    ) -> None:
        super().__init__(missing_ok=missing_ok, max_workers=max_workers, **kwargs)
        self.website_id = website_id
        self.website_ids = website_ids


@document_filters(WEBSITES)
class LinkstatsListWebsitesOperator(AnalyticsServiceMixin, LinkstatsListOperatorBase):
    """List websites matching the filters, walking every page, and return the records.

    :param max_items: stop after this many records (default: all).
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", *LIST_FILTERS, "max_items")

    def __init__(
        self,
        *,
        search: str | None = None,
        search_by: str | None = None,
        sort_by: str | None = None,
        favorite: int | bool | None = None,
        sort: str | None = None,
        per_page: int | None = None,
        max_items: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(max_items=max_items, **kwargs)
        self.favorite = favorite
        self.search = search
        self.search_by = search_by
        self.sort_by = sort_by
        self.sort = sort
        self.per_page = per_page
