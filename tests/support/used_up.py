"""Visitors who use up a campaign link the moment anyone looks at it, for DAGs that wait for one.

The docs' DAGs wait for 100 or 500 clicks, or for a date next month. A test cannot wait that
long, and cannot change what the page shows either: these visitors make the wait end at its
first look instead (tests/system/test_docs_dags.py, tests/system/test_deployment_readme.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class UsedUpLinks:
    """Visitors who use up a link the moment anyone looks at it.

    ``expire()`` clicks each active click-limited link (``aliases``: those whose alias passes)
    up to its limit through the emulator's redirect logic (``store.visit``, as ``GET /{alias}``
    does), and moves the emulator's clock past the end of each active dated link. ``install()``
    runs it before the emulator handles any request, and returns the undo.
    """

    def __init__(self, emu, aliases: Callable[[str], bool] = lambda alias: True) -> None:
        self.emu, self.aliases = emu, aliases
        self.clicks = 0
        self.expired: list[str] = []  # aliases, in the order they were used up
        self._lock = threading.Lock()

    def expire(self) -> None:
        """Use up every active link that ``aliases`` selects (records each alias in ``expired``)."""
        from airflow_provider_linkstats.emulator.links import Visitor

        store = self.emu.store
        with self._lock:
            for link in store.links():
                if not self.aliases(link["alias"]) or store.link_status(link["id"]) != 1:
                    continue
                limit = link.get("expiration_clicks") or link.get("clicks_limit")
                if limit:
                    for _ in range(int(limit) - int(link.get("clicks") or 0)):
                        store.visit(link["alias"], "", Visitor(country="US", platform="iOS"), None)
                        self.clicks += 1
                self.expired.append(link["alias"])
                step = 60.0
                while store.link_status(link["id"]) == 1 and step < 400 * 86400:  # an end date: time moves on
                    self.emu.clock.advance(seconds=step)
                    step *= 2

    def install(self) -> Callable[[], None]:
        faults = self.emu.faults
        take = faults.take

        def take_after_visits(method: str, path: str):
            self.expire()
            return take(method, path)

        faults.take = take_after_visits
        return lambda: faults.__dict__.pop("take", None)
