"""The WARNINGs a load tells about a change of the account's zone: the zones, the days and what was
done, and what the user can do where a day fitted between the zones cannot be made exact."""

from __future__ import annotations

from typing import Any


def say_zone_change(log: Any, change: Any, plan: Any, sink: Any, inexact: set[Any], breakdown: str | None) -> None:
    if change is None:
        return
    old, new = " and ".join(change.old) or "an earlier zone (days since deleted)", change.zone
    _say_days_left(log, change, plan, sink, old, new)
    for transition in plan.transitions:
        _say_transition(log, transition, transition.day in inexact, old, new, sink, breakdown)


def _say_days_left(log: Any, change: Any, plan: Any, sink: Any, old: str, new: str) -> None:
    if change.stranded:
        log.warning(
            "days %s were loaded incomplete in %s and the account's time zone is now %s: the days loaded "
            "complete around them hold every hour of theirs, so they stay incomplete (to complete them, delete "
            "the days loaded in %s from %s and load them again)", ", ".join(map(str, change.stranded)), old, new,
            old, sink.describe(),
        )  # fmt: skip
    if change.reload and change.boundary is None:
        log.warning(
            "the account's time zone is now %s: days %s, loaded incomplete in %s, are loaded again in %s",
            new, ", ".join(map(str, change.reload)), old, new,
        )  # fmt: skip
    if plan.covered:
        log.warning(
            "the account's time zone changed from %s to %s: %s's days %s are held by days loaded complete in %s "
            "(the same dates, or every hour of theirs), so they are not loaded (their clicks are in those days)",
            old, new, new, ", ".join(map(str, plan.covered)), old,
        )  # fmt: skip


def _say_transition(log: Any, transition: Any, inexact: bool, old: str, new: str, sink: Any,
                    breakdown: str | None) -> None:  # fmt: skip
    hours = (transition.end - transition.start).total_seconds() / 3600
    span = f"{transition.start:%Y-%m-%d %H:%M} to {transition.end:%Y-%m-%d %H:%M} UTC ({hours:.4g} hours)"
    if not inexact:
        asked = ", ".join(sorted({str(day) for day, _, _ in transition.hours}))
        log.warning(
            "the account's time zone changed from %s to %s: %s in %s is loaded from %s, between the days "
            "loaded in %s, counted from the hour series of %s, so no hour is in two days or in none",
            old, new, transition.day, new, span, old, asked,
        )  # fmt: skip
        return
    why = "a breakdown's rows have no hours" if breakdown else "the service's hours do not begin at its ends"
    log.warning(
        "the account's time zone changed from %s to %s: %s in %s spans %s between the days loaded complete in "
        "%s, and cannot be counted exactly (%s): it is written and kept INCOMPLETE, and each run loads it "
        "again. What you can do: have every day in %s, by deleting the days loaded in %s from %s (their "
        "rows, and their state: the days table's rows of zone %s, or the days of that zone in the "
        "selection's _state/<selection>/ files) and loading them again; or leave %s incomplete",
        old, new, transition.day, new, span, old, why, new, old, sink.describe(), old, transition.day,
    )  # fmt: skip


def say_empty_interval(log: Any, end: Any, zone: str, plan: Any, account_zone: str | None) -> None:
    log.warning(
        "the data interval is empty (%s: a trigger timetable, such as Airflow 3's schedule=\"@daily\", or a "
        "manual run), so this run loads the day of %s that ended last before it: %s. For days that follow "
        "the logical dates, schedule with data intervals: schedule=CronDataIntervalTimetable(\"0 0 * * *\", "
        "timezone=%r) (from airflow.timetables.interval), which loads the day of each logical date",
        end.isoformat(), zone, ", ".join(map(str, plan.dates)) or "none", account_zone or zone,
    )  # fmt: skip


def say_overlapping(log: Any, found: set[Any]) -> None:
    log.warning(
        "days %s share hours with days another run of this selection wrote meanwhile in another zone (the "
        "account's time zone changed during the runs): written INCOMPLETE, so the next run loads them "
        "again, fitted to the days held then", ", ".join(map(str, sorted(found))),
    )  # fmt: skip


def say_gone(log: Any, gone: list[int], noun: str, sink: Any) -> None:
    if not gone:
        return
    shown = ", ".join(map(str, gone[:20])) + (f" and {len(gone) - 20} more" if len(gone) > 20 else "")
    log.warning(
        "%d %s were deleted after the listing read them (their statistics answered 404): %s; their rows "
        "already in %s are left as they were", len(gone), noun, shown, sink.describe(),
    )  # fmt: skip
