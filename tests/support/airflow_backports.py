"""Airflow 3.3's fix for slow ``dag.test()``, applied to 3.0-3.2 in the test suite only.

Before 3.3, ``dag.test()`` built a new in-process Execution API (a FastAPI app with Cadwyn's
versioned routers, and an event loop thread) for every task: about 2 s of CPU per task on this
machine, most of a DAG test's time (the weekly report's 13 tasks took 30 s on 3.2.2 and 2.4 s on
3.3.2). Airflow 3.3 keeps one per process (apache/airflow#65235); this does the same on the older
versions. It changes how fast Airflow's test harness runs our DAGs, not what the provider does:
the tasks, their API calls and their results are the same.
"""

from __future__ import annotations

import functools

import airflow

_VERSION = tuple(int(part) for part in airflow.__version__.split(".")[:2])


def reuse_in_process_execution_api() -> bool:
    """Cache ``in_process_api_server()`` where Airflow does not; True if it was patched now."""
    if not (3, 0) <= _VERSION < (3, 3):
        return False
    from airflow.sdk.execution_time import supervisor

    if hasattr(supervisor.in_process_api_server, "cache_info"):
        return False
    supervisor.in_process_api_server = functools.lru_cache(maxsize=1)(supervisor.in_process_api_server)

    run_with_dag = supervisor.InProcessTestSupervisor._api_client

    def _api_client(dag=None):
        # As in 3.3: a call without a DAG (a trigger run inline) must not see the DAG bag the
        # previous task's call left on the shared app.
        if dag is None:
            from airflow.api_fastapi.common.dagbag import dag_bag_from_app

            supervisor.in_process_api_server().app.dependency_overrides.pop(dag_bag_from_app, None)
        return run_with_dag(dag)

    supervisor.InProcessTestSupervisor._api_client = staticmethod(_api_client)
    return True
