"""Daily cleanup: delete expired links older than a threshold, streaming, with a ceiling.

``delete_old`` walks the listing and deletes as it goes (``LinkstatsCleanupLinksOperator``): each
link is decided from its own record, XCom holds counts and a few ids whatever the number of
links, and a run that would delete more than its ceiling (``max_deletes``, or ``max_share`` of
all links) fails before its first delete.

On Airflow 3.1+ a dry run (``plan``) counts what would go first; over the ceiling, a person decides
in the UI (``approve``: Approve or Reject, Reject after 12 hours without an answer), and
``delete_approved`` deletes at most the approved count. On older Airflow ``delete_old`` runs alone.
"""

from __future__ import annotations

import datetime as dt

import pendulum
from airflow.providers.common.compat.sdk import DAG, Param, task

from airflow_provider_linkstats.operators.cleanup import LinkstatsCleanupLinksOperator

# A killed worker or a failure that may pass: three more tries, a minute apart (the service's
# rate-limit window is a minute). Each try resumes; see docs/operators.md, "Retries and recovery".
RETRIES = {"retries": 3, "retry_delay": dt.timedelta(minutes=1)}

try:  # Airflow 3.1+: human-in-the-loop operators of the standard provider
    from airflow.providers.standard.operators.hitl import ApprovalOperator
except Exception:  # ImportError, or the provider's "needs Airflow 3.1+"
    ApprovalOperator = None

RULES = {"expired": True, "older_than_days": "{{ params.older_than_days }}", "max_workers": "{{ params.max_workers }}"}
CLEANUP_TASKS = ("delete_old", "delete_approved")

with DAG(
    dag_id="linkstats_cleanup_expired",
    description="Delete expired links older than a threshold",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    default_args=RETRIES,
    max_active_runs=1,
    tags=["linkstats", "example"],
    params={
        "older_than_days": Param(30, type="integer", minimum=0, description="Keep expired links younger than this"),
        "max_deletes": Param(10000, type="integer", minimum=0, description="At most this many deletions per run"),
        "max_share": Param(
            0.5, type="number", minimum=0, maximum=1, description="At most this share of all links per run"
        ),
        "max_workers": Param(8, type="integer", minimum=1, maximum=16, description="Concurrent deletes"),
    },
) as dag:
    ceiling = {"max_deletes": "{{ params.max_deletes }}", "max_share": "{{ params.max_share }}"}
    delete_old = LinkstatsCleanupLinksOperator(task_id="delete_old", **RULES, **ceiling)

    @task(trigger_rule="none_failed_min_one_success")
    def summary(**context) -> dict[str, int]:
        ti = context["ti"]
        result = next(r for r in (ti.xcom_pull(task_ids=t) for t in CLEANUP_TASKS) if r)
        counts = {name: result[name] for name in ("matched", "deleted", "already_gone", "kept")}
        print(f"cleanup summary: {counts}; some deleted ids: {result['sample_ids'][:10]}")
        return counts

    if ApprovalOperator is not None:
        plan = LinkstatsCleanupLinksOperator(task_id="plan", dry_run=True, **RULES, **ceiling)

        @task.branch
        def check_ceiling(planned: dict) -> str:
            """Within the ceiling: delete; over it: ask a person first."""
            return "approve" if planned["over_ceiling"] else "delete_old"

        approve = ApprovalOperator(
            task_id="approve",
            subject="Delete {{ ti.xcom_pull(task_ids='plan')['matched'] }} expired links?",
            body=(
                "The daily cleanup found {{ ti.xcom_pull(task_ids='plan')['matched'] }} expired links created more "
                "than {{ params.older_than_days }} day{{ '' if params.older_than_days | int == 1 else 's' }} ago, "
                "of {{ ti.xcom_pull(task_ids='plan')['total_links'] }} "
                "links: more than its ceiling of {{ ti.xcom_pull(task_ids='plan')['ceiling'] }}. Some of them: "
                "{{ ti.xcom_pull(task_ids='plan')['sample_ids'] }}."
            ),
            defaults="Reject",
            response_timeout=dt.timedelta(hours=12),
        )
        # At most what was approved: more links matching by then stop it before its first delete.
        delete_approved = LinkstatsCleanupLinksOperator(
            task_id="delete_approved",
            max_deletes="{{ ti.xcom_pull(task_ids='plan')['matched'] }}",
            max_share=None,
            **RULES,
        )
        check_ceiling(plan.output) >> [delete_old, approve]
        approve >> delete_approved
        [delete_old, delete_approved] >> summary()
    else:
        delete_old >> summary()
