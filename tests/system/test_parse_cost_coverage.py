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
    assert "LinkstatsLinksExpiredEventTrigger" in parse_cost.NAMES["airflow_provider_linkstats.triggers.links"]
    assert "airflow_provider_linkstats.operators.cleanup" in dag_imports  # the daily cleanup's
    assert parse_cost.NAMES["airflow_provider_linkstats.operators.cleanup"] == ("LinkstatsCleanupLinksOperator",)


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
    assert parse_cost.example_dag_names(tmp_path) == {  # the probe takes these names, as the DAG file does
        "airflow_provider_linkstats.operators.links": ("X",),
        "airflow_provider_linkstats.triggers.links": ("Y",),
    }


def test_async_client_module_loads_no_http_stack():
    """The trigger module reaches client.aio at parse time; httpx must wait for the triggerer."""
    probe = (
        "import sys, airflow_provider_linkstats.client.aio\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'httpx', 'httpcore', 'anyio', 'requests'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stdout


# What a DAG parse loads: the modules the parse row measures (the operator, sensor and trigger
# modules and every provider module an example DAG imports), imported after the base a scheduler's
# parser already holds. Only these provider modules may come with them: the hook classes, the dialect
# tables, the contract validation, the clients, the retry and rate-limit machinery and the waiting
# plans stay for the worker and the triggerer.
PARSE_TIME_MODULES = {"airflow_provider_linkstats"} | {
    f"airflow_provider_linkstats.{name}"
    for name in (
        "client",
        "client.checks",
        "client.contract",
        "client.errors",
        "client.records",
        "client.settings",
        "hooks",  # the package alone (its __init__ imports nothing): for hooks.connection
        "hooks.connection",
        "hooks.outcomes",
        "operators",
        "operators.base",
        "operators.arguments",  # the arguments base.py declares operators with (moved out of it)
        "operators.cleanup",
        "operators.launch",
        "operators.warehouse",
        "operators.lineage",
        "operators.links",
        "operators.stats",
        "operators.websites",
        "sensors",
        "sensors.links",
        "triggers",
        "triggers.links",
    )
}
# Loaded by none of them (on Airflow 3 ``airflow.sdk`` has httpx and tenacity already: what counts
# is what the provider's modules add).
RUN_TIME_LIBRARIES = {"requests", "urllib3", "httpx", "httpcore", "h11", "anyio", "sniffio", "aiohttp", "tenacity"}


def test_a_parse_loads_no_hook_client_or_http_library():
    modules = parse_cost.available(parse_cost.OURS)
    assert set(parse_cost.CORE) <= set(modules)
    # The benchmark's own probe: airflow.sdk (Airflow 2: the modules it holds in 3), then each module
    # and the names the example DAGs take from it, in a fresh interpreter.
    added = parse_cost.sample([("ours", modules)], parse_cost.probe_env({}))["ours"]["new"]
    ours = {m for m in added if m.split(".")[0] == "airflow_provider_linkstats"}
    assert ours <= PARSE_TIME_MODULES, sorted(ours - PARSE_TIME_MODULES)
    assert not {m.split(".")[0] for m in added} & RUN_TIME_LIBRARIES, sorted(added)
    # Not vacuous: the sensor and trigger modules are new on every Airflow version (nothing preloads them).
    assert {"airflow_provider_linkstats.sensors.links", "airflow_provider_linkstats.triggers.links"} <= ours


def test_trigger_module_loads_nothing_its_run_needs():
    """A DAG with an asset watcher imports the trigger module at every parse; the checks, the hook, the
    poller and the waiting plans are loaded by run(), in the triggerer."""
    module = "airflow_provider_linkstats.triggers.links"
    added = set(parse_cost.sample([("ours", (module,))], parse_cost.probe_env({}))["ours"]["new"])
    assert module in added
    run_time = {
        "airflow_provider_linkstats.client.checks",
        "airflow_provider_linkstats.client.validation",
        "airflow_provider_linkstats.hooks.linkstats",
        "airflow_provider_linkstats.triggers.poller",
        "airflow_provider_linkstats.waiting.watch",
        "airflow_provider_linkstats.client.aio",
    }
    assert not added & run_time, sorted(added & run_time)
