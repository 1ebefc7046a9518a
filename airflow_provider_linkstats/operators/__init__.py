"""Operators for links, websites, statistics, spaces and pixels, one module each, the links cleanup,
bulk link launches (``launch``), statistics into a warehouse (``warehouse``), and the retry policy
they use on Airflow 3.3+ (``retry_policy``)."""

__all__ = ["links", "websites", "stats", "spaces", "pixels", "cleanup", "launch", "warehouse", "retry_policy"]
