"""Wait until a short link (or every link of a list) has expired.

The scheduler imports this module on every DAG parse, so it imports no HTTP library and not the
hooks module: the hook and the trigger are imported inside the methods that use them.
"""

from __future__ import annotations

import datetime as dt
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.common.compat.sdk import (
    AirflowFailException,
    AirflowSkipException,
    BaseSensorOperator,
    PokeReturnValue,
    conf,
)

from airflow_provider_linkstats.client.checks import check_existence_check_every, check_max_transport_failures, is_blank
from airflow_provider_linkstats.client.settings import DEFAULT_EXISTENCE_CHECK_EVERY, DEFAULT_MAX_TRANSPORT_FAILURES
from airflow_provider_linkstats.hooks.connection import CONNECTION_TYPES

if TYPE_CHECKING:
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.waiting.watch import Poll, RoundResult, Watch

__all__ = ["LinkstatsLinkExpiredSensor"]

TRIGGER_CLASSPATH = "airflow_provider_linkstats.triggers.links.LinkstatsLinkExpiredTrigger"
DEFAULT_CONN_ID = CONNECTION_TYPES["linkstats_links"][2]  # LinkstatsLinksHook.default_conn_name
_JINJA_MARKERS = ("{{", "{%", "{#")
DATE_RESOLUTION = 1.0  # seconds: an HTTP Date header's, what one answer leaves open of the service's clock


