"""Operators for links, websites, spaces, pixels and statistics, one module each."""

__all__ = ["links", "websites", "stats", "spaces", "pixels"]
