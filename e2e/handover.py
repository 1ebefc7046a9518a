"""Triggerer HA: the triggerer holding the campaign's deferred wait and the expiry watcher is killed.

Airflow runs any number of triggerers; each heartbeats in the metadata database, and one whose
heartbeat is older than ``[triggerer] triggerer_health_check_threshold`` is taken for dead: the
others assign its triggers to themselves. Here (``deployment.py``: heartbeat 1 s, threshold 8 s):

1. before the campaign, ``prepare()`` creates the expiry links (not expired yet) and unpauses
   ``linkstats_cleanup_on_expiry``: its AssetWatcher's trigger goes to triggerer-1, the only one;
2. ``during_wait()``, once the campaign's ``wait_for_expiry`` is deferred and triggerer-1 holds
   its trigger too (both read from the metadata database: ``trigger.triggerer_id`` -> ``job``),
   starts triggerer-2, expires the first batch of links (one click each) and waits for the
   watcher's asset event reporting them; then SIGKILLs triggerer-1 (its process group and its
   descendants' groups);
3. triggerer-2 takes both triggers over; the second batch expires and must be reported by it.
   From the first batch's expiry until then, ``default_pool`` has 0 slots: the cleanup run their
   event started waits, so the links triggerer-1 reported are still Expired when the new watcher
   walks the listing (the walk that reports the second batch), and a watcher that forgot them
   would report them again (a second event, a second run, 404s). Every link must be reported
   once and deleted once (DELETE answered 200, never 404), none left;
4. the watcher is stopped (DAG paused and its file parsed again, which drops the watcher) before
   the campaign's visitors expire the campaign's links: the watcher would report those too, and
   its cleanup would race the campaign's own report and teardown.

Only public behaviour is read: Airflow's REST API (runs, task tries, asset events), its metadata
database (trigger and job tables), the recording proxy and the emulator's listing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pendulum

from e2e.deployment import TRIGGERER_HEALTH_CHECK_THRESHOLD, AirflowApi
from e2e.procs import Proc, wait_until
from e2e.recorder import Recorder
from e2e.scenarios import API, VISITORS, Emulator, RunResult, delete_statuses, kill_worker
from e2e.summary import table

CAMPAIGN_DAG = "linkstats_campaign_launch"
EXPIRY_DAG = "linkstats_cleanup_on_expiry"
WATCHED_ASSET = "linkstats_expired_links"
WAIT_TASK = "wait_for_expiry"
EXPIRY_PREFIX = "e2e-expiry"
BEFORE_KILL, AFTER_TAKEOVER = 6, 4  # links expired while triggerer-1 holds the watcher, then after the takeover
POKE_INTERVAL = 2  # LINKSTATS_EXPIRY_POKE_INTERVAL in deployment.py


class Metadata:
    """Read-only queries on Airflow's metadata database."""

    def __init__(self, database: str) -> None:
        user, rest = database.split("@", 1)
        address, dbname = rest.split("/", 1)
        host, port = address.rsplit(":", 1)
        self.params = {"user": user, "host": host, "port": int(port), "dbname": dbname}

    def rows(self, sql: str, *args: object) -> list[tuple]:
        import psycopg2

        with contextlib.closing(psycopg2.connect(connect_timeout=10, **self.params)) as conn:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(sql, args)
                return cursor.fetchall()

    def triggerer_jobs(self) -> dict[int, dict]:
        rows = self.rows(
            "SELECT id, state, start_date, end_date, latest_heartbeat FROM job"
            " WHERE job_type = 'TriggererJob' ORDER BY id"
        )
        return {r[0]: {"state": r[1], "start": r[2], "end": r[3], "heartbeat": r[4]} for r in rows}

    def live_triggerers(self) -> list[int]:
        """Jobs that heartbeat within the threshold, as Airflow's trigger assignment counts them."""
        now = datetime.now(timezone.utc)
        return [
            job_id
            for job_id, job in self.triggerer_jobs().items()
            if job["end"] is None
            and job["heartbeat"] is not None
            and (now - job["heartbeat"]).total_seconds() < TRIGGERER_HEALTH_CHECK_THRESHOLD
        ]

    def watcher_triggers(self) -> list[tuple[int, int | None]]:
        """(trigger id, triggerer job id) of the watched asset's watcher triggers."""
        return self.rows(
            "SELECT t.id, t.triggerer_id FROM trigger t JOIN asset_watcher w ON w.trigger_id = t.id"
            " JOIN asset a ON a.id = w.asset_id WHERE a.name = %s ORDER BY t.id",
            WATCHED_ASSET,
        )

    def task_trigger(self, dag_id: str, run_id: str, task_id: str) -> tuple[int, int | None] | None:
        rows = self.rows(
            "SELECT t.id, t.triggerer_id FROM task_instance ti JOIN trigger t ON t.id = ti.trigger_id"
            " WHERE ti.dag_id = %s AND ti.run_id = %s AND ti.task_id = %s",
            dag_id,
            run_id,
            task_id,
        )
        return rows[0] if rows else None


