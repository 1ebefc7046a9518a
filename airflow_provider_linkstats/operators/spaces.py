"""Operators for spaces (folders of links) on the links service.

A create finds an existing space by its name (``if_exists``), so a retried task makes no twin.
"""

from __future__ import annotations

from airflow_provider_linkstats.client.contract import SPACES
from airflow_provider_linkstats.operators import base

__all__ = [
    "LinkstatsCreateSpaceOperator",
    "LinkstatsUpdateSpaceOperator",
    "LinkstatsGetSpaceOperator",
    "LinkstatsDeleteSpaceOperator",
    "LinkstatsListSpacesOperator",
]


class _SpaceOperator(base.LinksServiceMixin):
    resource = SPACES


class LinkstatsCreateSpaceOperator(_SpaceOperator, base.LinkstatsCreateOperatorBase):
    """Create a space to file links in and return its record."""


class LinkstatsUpdateSpaceOperator(_SpaceOperator, base.LinkstatsUpdateOperatorBase):
    """Rename or recolour a space; only the fields given are sent."""


class LinkstatsGetSpaceOperator(_SpaceOperator, base.LinkstatsGetOperatorBase):
    """Read one space and return its record."""


class LinkstatsDeleteSpaceOperator(_SpaceOperator, base.LinkstatsDeleteOperatorBase):
    """Delete one space (``space_id``) or many (``space_ids``) and return the id(s)."""


class LinkstatsListSpacesOperator(_SpaceOperator, base.LinkstatsListOperatorBase):
    """List the account's spaces, every page."""
