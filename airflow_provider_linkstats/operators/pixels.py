"""Operators for tracking pixels (fired on every click of the links that carry them) on the links service.

A create finds an existing pixel by its name (``if_exists``), so a retried task makes no twin.
"""

from __future__ import annotations

from airflow_provider_linkstats.client.contract import PIXELS
from airflow_provider_linkstats.operators import base

__all__ = [
    "LinkstatsCreatePixelOperator",
    "LinkstatsUpdatePixelOperator",
    "LinkstatsGetPixelOperator",
    "LinkstatsDeletePixelOperator",
    "LinkstatsListPixelsOperator",
]


class _PixelOperator(base.LinksServiceMixin):
    resource = PIXELS


class LinkstatsCreatePixelOperator(_PixelOperator, base.LinkstatsCreateOperatorBase):
    """Create a tracking pixel and return its record."""


class LinkstatsUpdatePixelOperator(_PixelOperator, base.LinkstatsUpdateOperatorBase):
    """Change a pixel; only the fields given are sent."""


class LinkstatsGetPixelOperator(_PixelOperator, base.LinkstatsGetOperatorBase):
    """Read one pixel and return its record."""


class LinkstatsDeletePixelOperator(_PixelOperator, base.LinkstatsDeleteOperatorBase):
    """Delete one pixel (``pixel_id``) or many (``pixel_ids``) and return the id(s)."""


class LinkstatsListPixelsOperator(_PixelOperator, base.LinkstatsListOperatorBase):
    """List the account's pixels, every page."""