class LinkstatsLinkExpiredSensor(BaseSensorOperator):
    """Wait until a link (or every link of a list) has expired, then return its record(s).

    A link with an end time is not polled: the wait sleeps (poke mode), reschedules (reschedule
    mode) or defers until then, and confirms with one read; only click limits are polled. While
    it sleeps it still reads the link's record at least every ``poke_interval`` x
    ``existence_check_every`` seconds (at most an hour), so an end moved earlier or a deleted link
    is noticed within that bound. Costs per mode and version notes: the docs page "Waiting for
    links to expire" (docs/waiting.md).

    :param link_id: the link's id, or its record (``create.output``). Templated.
    :param alias: the link's alias; with only an alias the one link holding it is looked up once.
        Templated.
    :param link_ids: ids (or records) of links that must all expire. Templated.
    :param linkstats_conn_id: connection of type ``linkstats_links``. Templated.
    :param existence_check_every: read the watched links' records (do they still exist, has
        their end moved?) every this many pokes, and while sleeping towards an end at least every
        ``poke_interval`` x this many seconds, at most an hour (0: the hour alone); a deleted link
        fails the task then.
    :param max_transport_failures: deferrable mode: transient failures in a row (no answer, 429,
        502/503/504) before the task fails.
    :param deferrable: after one poke in the worker, wait in the triggerer (no worker slot).
    :param start_from_trigger: start the wait in the triggerer, without a worker at all (implies
        ``deferrable``); see the docs page "Waiting for links to expire" for when Airflow can render them there.
    """

    template_fields: Sequence[str] = ("link_id", "alias", "link_ids", "linkstats_conn_id")
    template_fields_renderers = {"link_id": "json", "link_ids": "json"}
    ui_color = "#d9e7ff"

    def __init__(
        self,
        *,
        link_id: Any = None,
        alias: Any = None,
        link_ids: Any = None,
        linkstats_conn_id: str = DEFAULT_CONN_ID,
        existence_check_every: int = DEFAULT_EXISTENCE_CHECK_EVERY,
        max_transport_failures: int = DEFAULT_MAX_TRANSPORT_FAILURES,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        start_from_trigger: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.link_id = link_id
        self.alias = alias
        self.link_ids = link_ids
        self.linkstats_conn_id = linkstats_conn_id
        self.existence_check_every = check_existence_check_every(existence_check_every)
        self.max_transport_failures = check_max_transport_failures(max_transport_failures)
        if all(_plain(value, static=True) for value in (link_id, alias, link_ids)):
            self._watch_from_inputs()  # a literal mistake (no link at all, too) shows at DAG parse time
        self.deferrable = deferrable or start_from_trigger
        self.start_from_trigger = start_from_trigger
        if start_from_trigger:
            self._prepare_start_from_trigger()

    @cached_property
    def hook(self) -> LinkstatsLinksHook:
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

        return LinkstatsLinksHook(self.linkstats_conn_id)

    def execute(self, context: Any) -> Any:
        started = time.time()
        self._watch = None
        self._current_watch()  # rendered by now: validated before any request
        try:
            if self.deferrable:
                result = self._first_poke()
                if self._watch in result.expired:
                    return self._result(result.expired[self._watch])
                self._defer(deadline=started + self.timeout)
            return super().execute(context)
        finally:
            if "hook" in self.__dict__:
                self.hook.close()

    def poke(self, context: Any) -> PokeReturnValue | bool:
        watch = self._current_watch()
        check = None
        if self.reschedule:
            # Each reschedule is a new process: the poke number comes from Airflow's records, and
            # what the links' records said is known only from the inputs (a create task's record
            # is as old as the task). A poke woken before an end it slept towards is the periodic
            # read (the staleness bound), as is every ``pokes per bound``-th poke while polling.
            count = _reschedule_count(context) or 0
            watch.verified = watch.verified or bool(count)
            per_bound = max(1, int(self._poll.bound() // max(float(self.poke_interval), 1e-9)))
            check = bool(count) and (count % per_bound == 0 or not self._poll.polling())
        result = self._poke_once(check)
        if watch in result.expired:
            return PokeReturnValue(is_done=True, xcom_value=self._result(result.expired[watch]))
        self.log.info("%s: %d of %d not expired yet", watch.describe(), len(watch.pending), len(watch.link_ids))
        return False

    def _get_next_poke_interval(self, started_at: Any, run_duration: Callable[[], float], poke_count: int) -> float:
        """Airflow's next poke: when nothing needs polling, at the watched link's end or sooner at
        the periodic read (``Poll.next_round``), never past the sensor's timeout."""
        interval = super()._get_next_poke_interval(started_at, run_duration, poke_count)
        if self._poll.end_wake() is None:  # a poke came first: _poll is set
            return interval
        from airflow_provider_linkstats.waiting import plan
        from airflow_provider_linkstats.waiting.watch import END_GAP

        now = plan.now()
        last = self._poll.last if self._poll.last is not None else now
        wake = self._poll.next_round(last)
        at_end = wake < last + float(self.poke_interval)  # an end comes before the interval is over
        if self.reschedule:  # the next poke's process learns the service's clock from one answer
            wake += DATE_RESOLUTION  # alone: its reading may lag this one's by the Date's second
        until = min(wake - now, self.timeout - run_duration())
        if until > float(self.poke_interval):
            self.log.info("Nothing to poll: next look at %s in %.0f s (its end by %s, or the re-read every %.0f s)",
                          self._current_watch().describe(), until, plan.clock_name(self._poll.clock),
                          self._poll.bound())  # fmt: skip
        elif at_end:
            self.log.info("Next look at %s in %.1f s, at its end by %s (not a whole poke_interval on)",
                          self._current_watch().describe(), max(until, 0.0),
                          plan.clock_name(self._poll.clock))  # fmt: skip
        # ``next_round`` is an interval on unless an end comes first: then the end sets the pace.
        return max(until, END_GAP if at_end else float(self.poke_interval))

    def execute_complete(self, context: Any, event: Any = None) -> Any:
        """The trigger's event as the records, or the failure a poke would have raised."""
        from airflow_provider_linkstats.hooks.outcomes import raise_for_event

        return self._result(raise_for_event(event, soft_fail=self.soft_fail))

    def _watch_from_inputs(self) -> Watch:
        from airflow_provider_linkstats.waiting.watch import Poll, Watch

        inputs = ("link_id", "alias", "link_ids", "existence_check_every")
        watch = Watch.from_inputs(**{name: getattr(self, name) for name in inputs})
        self._poll: Poll = Poll([watch], interval=float(self.poke_interval))
        return watch

    def _current_watch(self) -> Watch:
        if getattr(self, "_watch", None) is None:
            from airflow_provider_linkstats.hooks.outcomes import failing_fast

            with failing_fast():
                self._watch = self._watch_from_inputs()
        return self._watch

    def _poke_once(self, check: bool | None = None) -> RoundResult:
        """One round of the wait's plan; a failed watch raises its error."""
        from airflow_provider_linkstats.client.protocol import drive
        from airflow_provider_linkstats.hooks.outcomes import failing_fast

        watch = self._current_watch()
        with failing_fast():
            client = self.hook.client
            self._poll.clock = client.clock  # ends are the service's: its answers tell its time
            result = drive(self._poll.round(check=check), client.call)
            if watch in result.failed:
                raise result.failed[watch]
            if watch not in result.expired and self._poll.end_wake() is not None:
                client.ensure_clock()  # the sleep towards an end is by the service's clock: known first
        return result

    def _first_poke(self) -> RoundResult:
        """The worker's one poke before deferring, failing as BaseSensorOperator's poke would."""
        try:
            return self._poke_once()
        except Exception as error:
            soft_fail = self.soft_fail and isinstance(error, AirflowFailException)
            if soft_fail or getattr(self, "never_fail", False):  # never_fail: Airflow >= 3.1
                raise AirflowSkipException(f"{error} ({'soft_fail' if soft_fail else 'never_fail'})") from error
            raise

    def _result(self, records: list[dict[str, Any]]) -> Any:
        if is_blank(self.link_ids):
            return records[0] if records else None
        return records

    def _defer(self, deadline: float) -> None:
        from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

        watch = self._watch
        watched = (  # the other inputs are the trigger's None
            {"link_id": watch.link_ids[0], "alias": watch.alias} if watch.single else {"link_ids": list(watch.link_ids)}
        )
        trigger = LinkstatsLinkExpiredTrigger(
            **self._trigger_kwargs(
                **watched,
                known=watch.to_known() or None,
                deadline=dt.datetime.fromtimestamp(deadline, dt.timezone.utc).isoformat(),
                verified=watch.verified,
                service_profile=self._handed_profile(),
                service_clock=self._handed_clock(),
            )
        )
        self.log.info("Deferring: the triggerer waits for %s to expire", watch.describe())
        # Airflow's own trigger timeout is only a backstop: the trigger reports the deadline itself.
        backstop = dt.timedelta(seconds=self.timeout + max(60.0, 2 * float(self.poke_interval)))
        self.defer(trigger=trigger, method_name="execute_complete", timeout=backstop)

    def _handed_profile(self) -> dict[str, Any] | None:
        """Where the hook found the API and its version, if it did: the triggerer needs no look-up."""
        known = getattr(self.__dict__.get("hook"), "__dict__", {}).get("known")  # None: no hook, or no look-up yet
        profile = getattr(known, "profile", None)
        if not getattr(profile, "generation", None):
            return None
        return {"service": profile.service, "root": profile.root, "generation": profile.generation}

    def _handed_clock(self) -> dict[str, float] | None:
        """The service's clock as this worker measured it, for the triggerer's first sleep."""
        clock = self._poll.clock
        if clock is None or not clock.known:
            return None
        return {"offset": round(clock.offset, 3), "uncertainty": round(clock.uncertainty, 3)}

    def _trigger_kwargs(self, **inputs: Any) -> dict[str, Any]:
        """The trigger's kwargs: what the wait is about, and the sensor's settings."""
        return {
            "linkstats_conn_id": self.linkstats_conn_id,
            **inputs,
            "poke_interval": float(self.poke_interval),
            "max_transport_failures": self.max_transport_failures,
            "existence_check_every": self.existence_check_every,
        }

    def _prepare_start_from_trigger(self) -> None:
        """Hand the raw inputs to the triggerer, when it can make sense of them before run()."""
        from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS
        from airflow.triggers.base import StartTriggerArgs

        inputs = {name: getattr(self, name) for name in ("linkstats_conn_id", "link_id", "alias", "link_ids")}
        # The first rule that names inputs wins; on 3.3+ the second names only what the first did.
        rules = (("is an XComArg (use a Jinja template string instead)", False),
                 ("is templated and Airflow < 3.3 cannot render it in the triggerer", not AIRFLOW_V_3_3_PLUS))
        for why, static in rules:
            if names := ", ".join(name for name, value in inputs.items() if not _plain(value, static=static)):
                warnings.warn(
                    f"{type(self).__name__} {self.task_id!r}: start_from_trigger is ignored because {names} {why}; "
                    "the task defers from a worker instead.",
                    UserWarning,
                    stacklevel=3,
                )
                self.start_from_trigger = False
                return
        self.start_trigger_args = StartTriggerArgs(
            trigger_cls=TRIGGER_CLASSPATH,
            # The deadline is unknown until the task starts: Airflow's trigger timeout applies.
            trigger_kwargs=self._trigger_kwargs(**inputs, deadline=None, verified=False),
            next_method="execute_complete",
            next_kwargs=None,
            timeout=dt.timedelta(seconds=self.timeout),
        )


def _reschedule_count(context: Any) -> int | None:
    """How many times this try was rescheduled (in Airflow 3's context; 2.x has a table)."""
    get = getattr(context, "get", lambda _key: None)
    if (count := get("task_reschedule_count")) is not None:
        return int(count)
    ti = get("ti")
    if ti is None:
        return None
    try:
        from airflow.models.taskreschedule import TaskReschedule
        from airflow.utils.session import create_session
        from sqlalchemy import func, select

        with create_session() as session:
            keys = ("dag_id", "task_id", "run_id", "map_index", "try_number")
            query = select(func.count()).select_from(TaskReschedule).filter_by(**{k: getattr(ti, k) for k in keys})
            return session.scalar(query)
    except Exception:  # no metadata database at hand: every poke counts as the first
        return None


def _plain(value: Any, *, static: bool = False) -> bool:
    """JSON-like data (nothing only a worker can resolve); ``static``: and no Jinja either."""
    if isinstance(value, str):
        return not static or not any(marker in value for marker in _JINJA_MARKERS)
    if isinstance(value, (list, tuple)):
        return all(_plain(v, static=static) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _plain(v, static=static) for k, v in value.items())
    return isinstance(value, (int, float, bool, type(None)))
