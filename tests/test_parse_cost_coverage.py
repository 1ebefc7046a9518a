"""The parse benchmark measures what a scheduler imports: the trigger module and every provider module
the example DAGs import at parse time (issue 19 item 6)."""

from __future__ import annotations

import subprocess
import sys

from benchmarks import parse_cost
from tests.conftest import REPO


def test_parse_row_covers_the_trigger_and_every_example_dag_import():
    dag_imports = parse_cost.example_dag_imports(REPO / "dags_examples")
    assert "airflow_provider_linkstats.triggers.links" in dag_imports  # the cleanup-on-expiry DAG's watcher
    assert "airflow_provider_linkstats.operators.stats" in dag_imports  # the weekly report's
    assert set(dag_imports) | {"airflow_provider_linkstats.triggers.links"} <= set(parse_cost.OURS)


def test_imports_inside_task_functions_are_not_counted(tmp_path):
    (tmp_path / "dag.py").write_text(
        "from airflow_provider_linkstats.operators.links import X\n"
        "if True:\n    from airflow_provider_linkstats.triggers.links import Y\n"
        "def task():\n    from airflow_provider_linkstats.hooks.linkstats import Z\n"
    )
    assert parse_cost.example_dag_imports(tmp_path) == (
        "airflow_provider_linkstats.operators.links",
        "airflow_provider_linkstats.triggers.links",
    )


def test_async_client_module_loads_no_http_stack():
    """The trigger module reaches client.aio at parse time; httpx must wait for the triggerer."""
    probe = (
        "import sys, airflow_provider_linkstats.client.aio\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'httpx', 'httpcore', 'anyio', 'requests'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stdout
