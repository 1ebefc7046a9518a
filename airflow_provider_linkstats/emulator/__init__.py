"""A local emulator of both Linkstats services, for tests, demos and benchmarks.

``Emulator`` runs it in-process; ``python -m airflow_provider_linkstats.emulator`` (or the
``linkstats-emulator`` script) runs it from a shell. Needs the ``emulator`` extra (FastAPI, uvicorn).
"""

from __future__ import annotations

from airflow_provider_linkstats.emulator.links import CITY_HEADER, COUNTRY_HEADER
from airflow_provider_linkstats.emulator.server import Emulator

__all__ = ["CITY_HEADER", "COUNTRY_HEADER", "Emulator"]
