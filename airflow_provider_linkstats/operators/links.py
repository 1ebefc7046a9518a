"""Operators for short links on the links service.

Every field is a keyword argument with the contract's name, templated, and checked against the
contract after rendering and before any request.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import BaseOperatorLink

from airflow_provider_linkstats.operators import base

__all__ = [
    "LinkstatsShortUrlLink",
    "LinkstatsCreateLinkOperator",
    "LinkstatsUpdateLinkOperator",
    "LinkstatsGetLinkOperator",
    "LinkstatsDeleteLinkOperator",
    "LinkstatsListLinksOperator",
]

SHORT_URL_XCOM_KEY = "short_url"


class LinkstatsShortUrlLink(BaseOperatorLink):
    """ "Short URL" button on a link task: the short URL of the link it created or changed."""

    name = "Short URL"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.providers.common.compat.sdk import XCom

        url = XCom.get_value(ti_key=ti_key, key=SHORT_URL_XCOM_KEY)
        return url if isinstance(url, str) else ""


class _LinkWriteMixin(base.LinksServiceMixin):
    """Shared by create and update: the fields checked against the connected version, the short-URL link."""

    operator_extra_links = (LinkstatsShortUrlLink(),)

    def prepare_fields(self) -> dict[str, Any]:
        """The arguments checked against the contract, then against the connected version, before any write."""
        return self.hook.prepare_link_fields(self.given_fields(self.operation), self.operation)  # type: ignore[attr-defined]

    def after_write(self, record: dict[str, Any], context: Any) -> None:
        short_url = record.get("short_url")
        if short_url:
            context["ti"].xcom_push(key=SHORT_URL_XCOM_KEY, value=short_url)


class LinkstatsCreateLinkOperator(_LinkWriteMixin, base.LinkstatsCreateOperatorBase):
    """Create a short link and return its record (also pushed as the task's XCom).

    Arguments are the same on every phpShort version (see the Service versions page); one the
    connected version lacks (``disabled`` on 46+, ``starts_at`` on 44-45, ...) fails the task before
    any write. ``expires_at``: on 44-45 it becomes expiration_date and expiration_time in the
    service's time zone, rounded up to the minute; on 46+ the end of the active window, whose
    start is ``starts_at`` (default: the task's run time).
    """

    argument_notes = {
        "expires_at": "On 44-45 the hook rounds it up to the next whole minute (the service keeps minutes: "
        "16:30:20 ends at 16:31); on 46+ it is sent with its offset. A moment already past is refused "
        "before any request.",
    }


class LinkstatsUpdateLinkOperator(_LinkWriteMixin, base.LinkstatsUpdateOperatorBase):
    """Change a link; only the fields given are sent, the others stay as they are."""

    argument_notes = {
        "expires_at": "As for create (on 46+ the window restarts at ``starts_at``, default now); rounded up to "
        "the minute on 44-45; a moment already past is refused.",
    }


class LinkstatsGetLinkOperator(base.LinksServiceMixin, base.LinkstatsGetOperatorBase):
    """Read one link and return its record."""


class LinkstatsDeleteLinkOperator(base.LinksServiceMixin, base.LinkstatsDeleteOperatorBase):
    """Delete one link (``link_id``) or many (``link_ids``) and return the id(s)."""


class LinkstatsListLinksOperator(base.LinksServiceMixin, base.LinkstatsListOperatorBase):
    """List links matching the filters, walking every page, and return the records."""
