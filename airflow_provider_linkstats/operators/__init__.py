"""Operators for links, websites, statistics, spaces and pixels, one module each, the links cleanup,
and bulk link launches (``launch``)."""

__all__ = ["links", "websites", "stats", "spaces", "pixels", "cleanup", "launch"]
