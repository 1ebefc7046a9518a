"""Operators for links, websites, statistics, spaces and pixels, one module each, the links cleanup,
bulk link launches (``launch``) and statistics into a warehouse (``warehouse``)."""

__all__ = ["links", "websites", "stats", "spaces", "pixels", "cleanup", "launch", "warehouse"]
