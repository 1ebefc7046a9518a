"""Operators for spaces (folders of links) on the links service.

In the style of the link operators: every field an explicit, templated keyword argument, checked
against the contract after rendering and before any request; a create finds an existing record
by its name (``if_exists``), so a retried task makes no twin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_linkstats.client.contract import SPACES
from airflow_provider_linkstats.operators.base import (
    LinkstatsCreateOperatorBase,
    LinkstatsDeleteOperatorBase,
    LinkstatsGetOperatorBase,
    LinkstatsListOperatorBase,
    LinkstatsUpdateOperatorBase,
    document_fields,
    document_filters,
)
from airflow_provider_linkstats.operators.links import _LinkOperator

__all__ = [
    "LinkstatsCreateSpaceOperator",
    "LinkstatsUpdateSpaceOperator",
    "LinkstatsGetSpaceOperator",
    "LinkstatsDeleteSpaceOperator",
    "LinkstatsNamedListOperatorBase",
    "LinkstatsListSpacesOperator",
]

LIST_FILTERS = tuple(spec.name for spec in SPACES.list_params)
LINKS_CONN = "linkstats_links_default"
CONN_DOC = "    :param linkstats_conn_id: connection id (default ``linkstats_links_default``). Templated.\n"
IF_EXISTS_DOC = (
    '    :param if_exists: what an existing record with the same ``name`` means: "fail" (default),\n'
    '        "skip" (return it unchanged) or "update" (write the given fields to it). Templated.\n'
)


class _SpaceOperator(_LinkOperator):
    resource = SPACES


@document_fields(SPACES, "create")
class LinkstatsCreateSpaceOperator(_SpaceOperator, LinkstatsCreateOperatorBase):
    __doc__ = "Create a space to file links in and return its record.\n\n" + IF_EXISTS_DOC + CONN_DOC

    template_fields: Sequence[str] = ("linkstats_conn_id", "name", "color", "if_exists")

    def __init__(
        self,
        *,
        name: str,
        color: int | str | None = None,
        if_exists: str = "fail",
        linkstats_conn_id: str = LINKS_CONN,
        **kwargs: Any,
    ) -> None:
        super().__init__(if_exists=if_exists, linkstats_conn_id=linkstats_conn_id, **kwargs)
        self.name = name
        self.color = color


@document_fields(SPACES, "update")
class LinkstatsUpdateSpaceOperator(_SpaceOperator, LinkstatsUpdateOperatorBase):
    __doc__ = (
        "Rename or recolour a space; only the fields given are sent.\n\n    :param space_id: the space.\n" + CONN_DOC
    )

    template_fields: Sequence[str] = ("linkstats_conn_id", "space_id", "name", "color")
    id_argument = "space_id"

    def __init__(
        self,
        *,
        space_id: int | str,
        name: str | None = None,
        color: int | str | None = None,
        linkstats_conn_id: str = LINKS_CONN,
        **kwargs: Any,
    ) -> None:
        super().__init__(linkstats_conn_id=linkstats_conn_id, **kwargs)
        self.space_id = space_id
        self.name = name
        self.color = color


class LinkstatsGetSpaceOperator(_SpaceOperator, LinkstatsGetOperatorBase):
    __doc__ = "Read one space and return its record.\n\n    :param space_id: the space. Templated.\n" + CONN_DOC

    template_fields: Sequence[str] = ("linkstats_conn_id", "space_id")
    id_argument = "space_id"

    def __init__(self, *, space_id: int | str, linkstats_conn_id: str = LINKS_CONN, **kwargs: Any) -> None:
        super().__init__(linkstats_conn_id=linkstats_conn_id, **kwargs)
        self.space_id = space_id


class LinkstatsDeleteSpaceOperator(_SpaceOperator, LinkstatsDeleteOperatorBase):
    __doc__ = (
        "Delete one space (``space_id``) or many (``space_ids``) and return the id(s).\n\n"
        "    :param missing_ok: a space that is already gone counts as deleted.\n" + CONN_DOC
    )

    template_fields: Sequence[str] = ("linkstats_conn_id", "space_id", "space_ids", "max_workers")
    id_argument = "space_id"
    ids_argument = "space_ids"

    def __init__(
        self,
        *,
        space_id: int | str | None = None,
        space_ids: Sequence[int | str] | None = None,
        missing_ok: bool = False,
        max_workers: int = 8,
        linkstats_conn_id: str = LINKS_CONN,
        **kwargs: Any,
    ) -> None:
        super().__init__(missing_ok=missing_ok, max_workers=max_workers, linkstats_conn_id=linkstats_conn_id, **kwargs)
        self.space_id = space_id
        self.space_ids = space_ids


class LinkstatsNamedListOperatorBase(LinkstatsListOperatorBase):
    """Listings of named records (spaces, pixels): search by name, sort by id or name."""

    def __init__(
        self,
        *,
        search: str | None = None,
        search_by: str | None = None,
        sort_by: str | None = None,
        sort: str | None = None,
        per_page: int | None = None,
        max_items: int | None = None,
        linkstats_conn_id: str = LINKS_CONN,
        **kwargs: Any,
    ) -> None:
        super().__init__(max_items=max_items, linkstats_conn_id=linkstats_conn_id, **kwargs)
        self.search = search
        self.search_by = search_by
        self.sort_by = sort_by
        self.sort = sort
        self.per_page = per_page


@document_filters(SPACES)
class LinkstatsListSpacesOperator(_SpaceOperator, LinkstatsNamedListOperatorBase):
    __doc__ = "List the account's spaces, every page.\n\n    :param max_items: stop after this many.\n" + CONN_DOC

    template_fields: Sequence[str] = ("linkstats_conn_id", *LIST_FILTERS, "max_items")
