"""Operators for links, websites, spaces, pixels and statistics, one module each; bulk link launches in ``launch``."""

__all__ = ["links", "websites", "stats", "spaces", "pixels", "launch"]
