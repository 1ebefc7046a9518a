"""Airflow hooks for both services: ``linkstats`` holds the links and analytics hooks."""

__all__ = ["linkstats"]