def clock(moment: float | datetime | None) -> str:
    if moment is None:
        return "-"
    if isinstance(moment, datetime):
        moment = moment.timestamp()
    return time.strftime("%H:%M:%S", time.localtime(moment)) + f".{int(moment % 1 * 10)}"


@dataclass
class TriggererKill:
    api: AirflowApi
    emulator: Emulator
    recorder: Recorder
    db: Metadata
    first: Proc  # triggerer-1, running from the start
    start_second: Callable[[], Proc]  # starts triggerer-2
    say: Callable[[str], None]
    links: list[dict] = field(default_factory=list)  # the expiry links: id, alias, batch, clicked
    job_ids: dict[str, int] = field(default_factory=dict)  # triggerer name -> job id
    procs: dict[str, Proc] = field(default_factory=dict)
    triggers: dict[str, int] = field(default_factory=dict)  # "wait" / "watcher" -> trigger id
    held_by: dict[str, str] = field(default_factory=dict)  # trigger -> triggerer name, at the kill
    killed_at: float | None = None
    killed_groups: list[int] = field(default_factory=list)
    last_heartbeat: datetime | None = None
    second_up_at: float | None = None
    taken_over: dict[str, tuple[str, float]] = field(default_factory=dict)  # trigger -> (triggerer, when)
    watcher_stopped_at: float | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # -- before the campaign ---------------------------------------------------------------
    def prepare(self) -> None:
        self.procs["triggerer-1"] = self.first
        live = wait_until(self.db.live_triggerers, 120, "triggerer-1's heartbeat")
        if len(live) != 1:
            raise RuntimeError(f"expected one live triggerer before the campaign, found jobs {live}")
        self.job_ids["triggerer-1"] = live[0]
        for index in range(BEFORE_KILL + AFTER_TAKEOVER):
            record = self.emulator.api(
                "POST",
                "/links",
                data={
                    "url": f"https://example.com/expiry/{index}",
                    "alias": f"{EXPIRY_PREFIX}-{index}",
                    "expiration_clicks": 1,
                    "domain_id": 1,
                },
            )["data"]
            batch = "before the kill" if index < BEFORE_KILL else "after the takeover"
            self.links.append({"id": int(record["id"]), "alias": record["alias"], "batch": batch, "clicked": None})
        polls_before = self._listing_polls()
        self.api.set_paused(EXPIRY_DAG, False)
        self.api.reparse(EXPIRY_DAG)
        watcher = wait_until(
            lambda: [t for t in self.db.watcher_triggers() if t[1] is not None], 180, "the watcher's trigger"
        )
        if len(watcher) != 1:
            raise RuntimeError(f"expected one watcher trigger, found {watcher}")
        self.triggers["watcher"] = watcher[0][0]
        # Nothing but the watcher lists links through Airflow's connection before the campaign starts.
        wait_until(lambda: self._listing_polls() > polls_before, 120, "the watcher's first walk of the listing")
        self.say(
            f"expiry watcher: trigger {watcher[0][0]} on triggerer-1 (job {watcher[0][1]}), walking the "
            f"Expired listing every {POKE_INTERVAL} s; {len(self.links)} links to expire"
        )

    def _listing_polls(self) -> int:
        return sum(1 for _, path, _ in self.recorder.timeline("GET") if path == f"{API}/links")

    def _name(self, job_id: int | None) -> str:
        return next((name for name, jid in self.job_ids.items() if jid == job_id), f"job {job_id}")

    def _holders(self, run_id: str) -> dict[str, int | None]:
        wait = self.db.task_trigger(CAMPAIGN_DAG, run_id, WAIT_TASK)
        watcher = [t for t in self.db.watcher_triggers() if t[0] == self.triggers.get("watcher")]
        return {
            "wait": wait[1] if wait and wait[0] == self.triggers.get("wait") else None,
            "watcher": watcher[0][1] if watcher else None,
        }

    # -- during the campaign's deferred wait ---------------------------------------------
    def during_wait(self, run_id: str, result: RunResult) -> None:
        wait = wait_until(
            lambda: (t := self.db.task_trigger(CAMPAIGN_DAG, run_id, WAIT_TASK)) and t[1] is not None and t,
            600,
            f"{WAIT_TASK} to defer",
        )
        self.triggers["wait"] = wait[0]
        holders = self._holders(run_id)
        if set(holders.values()) != {self.job_ids["triggerer-1"]}:
            raise RuntimeError(f"triggerer-1 does not hold both triggers: {holders}")
        self.say(f"{WAIT_TASK} deferred: trigger {wait[0]} on triggerer-1 (job {wait[1]}), with the watcher")

        known = set(self.db.triggerer_jobs())
        self.procs["triggerer-2"] = self.start_second()
        second = wait_until(
            lambda: [j for j in self.db.live_triggerers() if j not in known], 240, "triggerer-2's heartbeat", 1
        )
        self.job_ids["triggerer-2"] = second[0]
        self.second_up_at = time.time()
        self.say(f"triggerer-2 up (job {second[0]}); expiring {BEFORE_KILL} links")

        # The cleanup runs the first batch's events start must not delete them before triggerer-2's
        # watcher has walked the listing: with the links gone, a watcher that forgot what triggerer-1
        # reported would have nothing to repeat. So no task starts meanwhile: default_pool at 0 slots.
        first_batch = self.links[:BEFORE_KILL]
        slots = self.api.call("GET", "/pools/default_pool")["slots"]
        self._set_slots(0)
        try:
            self._expire(first_batch)
            wait_until(
                lambda: {link["id"] for link in first_batch} <= set(self._reported()),
                180,
                "the first batch reported",
                1,
            )
            time.sleep(2)  # the watcher has finished the poll that reported them
            holders = self._holders(run_id)
            if set(holders.values()) != {self.job_ids["triggerer-1"]}:
                raise RuntimeError(f"triggerer-1 no longer holds both triggers: {holders}")
            self.held_by = {what: "triggerer-1" for what in holders}
            self.killed_groups = kill_worker(self.first)
            self.killed_at = time.time()
            self.say(
                f"first batch reported by the watcher; triggerer-1 holds trigger {self.triggers['wait']} (wait) and "
                f"{self.triggers['watcher']} (watcher): SIGKILL to process groups {self.killed_groups}"
            )
            second_job = self.job_ids["triggerer-2"]

            def moved() -> bool:
                now = time.time()
                for what, holder in self._holders(run_id).items():
                    if holder == second_job and what not in self.taken_over:
                        self.taken_over[what] = ("triggerer-2", now)
                return len(self.taken_over) == 2

            wait_until(moved, 120, "triggerer-2 to take both triggers over", 0.3)
            self.last_heartbeat = self.db.triggerer_jobs()[self.job_ids["triggerer-1"]]["heartbeat"]
            silent = self.killed_at - self.last_heartbeat.timestamp()
            after = ", ".join(f"{what} after {at - self.killed_at:.1f} s" for what, (_, at) in self.taken_over.items())
            self.say(
                f"taken over by triggerer-2: {after}"
                + f" (last heartbeat of triggerer-1 {silent:.1f} s before the kill); its watcher walks the listing"
                " with the first batch still in it"
            )
            # The second batch expires now, with the first still listed (no cleanup task can run): the
            # event that reports it proves triggerer-2's watcher walked past the first batch, and it
            # must hold the second batch only.
            second_batch = self.links[BEFORE_KILL:]
            self._expire(second_batch)
            wait_until(
                lambda: {link["id"] for link in second_batch} <= set(self._reported()),
                180,
                "triggerer-2's watcher to report the second batch",
                1,
            )
            time.sleep(2 * POKE_INTERVAL + 1)  # a late repeat would come within a walk or two
            still = BEFORE_KILL - self._deleted(first_batch)
            repeated = [i for i in self._reported() if i in {link["id"] for link in first_batch}]
            self.notes.append(
                f"triggerer-2's watcher reported the second batch while the {still}/{BEFORE_KILL} links triggerer-1 "
                f"had reported were still Expired and undeleted (default_pool at 0 slots until "
                f"{time.time() - self.killed_at:.0f} s after the kill): the first batch reported "
                f"{len(repeated) - BEFORE_KILL} more times"
            )
            if still != BEFORE_KILL:
                self.problems.append(f"only {still}/{BEFORE_KILL} reported links were still there after the takeover")
        finally:
            self._set_slots(slots)

        wait_until(
            lambda: self._deleted(self.links) == len(self.links) and self._runs_done(),
            300,
            "every expiry link deleted by the event-driven cleanup",
            1,
        )
        # A few more walks: a repeated report would show up as a new asset event and a new run.
        events, runs = len(self._events()), len(self._runs())
        time.sleep(3 * POKE_INTERVAL + 2)
        wait_until(self._runs_done, 120, "the event-driven runs to finish", 1)
        if len(self._events()) != events or len(self._runs()) != runs:
            self.problems.append(
                f"the watcher reported again after every link was deleted: {len(self._events()) - events} more "
                f"asset events, {len(self._runs()) - runs} more runs"
            )

        # The campaign's links are next to expire: the watcher must not see them (see the docstring).
        self.api.set_paused(EXPIRY_DAG, True)
        self.api.reparse(EXPIRY_DAG)
        wait_until(lambda: not self.db.watcher_triggers(), 180, "the paused DAG's watcher to be dropped", 1)
        self.watcher_stopped_at = time.time()
        self.say("event-driven cleanup done; watcher dropped (DAG paused); the campaign's visitors come")

    def _set_slots(self, slots: int) -> None:
        self.api.call("PATCH", "/pools/default_pool", params={"update_mask": "slots"}, json={"slots": slots})

    def _expire(self, links: list[dict]) -> None:
        for index, link in enumerate(links):
            status = self.emulator.click(link["alias"], VISITORS[index % len(VISITORS)])
            if status != 302:
                raise RuntimeError(f"click on {link['alias']}: HTTP {status}, expected the 302 redirect")
            link["clicked"] = time.time()

    def _asset_id(self) -> int:
        if "asset" not in self.triggers:
            found = self.api.call("GET", "/assets", params={"name_pattern": WATCHED_ASSET, "limit": 100})["assets"]
            self.triggers["asset"] = next(a["id"] for a in found if a["name"] == WATCHED_ASSET)
        return self.triggers["asset"]

    def _events(self) -> list[dict]:
        params = {"asset_id": self._asset_id(), "limit": 100, "order_by": "timestamp"}
        return self.api.call("GET", "/assets/events", params=params)["asset_events"]

    def _reported(self) -> list[int]:
        """Link ids of every asset event's payload (as the example DAG reads them), repeats included."""
        ids = []
        for event in self._events():
            payload = (event.get("extra") or {}).get("payload") or {}
            ids += [int(record["id"]) for record in payload.get("links", [])]
        return ids

    def _deleted(self, links: list[dict]) -> int:
        by_path = self.recorder.statuses_by_path("DELETE")
        return sum(1 for link in links if 200 in by_path.get(f"{API}/links/{link['id']}", []))

    def _runs(self) -> list[dict]:
        return self.api.call("GET", f"/dags/{EXPIRY_DAG}/dagRuns", params={"limit": 100})["dag_runs"]

    def _runs_done(self) -> bool:
        return all(run["state"] in ("success", "failed") for run in self._runs())

    # -- after the campaign --------------------------------------------------------------
    def result(self, campaign: RunResult) -> RunResult:
        """The event-driven cleanup's verdict; the campaign's wait is checked into ``campaign``."""
        result = RunResult(EXPIRY_DAG)
        result.problems += self.problems
        result.notes += self.notes
        if self.killed_at is None:
            result.problems.append("no triggerer was killed")
        if len(self.taken_over) != 2:
            result.problems.append(f"not every trigger was taken over: {self.taken_over}")
        runs = self._runs()
        result.run_id = f"{len(runs)} asset-triggered runs"
        states = sorted({run["state"] for run in runs})
        result.state = "success" if runs and states == ["success"] else ",".join(states) or "no run"
        starts = [pendulum.parse(run["start_date"]) for run in runs if run.get("start_date")]
        ends = [pendulum.parse(run["end_date"]) for run in runs if run.get("end_date")]
        result.seconds = (max(ends) - min(starts)).total_seconds() if starts and ends else 0.0

        events = self._events()
        reports: dict[int, list[dict]] = {}
        for event in events:
            for record in ((event.get("extra") or {}).get("payload") or {}).get("links", []):
                reports.setdefault(int(record["id"]), []).append(event)
        source, by_path = delete_statuses(self.emulator, self.recorder)
        ours = {link["id"] for link in self.links}
        strangers = sorted(set(reports) - ours)
        if strangers:
            result.notes.append(f"the watcher also reported links {strangers} (not created for this check)")
        repeated = sorted(link["alias"] for link in self.links if len(reports.get(link["id"], [])) > 1)
        unreported = sorted(link["alias"] for link in self.links if not reports.get(link["id"]))
        answers = {link["id"]: by_path.get(f"{API}/links/{link['id']}", []) for link in self.links}
        not_once = sorted(link["alias"] for link in self.links if answers[link["id"]] != [200])
        all_404 = sum(statuses.count(404) for statuses in answers.values())
        left = self.emulator.links(search=EXPIRY_PREFIX, search_by="alias")
        if repeated:
            result.problems.append(f"reported more than once (a repeated event after the takeover?): {repeated}")
        if unreported:
            result.problems.append(f"never reported: {unreported}")
        if not_once:
            result.problems.append(f"not deleted exactly once with 200: {not_once}")
        if left:
            result.problems.append(f"{len(left)} expiry links left: {[link['alias'] for link in left]}")
        after = [e for e in events if self.killed_at and pendulum.parse(e["timestamp"]).timestamp() > self.killed_at]
        second_ids = {link["id"] for link in self.links[BEFORE_KILL:]}
        reported_after = {
            int(r["id"]) for e in after for r in ((e.get("extra") or {}).get("payload") or {}).get("links", [])
        }
        if self.killed_at and reported_after != second_ids:
            result.problems.append(
                f"after the takeover the watcher reported {sorted(reported_after)}, expected the second batch "
                f"{sorted(second_ids)} only"
            )
        total_200 = sum(statuses.count(200) for statuses in answers.values())
        result.notes.append(
            f"{len(self.links)} links, {len(events)} asset events, {len(runs)} runs; DELETE answered 200 "
            f"{total_200} times, 404 {all_404} times (from {source}); links left: {len(left)}"
        )
        self._reports, self._answers, self._source = reports, answers, source
        self._check_wait(campaign)
        return result

    def _check_wait(self, campaign: RunResult) -> None:
        """The wait survived the kill in place: one try, successful, no retry or re-deferral from scratch."""
        if not campaign.run_id or self.killed_at is None:
            return
        tries = self.api.tries(CAMPAIGN_DAG, campaign.run_id, WAIT_TASK)
        try_states = [(t["try_number"], t["state"]) for t in tries]
        if try_states != [(1, "success")]:
            campaign.problems.append(f"{WAIT_TASK} tries after the triggerer kill: {try_states}")
        campaign.notes.append(
            f"{WAIT_TASK} deferred on triggerer-1, taken over by triggerer-2 after "
            f"{self.taken_over.get('wait', ('', self.killed_at))[1] - self.killed_at:.1f} s; tries: {try_states}"
        )

    def tables(self) -> str:
        """The kill and the takeover, and per link: its reports and its DELETE answers."""
        jobs = self.db.triggerer_jobs() if self.job_ids else {}
        rows = []
        for name, job_id in self.job_ids.items():
            proc = self.procs.get(name)
            held = ", ".join(
                f"{what} (trigger {self.triggers[what]})" for what, who in self.held_by.items() if who == name
            )
            if name == "triggerer-1":
                fate = f"SIGKILL at {clock(self.killed_at)} (groups {self.killed_groups})" if self.killed_at else "-"
            else:
                fate = (
                    ", ".join(
                        f"took over {what} at {clock(when)} (+{when - (self.killed_at or when):.1f} s)"
                        for what, (who, when) in self.taken_over.items()
                        if who == name
                    )
                    or "-"
                )
            heartbeat = jobs.get(job_id, {}).get("heartbeat")
            pid, pgid = (proc.pid, proc.pgid) if proc else ("-", "-")
            rows.append([name, job_id, pid, pgid, held or "-", clock(heartbeat), fate])
        out = [
            f"Triggerers (heartbeat {1} s, taken for dead after {TRIGGERER_HEALTH_CHECK_THRESHOLD} s without one):",
            table(["triggerer", "job", "pid", "pgid", "held at the kill", "last heartbeat", "fate"], rows),
        ]
        reports = getattr(self, "_reports", {})
        answers = getattr(self, "_answers", {})
        if self.links:
            link_rows = []
            for link in self.links:
                events = reports.get(link["id"], [])
                by = []
                for event in events:
                    stamp = pendulum.parse(event["timestamp"]).timestamp()
                    who = "triggerer-1" if self.killed_at is None or stamp < self.killed_at else "triggerer-2"
                    runs = ",".join(r["run_id"].split("__")[-1][11:19] for r in event.get("created_dagruns", []))
                    by.append(f"event {event['id']} {clock(stamp)} by {who} -> run {runs or '?'}")
                statuses = answers.get(link["id"], [])
                link_rows.append(
                    [
                        link["alias"],
                        link["id"],
                        link["batch"],
                        clock(link["clicked"]),
                        "; ".join(by) or "never",
                        ", ".join(map(str, statuses)) or "none",
                    ]
                )
            source = getattr(self, "_source", "?")
            out += [
                f"\nEvent-driven cleanup ({EXPIRY_DAG}), per link (DELETE answers from {source}):",
                table(["link", "id", "expired", "at", "reported", "DELETE answers"], link_rows),
            ]
        return "\n".join(out)
