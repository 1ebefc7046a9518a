"""The cleanup example's shape: on Airflow 3.1+ a dry run, then a person's approval over the ceiling."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO


def load_module():
    spec = importlib.util.spec_from_file_location(
        "example_cleanup_expired", REPO / "dags_examples" / "linkstats_cleanup_expired.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_over_the_ceiling_the_example_asks_a_person_before_deleting():
    module = load_module()
    dag = module.dag
    # Every delete waits for a confirming read at most 15 s old (templated, so a run's params may change it).
    assert dag.get_task("delete_old").evidence_max_age == 15
    assert "evidence_max_age" in dag.get_task("delete_old").template_fields
    if module.ApprovalOperator is None:  # Airflow < 3.1: one streaming task, its ceiling an error
        assert set(dag.task_ids) == {"delete_old", "summary"}
        return
    assert set(dag.task_ids) == {"plan", "check_ceiling", "delete_old", "approve", "delete_approved", "summary"}
    assert dag.get_task("plan").dry_run is True and dag.get_task("delete_old").dry_run is False
    assert dag.get_task("check_ceiling").downstream_task_ids == {"delete_old", "approve"}
    assert dag.get_task("approve").downstream_task_ids == {"delete_approved"}
    assert isinstance(dag.get_task("approve"), module.ApprovalOperator)
    assert dag.get_task("approve").defaults == ["Reject"]  # no answer in 12 hours: nothing deleted
    branch = dag.get_task("check_ceiling").python_callable
    assert branch({"over_ceiling": True}) == "approve"
    assert branch({"over_ceiling": False}) == "delete_old"
    # The approved run deletes at most what the plan counted, whatever the share.
    approved = dag.get_task("delete_approved")
    assert approved.max_deletes == "{{ ti.xcom_pull(task_ids='plan')['matched'] }}" and approved.max_share is None


@pytest.mark.parametrize("value", ["None", "null", "", None])
def test_a_null_param_rendered_by_a_template_means_no_limit(value):
    from airflow_provider_linkstats.operators.cleanup import is_blank

    assert is_blank(value)
