"""A task instance's ``ownership.Claim`` from its Airflow context: its key (the same across its tries)
and when its first try began. The rule ("is this record ours?") is ``client/ownership.py``'s.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import time
from typing import Any

from airflow_provider_linkstats.client.ownership import Claim, task_key

log = logging.getLogger(__name__)

# The Variable holding this deployment's identity when the [linkstats] deployment_id option is not
# set: made once, at random, in this deployment's metadata database, which another deployment (a
# staging beside production, running the same DAGs with the same run ids) does not share.
DEPLOYMENT_VARIABLE = "linkstats_deployment_id"

_deployment: str | None = None  # read once per process
_warned = False


def task_claim(context: Any, *, row: int | None = None, keyed: bool = True) -> Claim:
    """The claim of the task instance running in ``context`` (``row``: a bulk launch's row).
    Outside a DAG run (a test calling ``execute``): no key and no earlier try."""
    first_try, known = first_try_began(context)
    if not known:
        return Claim()
    key = None
    if keyed:
        deployment = deployment_id()
        if deployment is not None:
            ti, dag_run = context.get("ti"), context.get("dag_run")
            parts = [
                getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", ""),
                getattr(dag_run, "run_id", None) or getattr(ti, "run_id", ""),
                getattr(ti, "task_id", ""),
                _map_index(ti),
            ]
            if row is not None:
                parts.append(row)
            key = task_key(deployment, *parts)
    return Claim(key=key, first_try=first_try, known=True)


def _map_index(ti: Any) -> int:
    index = getattr(ti, "map_index", -1)
    return index if isinstance(index, int) and not isinstance(index, bool) else -1


def first_try_began(context: Any) -> tuple[dt.datetime | None, bool]:
    """(moment, known): when this task instance's first try began, which neither a retry nor a clear
    moves: the first try's own start; on Airflow 2.11 the earliest in its history; on Airflow 3 (no
    database) the run's start_date while never cleared, else its ``run_after``. Outside a run: (None, False)."""
    getter = getattr(context, "get", None)
    dag_run = getter("dag_run") if getter is not None else None
    if dag_run is None:
        return None, False
    ti = getter("ti")
    try_number = getattr(ti, "try_number", None)
    started = _aware(getattr(ti, "start_date", None))
    if isinstance(try_number, int) and not isinstance(try_number, bool) and try_number <= 1:
        return started or dt.datetime.now(dt.timezone.utc), True
    history = _first_start_in_history(ti)
    if history is not None:
        return min(history, started) if started else history, True
    if getattr(dag_run, "clear_number", None) == 0 and _aware(getattr(dag_run, "start_date", None)):
        return _aware(dag_run.start_date), True
    scheduled = str(getattr(dag_run, "run_type", "")).lower().endswith("scheduled")
    due = getattr(dag_run, "data_interval_end", None) if scheduled else getattr(dag_run, "logical_date", None)
    # The run's start_date last: it moves with a clear (a test's stand-in run may have nothing else).
    for moment in (getattr(dag_run, "run_after", None), due, getattr(dag_run, "start_date", None)):
        if isinstance(moment, dt.datetime):
            return _aware(moment), True
    return None, False


def _aware(moment: Any) -> dt.datetime | None:
    if not isinstance(moment, dt.datetime):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.timezone.utc)


def _first_start_in_history(ti: Any) -> dt.datetime | None:
    """The earliest start of the task instance's earlier tries (Airflow 2's history), or None."""
    import airflow

    if not airflow.__version__.startswith("2.") or not hasattr(ti, "dag_id") or not hasattr(ti, "run_id"):
        return None
    try:
        from airflow.models.taskinstancehistory import TaskInstanceHistory
        from airflow.utils.session import create_session
        from sqlalchemy import func, select

        with create_session() as session:
            earliest = session.scalar(
                select(func.min(TaskInstanceHistory.start_date)).where(
                    TaskInstanceHistory.dag_id == ti.dag_id,
                    TaskInstanceHistory.run_id == ti.run_id,
                    TaskInstanceHistory.task_id == ti.task_id,
                    TaskInstanceHistory.map_index == _map_index(ti),
                )
            )
    except Exception as error:  # no database here: the run's moments decide
        log.debug("Linkstats: the task instance's history could not be read (%s)", error)
        return None
    return _aware(earliest)


def deployment_id() -> str | None:
    """What tells this deployment from another running the same DAGs against the same account: the
    ``[linkstats] deployment_id`` option, else the ``linkstats_deployment_id`` Variable (made at random
    on first use); None when neither can be read."""
    global _deployment, _warned
    from airflow.providers.common.compat.sdk import conf

    configured = conf.get("linkstats", "deployment_id", fallback=None)
    if configured:
        return str(configured)
    if _deployment is None:
        try:
            _deployment = _deployment_variable()
        except Exception as error:
            if not _warned:
                _warned = True
                log.warning(
                    "Linkstats: neither the [linkstats] deployment_id option nor the %s Variable could be read (%s): "
                    "links created without an alias get one from the service, and a create whose answer is lost "
                    "stops as 'outcome unknown'", DEPLOYMENT_VARIABLE, error,
                )  # fmt: skip
            return None
    return _deployment


def _deployment_variable() -> str:
    """The Variable's value, made once (two tasks making it at once both read back the last write),
    through the Task SDK in a task, else through the metadata database."""
    from airflow.providers.common.compat.sdk import Variable

    try:
        return _made(Variable)
    except ImportError:  # Airflow 3 outside a task: the SDK's Variable needs the task runner
        from airflow.models.variable import Variable as StoredVariable

        return _made(StoredVariable)


def _made(Variable: Any) -> str:  # noqa: N803 - the class, as Airflow names it
    value = _read(Variable)
    if value:
        return str(value)
    Variable.set(
        DEPLOYMENT_VARIABLE,
        secrets.token_hex(16),
        description="airflow-provider-linkstats: this "
        "deployment's identity, part of the alias a task derives for a link without one (keep it)",
    )
    time.sleep(1.0)  # a concurrent first use writes within this second; both then read the same
    return str(_read(Variable))


def _read(variable: Any) -> str | None:
    import inspect

    # The Task SDK's Variable.get takes ``default``, the metadata database's ``default_var``.
    name = "default" if "default" in inspect.signature(variable.get).parameters else "default_var"
    return variable.get(DEPLOYMENT_VARIABLE, **{name: None})
