"""`make demo`'s campaign step: the simulated visitors who click the campaign links until they expire.

Visitors see expiry the way people do, through the redirect (the click-limited links answer 404
once used up), so this costs no API request: under the rate limit every one counts. The A/B link
ends on its date, ``AB_MINUTES`` after it was made: real time, which the deferred wait sleeps
through on the triggerer's clock. With ``move_clock`` (``--move-clock``, as ``make dist`` runs
it) that minute is not waited: once the A/B link redirects (it exists), the emulator's clock moves
``AB_MINUTES`` on, past its end, and the wait takes the service's time from the emulator's next
answer, as it does from a real service's ``Date``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

AB_MINUTES = 1  # the A/B link's lifetime
VISITORS = [  # (X-Country, User-Agent, Accept-Language)
    ("US", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)", "en-US"),
    ("FR", "Mozilla/5.0 (Linux; Android 14; Pixel 8)", "fr-FR"),
    ("DE", "Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "de-DE"),
    ("GB", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0)", "en-GB"),
]


def visitors(emulator, campaign: str, stop: threading.Event, say: Callable[[str], None], move_clock: bool) -> None:
    """Click the campaign's links until they expire (the A/B link once: it ends on its date)."""
    ab = f"{campaign}-ab"
    if move_clock:
        while not stop.is_set() and emulator.click(ab, random.choice(VISITORS)).status_code != 302:
            stop.wait(0.2)
        emulator.clock(advance=60 * AB_MINUTES)
        say(f"  campaign | visitors: {ab} exists; the emulator's clock moved {AB_MINUTES} min on, past its end")
    clicks = 0
    click_limited = {f"{campaign}-geo": False, f"{campaign}-app": False}  # alias -> has redirected yet
    while not stop.is_set():
        for alias, seen in list(click_limited.items()):
            if seen is None:
                continue  # expired
            status = emulator.click(alias, random.choice(VISITORS)).status_code
            if status == 302:
                click_limited[alias] = True
                clicks += 1
            elif seen:  # it redirected before and answers 404 now: used up
                click_limited[alias] = None
        if all(seen is None for seen in click_limited.values()):
            break
        stop.wait(0.2)
    if stop.is_set():
        return
    ab_end = "has ended (the emulator's clock)" if move_clock else "ends on its date"
    say(f"  campaign | visitors: {clicks} clicks; the click-limited links have expired, the A/B link {ab_end}")
    if not move_clock:  # with move_clock it was clicked above
        emulator.click(ab, random.choice(VISITORS))
