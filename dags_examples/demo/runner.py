"""One Airflow process that runs example DAGs one after the other with ``dag.test()``, for the demo.

``airflow dags test`` in a process of its own costs, per DAG, Airflow's imports and the start of
its in-process Execution API (about 35 s of a busy 2-core machine); a runner pays them once, then
runs each DAG as ``airflow dags test`` does. The demo starts one runner per line of steps (the
background campaign has its own, with its own SQLite database).

Protocol: after ``airflow db migrate`` (in process) the runner prints ``DEMO-RUNNER ready``; then
for each JSON line on stdin, ``{"dag_id": ..., "conf": {...}}`` with optionally ``"logical_date"``
(ISO 8601: one run of a backfill) and ``"env"`` (variables set first, e.g. an ``AIRFLOW_CONN_*``),
it runs that DAG, its tasks' log lines streaming on stdout as they are written, and prints
``DEMO-RUNNER <dag_id> <state>``.
"""

from __future__ import annotations

import inspect
import json
import os
import runpy
import sys
from pathlib import Path

MARK = "DEMO-RUNNER"
# The demo's dags folder is dags_examples/ (AIRFLOW__CORE__DAGS_FOLDER says so); a test may set another.
DAGS = Path(os.environ.get("AIRFLOW__CORE__DAGS_FOLDER") or Path(__file__).resolve().parents[1])


def say(message: str) -> None:
    print(f"{MARK} {message}", flush=True)


def load_dag(dag_id: str):
    """The DAG from its file in the dags folder (dag.test() on Airflow 3.3 runs only those):
    ``<dag_id>.py``, else the file that names it (a file may define several DAGs)."""
    from airflow.providers.common.compat.sdk import DAG

    files = [DAGS / f"{dag_id}.py"]
    files += [path for path in sorted(DAGS.glob("*.py")) if path not in files and dag_id in path.read_text()]
    for path in files:
        if not path.is_file():
            continue
        namespace = runpy.run_path(str(path), run_name=f"demo_{path.stem}")
        found = [value for value in namespace.values() if isinstance(value, DAG) and value.dag_id == dag_id]
        if found:
            return found[0]
    raise LookupError(f"no DAG {dag_id!r} in {DAGS}")


def run(request: dict) -> str:
    os.environ.update(request.get("env") or {})
    dag = load_dag(request["dag_id"])
    kwargs = {"run_conf": request.get("conf") or {}}
    if request.get("logical_date"):
        import pendulum

        # Airflow 3 names it logical_date, 2.x execution_date.
        name = "logical_date" if "logical_date" in inspect.signature(dag.test).parameters else "execution_date"
        kwargs[name] = pendulum.parse(request["logical_date"])
    dag_run = dag.test(**kwargs)
    state = str(getattr(dag_run, "state", None) or "unknown")
    return state.split(".")[-1].lower()


def main() -> int:
    from airflow.utils import db

    db.upgradedb()
    say("ready")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            state = run(request)
        except Exception as error:  # the demo reports it and goes on with its other steps
            print(f"{type(error).__name__}: {error}", flush=True)
            state = "error"
        say(f"{request['dag_id']} {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
