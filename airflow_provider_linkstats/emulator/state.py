"""The emulator's moving parts, shared by its HTTP apps and its Python API."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_linkstats.emulator.clock import Clock
from airflow_provider_linkstats.emulator.faults import Faults
from airflow_provider_linkstats.emulator.ratelimit import RateLimiter
from airflow_provider_linkstats.emulator.stats import Stats
from airflow_provider_linkstats.emulator.store import Store


@dataclass
class EmulatorState:
    clock: Clock
    store: Store
    faults: Faults
    stats: Stats
    limiter: RateLimiter

    def reset(self) -> None:
        """Empty store, real time, no faults, no statistics, fresh rate-limit windows (the
        configured limits stay)."""
        self.faults.clear()
        self.clock.reset()
        self.store.reset()
        self.stats.reset()
        self.limiter.reset()
