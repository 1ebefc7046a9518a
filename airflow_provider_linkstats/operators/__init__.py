"""Operators for links, websites, statistics, spaces and pixels, one module each, and the links cleanup."""

__all__ = ["links", "websites", "stats", "spaces", "pixels", "cleanup"]
