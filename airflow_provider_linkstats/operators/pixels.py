"""Operators for tracking pixels (fired on every click of the links that carry them) on the links service.

In the style of the link operators: every field an explicit, templated keyword argument, checked
against the contract after rendering and before any request; a create finds an existing pixel by
its name (``if_exists``), so a retried task makes no twin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_linkstats.client.contract import PIXELS
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
    "LinkstatsCreatePixelOperator",
    "LinkstatsUpdatePixelOperator",
    "LinkstatsGetPixelOperator",
    "LinkstatsDeletePixelOperator",
    "LinkstatsListPixelsOperator",
]

LIST_FILTERS = tuple(spec.name for spec in PIXELS.list_params)


class _PixelOperator(LinksServiceMixin):
    resource = PIXELS


@document_fields(PIXELS, "create")
class LinkstatsCreatePixelOperator(_PixelOperator, LinkstatsCreateOperatorBase):
    __doc__ = "Create a tracking pixel and return its record.\n\n" + IF_EXISTS_DOC

    template_fields: Sequence[str] = ("linkstats_conn_id", "name", "type", "value", "if_exists")

    def __init__(
        self,
        *,
        name: str,
        type: str,
        value: str,
        if_exists: str = "fail",
        **kwargs: Any,
    ) -> None:
        super().__init__(if_exists=if_exists, **kwargs)
        self.name = name
        self.type = type
        self.value = value


@document_fields(PIXELS, "update")
class LinkstatsUpdatePixelOperator(_PixelOperator, LinkstatsUpdateOperatorBase):
    __doc__ = "Change a pixel; only the fields given are sent.\n\n    :param pixel_id: the pixel (id or record).\n"

    template_fields: Sequence[str] = ("linkstats_conn_id", "pixel_id", "name", "type", "value")
    id_argument = "pixel_id"

    def __init__(
        self,
        *,
        pixel_id: int | str,
        name: str | None = None,
        type: str | None = None,
        value: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pixel_id = pixel_id
        self.name = name
        self.type = type
        self.value = value


class LinkstatsGetPixelOperator(_PixelOperator, LinkstatsGetOperatorBase):
    __doc__ = "Read one pixel and return its record.\n\n    :param pixel_id: the pixel (id or record). Templated.\n"

    template_fields: Sequence[str] = ("linkstats_conn_id", "pixel_id")
    id_argument = "pixel_id"

    def __init__(self, *, pixel_id: int | str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pixel_id = pixel_id


class LinkstatsDeletePixelOperator(_PixelOperator, LinkstatsDeleteOperatorBase):
    __doc__ = (
        "Delete one pixel (``pixel_id``) or many (``pixel_ids``) and return the id(s).\n\n"
        "    :param missing_ok: a pixel that is already gone counts as deleted.\n"
    )

    template_fields: Sequence[str] = ("linkstats_conn_id", "pixel_id", "pixel_ids", "max_workers")
    id_argument = "pixel_id"
    ids_argument = "pixel_ids"

    def __init__(
        self,
        *,
        pixel_id: int | str | None = None,
        pixel_ids: Sequence[int | str] | None = None,
        missing_ok: bool = False,
        max_workers: int = DEFAULT_MAX_WORKERS,
        **kwargs: Any,
    ) -> None:
        super().__init__(missing_ok=missing_ok, max_workers=max_workers, **kwargs)
        self.pixel_id = pixel_id
        self.pixel_ids = pixel_ids


@document_filters(PIXELS)
class LinkstatsListPixelsOperator(_PixelOperator, LinkstatsNamedListOperatorBase):
    __doc__ = "List the account's pixels, every page.\n\n    :param max_items: stop after this many.\n"

    template_fields: Sequence[str] = ("linkstats_conn_id", *LIST_FILTERS, "max_items")
