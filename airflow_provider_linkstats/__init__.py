"""Apache Airflow provider for the Linkstats link-shortening and web-analytics services."""

__version__ = "0.1.0"
