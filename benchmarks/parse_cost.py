"""DAG parse cost: what importing our operator, sensor and trigger modules, and every provider module
the example DAGs import, adds on top of ``airflow.sdk``.

The scheduler's DAG processor has Airflow loaded already (it forks its parsing processes from a
parent that imported it); what a provider adds per parse is the import of the modules a DAG file
names. So each sample is two fresh interpreters, one per side (ours, the HTTP provider's; the
order alternates between samples), each importing ``airflow.sdk`` and then timing its modules
as a DAG file imports them (the module, then the names it takes from it: a lazy ``__getattr__``
is paid here, not hidden), one after the other, so each per-module figure is what that module
adds to the ones before it. The median over the samples counts. (On Airflow 2, where there is no
``airflow.sdk``, the base is what it holds in 3: the DAG, BaseOperator and BaseSensorOperator
modules.)

Bytecode caches are warm on both sides, as on a scheduler where pip compiled the provider at
install time: the probes run with ``PYTHONPYCACHEPREFIX`` (a directory outside the repo) and
without ``PYTHONDONTWRITEBYTECODE``, and a warm-up probe fills the cache first. Without that, a
source checkout would be compiled on every import and measured against pip's precompiled
Airflow, which is not what a user's scheduler does.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import Row, verdict

EXAMPLE_DAGS = Path(__file__).resolve().parent.parent / "dags_examples"
# Always measured: the operator and sensor modules, and the trigger module (a DAG with an
# AssetWatcher imports it on every parse); to these come whatever the example DAGs import.
CORE = (
    "airflow_provider_linkstats.operators.links",
    "airflow_provider_linkstats.operators.websites",
    "airflow_provider_linkstats.sensors.links",
    "airflow_provider_linkstats.triggers.links",
)


def example_dag_names(folder: Path = EXAMPLE_DAGS) -> dict[str, tuple[str, ...]]:
    """Every provider module an example DAG file imports when parsed, with the names it takes from it:
    at module level, in an ``if`` (on the Airflow version) or ``try`` too; not inside a task function,
    which runs on a worker. The probe takes those names too, so a lazy ``__getattr__`` is counted."""
    found: dict[str, set[str]] = {}

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.setdefault(node.module, set()).update(alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    found.setdefault(alias.name, set())
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(node, block, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    for path in sorted(folder.glob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {
        module: tuple(sorted(names))
        for module, names in sorted(found.items())
        if module.split(".")[0] == "airflow_provider_linkstats"
    }


def example_dag_imports(folder: Path = EXAMPLE_DAGS) -> tuple[str, ...]:
    """The provider modules of ``example_dag_names``."""
    return tuple(example_dag_names(folder))


OURS = tuple(dict.fromkeys((*CORE, *example_dag_imports())))
THEIRS = ("airflow.providers.http.operators.http", "airflow.providers.http.sensors.http")
# The names a DAG file takes from each module (``from module import name``), fetched by the probe.
NAMES = {
    **example_dag_names(),
    "airflow.providers.http.operators.http": ("HttpOperator",),
    "airflow.providers.http.sensors.http": ("HttpSensor",),
}
HTTP_LIBRARIES = ("requests", "urllib3", "httpx", "httpcore", "aiohttp")
TARGET = 1 / 10

_PROBE = r"""
import importlib, json, os, sys, time
try:
    import airflow.sdk
except ImportError:  # Airflow 2: what airflow.sdk holds in 3 (DAG, BaseOperator, BaseSensorOperator)
    import airflow.models.baseoperator, airflow.models.dag, airflow.sensors.base

def measure(modules, names):
    before = set(sys.modules)
    times = {}
    for name in modules:
        start = time.perf_counter()
        module = importlib.import_module(name)
        for attr in names.get(name, ()):  # as "from module import attr" does
            if not hasattr(module, attr):
                importlib.import_module(f"{name}.{attr}")
        times[name] = time.perf_counter() - start
    return {"times": times, "new": sorted(set(sys.modules) - before)}

sides, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({side: measure(modules, names) for side, modules in sides}))
"""


def available(modules: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(m for m in modules if importlib.util.find_spec(m) is not None)


def module_level_imports(module: str) -> list[str]:
    """HTTP libraries ``module`` imports at module level (not in a function or ``if TYPE_CHECKING``)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return []
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    visit(tree.body)
    return sorted({name.split(".")[0] for name in found} & set(HTTP_LIBRARIES))


def probe_env(env: dict[str, str]) -> dict[str, str]:
    full = {**os.environ, **env}
    full.pop("PYTHONDONTWRITEBYTECODE", None)
    full["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "linkstats-bench-pycache")
    return full


def sample(sides: list[tuple[str, tuple[str, ...]]], env: dict[str, str]) -> dict:
    command = [sys.executable, "-c", _PROBE, json.dumps(sides), json.dumps(NAMES)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(env: dict[str, str], *, samples: int = 9) -> list[Row]:
    ours, theirs = available(OURS), available(THEIRS)
    env = probe_env(env)
    sample([("ours", ours)], env)  # warm-up: bytecode caches filled
    sample([("theirs", theirs)], env)
    runs: dict[str, list[dict]] = {"ours": [], "theirs": []}
    for index in range(samples):
        sides = [("ours", ours), ("theirs", theirs)]
        if index % 2:
            sides.reverse()
        for side, modules in sides:
            runs[side].append(sample([(side, modules)], env)[side])

    def med(side: str, module: str | None = None) -> float:
        values = [sum(r["times"].values()) if module is None else r["times"][module] for r in runs[side]]
        return statistics.median(values) * 1000

    rows = []
    for side, modules in (("ours", ours), ("theirs", theirs)):
        for module in modules:
            rows.append(Row("5. DAG parse", f"import {module}", f"{med(side, module):.1f} ms", "", "", ""))
    ours_total, theirs_total = med("ours"), med("theirs")
    rows.append(
        Row(
            "5. DAG parse",
            f"ours, all {len(ours)} modules, median of {samples} fresh interpreters (DAG imports after airflow.sdk)",
            f"{ours_total:.1f} ms",
            f"{ours_total / theirs_total:.3f}x HTTP provider's",
            f"<= {TARGET:.2f}x",
            verdict(ours_total <= TARGET * theirs_total),
        )
    )
    rows.append(
        Row(
            "5. DAG parse",
            f"HTTP provider, operator + sensor modules, median of {samples}",
            f"{theirs_total:.1f} ms",
            "1.000x",
            "",
            "",
        )
    )
    # sys.modules alone cannot tell: airflow.sdk has imported httpx already. So the provider
    # modules a parse loaded are read too, for HTTP imports outside functions and TYPE_CHECKING.
    loaded = sorted({m for r in runs["ours"] for m in r["new"] if m.startswith("airflow_provider_linkstats")})
    pulled = sorted({m.split(".")[0] for r in runs["ours"] for m in r["new"]} & set(HTTP_LIBRARIES))
    static = sorted({f"{module}: {name}" for module in loaded for name in module_level_imports(module)} - {""})
    rows.append(
        Row(
            "5. DAG parse",
            f"HTTP libraries imported by the {len(loaded)} provider modules a parse loads "
            "(new in sys.modules; module-level imports in their source)",
            ", ".join(pulled + static) or "none",
            "",
            "none",
            verdict(not pulled and not static),
        )
    )
    return rows
