"""Operators for short links on the links service.

Every field is an explicit keyword argument with the contract's name, templated, and checked
against the contract after rendering and before any request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.providers.common.compat.sdk import BaseOperatorLink

from airflow_provider_linkstats.client.contract import LINKS, TARGETING_FIELDS
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS
from airflow_provider_linkstats.operators.base import (
    LinksServiceMixin,
    LinkstatsCreateOperatorBase,
    LinkstatsDeleteOperatorBase,
    LinkstatsGetOperatorBase,
    LinkstatsListOperatorBase,
    LinkstatsUpdateOperatorBase,
    document_fields,
    document_filters,
)

__all__ = [
    "LinkstatsShortUrlLink",
    "LinkstatsCreateLinkOperator",
    "LinkstatsUpdateLinkOperator",
    "LinkstatsGetLinkOperator",
    "LinkstatsDeleteLinkOperator",
    "LinkstatsListLinksOperator",
]

CREATE_FIELDS = tuple(spec.name for spec in LINKS.fields_for("create"))
UPDATE_FIELDS = tuple(spec.name for spec in LINKS.fields_for("update"))
LIST_FILTERS = tuple(spec.name for spec in LINKS.list_params)
SHORT_URL_XCOM_KEY = "short_url"

TargetingRules = Sequence[dict[str, str]]


class LinkstatsShortUrlLink(BaseOperatorLink):
    """ "Short URL" button on a link task: the short URL of the link it created or changed."""

    name = "Short URL"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.providers.common.compat.sdk import XCom

        url = XCom.get_value(ti_key=ti_key, key=SHORT_URL_XCOM_KEY)
        return url if isinstance(url, str) else ""


class _LinkWriteMixin(LinksServiceMixin):
    """Shared by create and update: the expiry convenience and the short-URL extra link."""

    operator_extra_links = (LinkstatsShortUrlLink(),)

    def prepare_for_version(self, operation: str) -> dict[str, Any]:
        """The arguments checked against the contract, then against the connected version, before any write."""
        return self.hook.prepare_link_fields(self.given_fields(operation), operation)

    def after_write(self, record: dict[str, Any], context: Any) -> None:
        short_url = record.get("short_url")
        if short_url:
            context["ti"].xcom_push(key=SHORT_URL_XCOM_KEY, value=short_url)


@document_fields(LINKS, "create")
class LinkstatsCreateLinkOperator(_LinkWriteMixin, LinkstatsCreateOperatorBase):
    """Create a short link and return its record (also pushed as the task's XCom).

    Arguments are the same on every phpShort version (see the Service versions page); one the
    connected version lacks (``disabled`` on 46+, ``starts_at`` on 44-45, ...) fails the task before
    any write. ``expires_at``: on 44-45 it becomes expiration_date and expiration_time in the
    service's time zone, rounded up to the minute; on 46+ the end of the active window, whose
    start is ``starts_at`` (default: the task's run time).

    :param if_exists: what an existing link with the same ``alias`` means: "fail" (default),
        "skip" (return it unchanged) or "update" (write the given fields to it). Templated.
    :param expires_at: an aware datetime, pendulum DateTime or ISO-8601 string with offset. On
        44-45 the hook rounds it up to the next whole minute (the service keeps minutes: 16:30:20
        ends at 16:31); on 46+ it is sent with its offset. A moment already past is refused before
        any request. Templated.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", *CREATE_FIELDS, "if_exists")
    template_fields_renderers = {name: "json" for name in TARGETING_FIELDS.values()}

    def __init__(
        self,
        *,
        url: str,
        domain_id: int | str | None = None,
        alias: str | None = None,
        password: str | None = None,
        space_id: int | str | None = None,
        pixel_ids: Sequence[int] | None = None,
        disabled: int | bool | None = None,
        sensitive_content: int | bool | None = None,
        privacy: int | None = None,
        privacy_password: str | None = None,
        expiration_url: str | None = None,
        starts_at: Any = None,
        expiration_date: str | None = None,
        expiration_time: str | None = None,
        expiration_clicks: int | str | None = None,
        target_type: int | None = None,
        country: TargetingRules | None = None,
        platform: TargetingRules | None = None,
        language: TargetingRules | None = None,
        rotation: TargetingRules | None = None,
        continent: TargetingRules | None = None,
        browser: TargetingRules | None = None,
        device: TargetingRules | None = None,
        expires_at: Any = None,
        if_exists: str = "fail",
        **kwargs: Any,
    ) -> None:
        super().__init__(if_exists=if_exists, **kwargs)
        self.url = url
        self.domain_id = domain_id
        self.alias = alias
        self.password = password
        self.space_id = space_id
        self.pixel_ids = pixel_ids
        self.disabled = disabled
        self.sensitive_content = sensitive_content
        self.privacy = privacy
        self.privacy_password = privacy_password
        self.expiration_url = expiration_url
        self.starts_at = starts_at
        self.expiration_date = expiration_date
        self.expiration_time = expiration_time
        self.expiration_clicks = expiration_clicks
        self.target_type = target_type
        self.country = country
        self.platform = platform
        self.language = language
        self.rotation = rotation
        self.continent = continent
        self.browser = browser
        self.device = device
        self.expires_at = expires_at
        self.mask_secrets()

    def prepare_fields(self) -> dict[str, Any]:
        return self.prepare_for_version("create")


@document_fields(LINKS, "update")
class LinkstatsUpdateLinkOperator(_LinkWriteMixin, LinkstatsUpdateOperatorBase):
    """Change a link; only the fields given are sent, the others stay as they are.

    :param link_id: the link to change: its id, or its record (``create.output``). Templated.
    :param expires_at: as for create (on 46+ the window restarts at ``starts_at``, default now);
        rounded up to the minute on 44-45; a moment already past is refused. Templated.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", "link_id", *UPDATE_FIELDS)
    template_fields_renderers = {name: "json" for name in TARGETING_FIELDS.values()}
    id_argument = "link_id"

    def __init__(
        self,
        *,
        link_id: int | str,
        url: str | None = None,
        alias: str | None = None,
        password: str | None = None,
        space_id: int | str | None = None,
        pixel_ids: Sequence[int] | None = None,
        disabled: int | bool | None = None,
        sensitive_content: int | bool | None = None,
        privacy: int | None = None,
        privacy_password: str | None = None,
        expiration_url: str | None = None,
        starts_at: Any = None,
        expiration_date: str | None = None,
        expiration_time: str | None = None,
        expiration_clicks: int | str | None = None,
        target_type: int | None = None,
        country: TargetingRules | None = None,
        platform: TargetingRules | None = None,
        language: TargetingRules | None = None,
        rotation: TargetingRules | None = None,
        continent: TargetingRules | None = None,
        browser: TargetingRules | None = None,
        device: TargetingRules | None = None,
        expires_at: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.link_id = link_id
        self.url = url
        self.alias = alias
        self.password = password
        self.space_id = space_id
        self.pixel_ids = pixel_ids
        self.disabled = disabled
        self.sensitive_content = sensitive_content
        self.privacy = privacy
        self.privacy_password = privacy_password
        self.expiration_url = expiration_url
        self.starts_at = starts_at
        self.expiration_date = expiration_date
        self.expiration_time = expiration_time
        self.expiration_clicks = expiration_clicks
        self.target_type = target_type
        self.country = country
        self.platform = platform
        self.language = language
        self.rotation = rotation
        self.continent = continent
        self.browser = browser
        self.device = device
        self.expires_at = expires_at
        self.mask_secrets()

    def prepare_fields(self) -> dict[str, Any]:
        return self.prepare_for_version("update")


class LinkstatsGetLinkOperator(LinksServiceMixin, LinkstatsGetOperatorBase):
    """Read one link and return its record.

    :param link_id: the link's id, or its record (``create.output``). Templated.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", "link_id")
    id_argument = "link_id"

    def __init__(
        self, *, link_id: int | str, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.link_id = link_id


class LinkstatsDeleteLinkOperator(LinksServiceMixin, LinkstatsDeleteOperatorBase):
    """Delete one link (``link_id``) or many (``link_ids``) and return the id(s).

    :param link_id: one link's id, or its record (``create.output``). Templated.
    :param link_ids: many ids or records, e.g. the XCom of a list task; deleted on ``max_workers`` threads
        with progress lines in the log. Templated.
    :param missing_ok: a link that is already gone counts as deleted instead of failing.
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", "link_id", "link_ids", "max_workers")
    id_argument = "link_id"
    ids_argument = "link_ids"

    def __init__(
        self,
        *,
        link_id: int | str | None = None,
        link_ids: Sequence[int | str] | None = None,
        missing_ok: bool = False,
        max_workers: int = DEFAULT_MAX_WORKERS,
        **kwargs: Any,
    ) -> None:
        super().__init__(missing_ok=missing_ok, max_workers=max_workers, **kwargs)
        self.link_id = link_id
        self.link_ids = link_ids


@document_filters(LINKS)
class LinkstatsListLinksOperator(LinksServiceMixin, LinkstatsListOperatorBase):
    """List links matching the filters, walking every page, and return the records.

    :param max_items: stop after this many records (default: all).
    """

    template_fields: Sequence[str] = ("linkstats_conn_id", *LIST_FILTERS, "max_items")

    def __init__(
        self,
        *,
        search: str | None = None,
        search_by: str | None = None,
        status: int | None = None,
        space_id: int | str | None = None,
        domain_id: int | str | None = None,
        pixel_id: int | str | None = None,
        sort_by: str | None = None,
        sort: str | None = None,
        per_page: int | None = None,
        max_items: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(max_items=max_items, **kwargs)
        self.search = search
        self.search_by = search_by
        self.status = status
        self.space_id = space_id
        self.domain_id = domain_id
        self.pixel_id = pixel_id
        self.sort_by = sort_by
        self.sort = sort
        self.per_page = per_page
