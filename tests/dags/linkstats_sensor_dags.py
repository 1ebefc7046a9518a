"""DAGs run by tests/unit/sensors/test_links.py with dag.test(): the sensor fed from the run's conf.

Airflow 3.3's dag.test() only runs a DAG defined in a file under the dags folder, so the
variants live here. Each waits for the link(s) named in ``dag_run.conf`` (``link_id``,
``alias`` or ``link_ids``) and hands the result to a task that checks the XCom.
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

POKE_INTERVAL = 0.2


@task
def check(result, dag_run=None):
    """The sensor's XCom is the expired record (or the list of them), for the link(s) asked."""
    conf = dag_run.conf
    if conf.get("link_ids"):
        assert [r["id"] for r in result] == [int(i) for i in conf["link_ids"]], result
    else:
        assert result["id"] == int(conf["link_id"]), result
    return True


def _dag(dag_id: str, existence_check_every: int = 3, **sensor_kwargs) -> DAG:
    with DAG(
        dag_id,
        schedule=None,
        start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
        catchup=False,
        tags=["linkstats-tests"],
    ) as dag:
        sensor_kwargs.setdefault("poke_interval", POKE_INTERVAL)
        sensor_kwargs.setdefault("timeout", 30)
        wait = LinkstatsLinkExpiredSensor(
            task_id="wait",
            link_id="{{ dag_run.conf.get('link_id') or '' }}",
            alias="{{ dag_run.conf.get('alias') or '' }}",
            link_ids="{{ dag_run.conf.get('link_ids') or '' }}",
            existence_check_every=existence_check_every,
            **sensor_kwargs,
        )
        check(wait.output)
    return dag


poke = _dag("linkstats_wait_poke", mode="poke")
reschedule = _dag("linkstats_wait_reschedule", mode="reschedule", poke_interval=1)
deferrable = _dag("linkstats_wait_deferrable", deferrable=True)
timeout_poke = _dag("linkstats_wait_timeout_poke", mode="poke", timeout=3)
timeout_deferrable = _dag("linkstats_wait_timeout_deferrable", deferrable=True, timeout=3)
soft_poke = _dag("linkstats_wait_soft_fail_poke", mode="poke", timeout=3, soft_fail=True)
soft_deferrable = _dag("linkstats_wait_soft_fail_deferrable", deferrable=True, timeout=3, soft_fail=True)

# Bounded staleness (tests/integration/test_wait_staleness.py): a link whose end is days away is
# still re-read every poke_interval x existence_check_every = 3 s, in each mode.
STALENESS_BOUND = 3.0
bounded = {
    mode: _dag(f"linkstats_wait_bounded_{mode}", poke_interval=1, timeout=120, existence_check_every=3, **kwargs)
    for mode, kwargs in {
        "poke": {"mode": "poke"},
        "reschedule": {"mode": "reschedule"},
        "deferrable": {"deferrable": True},
    }.items()
}
