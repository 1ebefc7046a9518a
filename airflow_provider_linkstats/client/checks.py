"""The scalar checks shared by operators, sensor, trigger and hook settings.

Apart from ``validation.py`` because the sensor's constructor runs them at every DAG parse: this
module is small and imports only the errors.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsInputError

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def is_blank(value: Any) -> bool:
    """None or an empty/whitespace string: "not given" (templates render a missing value as "")."""
    return value is None or (isinstance(value, str) and not value.strip())


def not_given(value: Any) -> bool:
    """Not given: None, an empty string, or a null param rendered by a template ("None", "null")."""
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null"))


def is_whole_text(value: Any) -> bool:
    """A whole number's digits as a string (``"5"``, ``" -2 "``)."""
    return isinstance(value, str) and value.strip().lstrip("-").isdigit()


def check_whole_number(
    field: str, value: Any, *, minimum: int = 0, maximum: int | None = None, allowed: str = ""
) -> int:
    """An int (or its digits as a string) within bounds; booleans are not numbers here."""
    number: Any = value
    if is_whole_text(value):
        number = int(value.strip())
    if isinstance(number, bool) or not isinstance(number, int) or number < minimum or (
        maximum is not None and number > maximum
    ):
        bounds = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        raise LinkstatsInputError(field, value, allowed or f"a whole number {bounds}")
    return number


def check_number(field: str, value: Any, *, positive: bool = False, allowed: str = "") -> float:
    """A real number (or its text), >= 0, or > 0 when ``positive``."""
    try:
        number = float(value) if not isinstance(value, bool) else -1.0
    except (TypeError, ValueError):
        number = -1.0
    if number < 0 or (positive and number == 0) or number != number:  # NaN
        raise LinkstatsInputError(field, value, allowed or f"a {'positive' if positive else 'non-negative'} number")
    return number


def check_bool(field: str, value: Any) -> bool:
    """A bool, or its text as a template or a connection extra gives it (true/false, 1/0, yes/no, on/off)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise LinkstatsInputError(field, value, "true or false")


def check_future(moment: dt.datetime, field: str = "expires_at", *, now: dt.datetime | None = None) -> dt.datetime:
    """An aware moment that is still ahead; a past expiry would make a link that is dead from the start.

    The error names the moment in the zone it was read in (its own offset or zone) and the time now.
    ``now``: the service's "now"; without it (before any request) the worker's clock stands in and
    only a moment past by more than any clock skew explains (``clock.PLAUSIBLE_SKEW``) is refused:
    the client checks again by the service's clock before the write.
    """
    from airflow_provider_linkstats.client.clock import PLAUSIBLE_SKEW

    current = now or dt.datetime.now(dt.timezone.utc)
    if moment <= current - (dt.timedelta(0) if now is not None else dt.timedelta(seconds=PLAUSIBLE_SKEW)):
        # An IANA name where the moment carries one (pendulum, zoneinfo), else its offset name ("UTC+02:00").
        zone = getattr(moment.tzinfo, "name", None) or getattr(moment.tzinfo, "key", None) or moment.tzname()
        raise LinkstatsInputError(
            field,
            moment.isoformat(),
            f"a moment in the future; this one is {moment:%Y-%m-%d %H:%M:%S} in {zone} (the zone it was read "
            f"in), which has passed: it is now {current.astimezone(moment.tzinfo):%Y-%m-%d %H:%M:%S} there"
            + (f" by this worker's clock, more than {PLAUSIBLE_SKEW / 3600:.0f} h later" if now is None else ""),
        )
    return moment


def check_choice(field: str, value: Any, choices: Iterable[Any]) -> Any:
    choices = tuple(choices)
    if value not in choices:
        raise LinkstatsInputError(field, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_existence_check_every(value: Any) -> int:
    return check_whole_number(
        "existence_check_every", value, allowed="a whole number of pokes >= 0 (0 checks only when the alias is learnt)"
    )


def check_max_transport_failures(value: Any) -> int:
    return check_whole_number("max_transport_failures", value, minimum=1, allowed="a whole number >= 1")
