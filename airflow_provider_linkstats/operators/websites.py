"""Operators for tracked websites on the analytics service.

The website field ``email`` (e-mail reports on or off) is the argument ``email_reports`` here,
because ``email`` on every Airflow operator already means "where to send failure alerts".
"""

from __future__ import annotations

from airflow_provider_linkstats.operators import base

__all__ = [
    "LinkstatsCreateWebsiteOperator",
    "LinkstatsUpdateWebsiteOperator",
    "LinkstatsGetWebsiteOperator",
    "LinkstatsDeleteWebsiteOperator",
    "LinkstatsListWebsitesOperator",
]


class LinkstatsCreateWebsiteOperator(base.AnalyticsServiceMixin, base.LinkstatsCreateOperatorBase):
    """Create a tracked website and return its record."""


class LinkstatsUpdateWebsiteOperator(base.AnalyticsServiceMixin, base.LinkstatsUpdateOperatorBase):
    """Change a website; only the fields given are sent."""


class LinkstatsGetWebsiteOperator(base.AnalyticsServiceMixin, base.LinkstatsGetOperatorBase):
    """Read one website and return its record."""


class LinkstatsDeleteWebsiteOperator(base.AnalyticsServiceMixin, base.LinkstatsDeleteOperatorBase):
    """Delete one website (``website_id``) or many (``website_ids``) and return the id(s)."""


class LinkstatsListWebsitesOperator(base.AnalyticsServiceMixin, base.LinkstatsListOperatorBase):
    """List websites matching the filters, walking every page, and return the records."""
