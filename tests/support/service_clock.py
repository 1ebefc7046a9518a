"""Waits that follow the emulator's clock through its jumps.

The waits read the service's clock from the ``Date`` header of its answers
(``waiting.plan.offset``), so a test that moves the emulator's clock before a wait starts needs
nothing. A real clock never jumps while a wait sleeps; a test that jumps the emulator's clock
(days on, to expire a link by date at once) makes the waits follow it at once, not from their
next answer.
"""

from __future__ import annotations

import time


def follow_the_emulators_clock(monkeypatch, emu) -> None:
    from airflow_provider_linkstats.waiting import plan

    monkeypatch.setattr(plan, "offset", lambda clock: emu.clock.now().timestamp() - time.time())
