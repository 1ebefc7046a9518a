"""Operators for spaces (folders of links) on the links service.

In the style of the link operators: every field an explicit, templated keyword argument, checked
against the contract after rendering and before any request; a create finds an existing record
by its name (``if_exists``), so a retried task makes no twin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_linkstats.client.contract import SPACES
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS
from airflow_provider_linkstats.operators.base import (
    IF_EXISTS_DOC,
    LinksServiceMixin,
    LinkstatsCreateOperatorBase,
    LinkstatsDeleteOperatorBase,
    LinkstatsGetOperatorBase,
    LinkstatsNamedListOperatorBase,
    LinkstatsUpdateOperatorBase,
    document_fields,
    document_filters,
)

__all__ = [
    "LinkstatsCreateSpaceOperator",
    "LinkstatsUpdateSpaceOperator",
    "LinkstatsGetSpaceOperator",
    "LinkstatsDeleteSpaceOperator",
    "LinkstatsNamedListOperatorBase",
    "LinkstatsListSpacesOperator",
]

LIST_FILTERS = tuple(spec.name for spec in SPACES.list_params)


class _SpaceOperator(LinksServiceMixin):
    resource = SPACES


@document_fields(SPACES, "create")
class LinkstatsCreateSpaceOperator(_SpaceOperator, LinkstatsCreateOperatorBase):
    __doc__ = "Create a space to file links in and return its record.\n\n" + IF_EXISTS_DOC

    template_fields: Sequence[str] = ("linkstats_conn_id", "name", "color", "if_exists")

    def __init__(
        self,
        *,
        name: str,
        color: int | str | None = None,
        if_exists: str = "fail",
        **kwargs: Any,
    ) -> None:
        super().__init__(if_exists=if_exists, **kwargs)
        self.name = name
        self.color = color


@document_fields(SPACES, "update")
class LinkstatsUpdateSpaceOperator(_SpaceOperator, LinkstatsUpdateOperatorBase):
    __doc__ = (
        "Rename or recolour a space; only given fields are sent.\n\n    :param space_id: the space (id or record).\n"
    )

    template_fields: Sequence[str] = ("linkstats_conn_id", "space_id", "name", "color")
    id_argument = "space_id"

    def __init__(
        self,
        *,
        space_id: int | str,
        name: str | None = None,
        color: int | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.space_id = space_id
        self.name = name
        self.color = color


class LinkstatsGetSpaceOperator(_SpaceOperator, LinkstatsGetOperatorBase):
    __doc__ = "Read one space and return its record.\n\n    :param space_id: the space (id or record). Templated.\n"

    template_fields: Sequence[str] = ("linkstats_conn_id", "space_id")
    id_argument = "space_id"

    def __init__(self, *, space_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.space_id = space_id


class LinkstatsDeleteSpaceOperator(_SpaceOperator, LinkstatsDeleteOperatorBase):
    __doc__ = (
        "Delete one space (``space_id``) or many (``space_ids``) and return the id(s).\n\n"
        "    :param missing_ok: a space that is already gone counts as deleted.\n"
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
        max_workers: int = DEFAULT_MAX_WORKERS,
        **kwargs: Any,
    ) -> None:
        super().__init__(missing_ok=missing_ok, max_workers=max_workers, **kwargs)
        self.space_id = space_id
        self.space_ids = space_ids



@document_filters(SPACES)
class LinkstatsListSpacesOperator(_SpaceOperator, LinkstatsNamedListOperatorBase):
    __doc__ = "List the account's spaces, every page.\n\n    :param max_items: stop after this many.\n"

    template_fields: Sequence[str] = ("linkstats_conn_id", *LIST_FILTERS, "max_items")
