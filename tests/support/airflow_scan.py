"""Run DAGs in real Airflow, then scan everything Airflow kept for secrets.

``run_dags_and_scan`` makes a fresh Airflow home (SQLite), copies the DAG files into its dags
folder, runs ``airflow db migrate`` (or copies a migrated database), then runs each DAG with
``dag.test()`` in one subprocess (the function behind ``airflow dags test``) and scans:

- every file under ``AIRFLOW_HOME/logs``. ``dag.test()`` runs tasks in-process on both Airflow
  2.11 and 3.x and writes no per-task log file (its task logs go to the process's output), so
  the runner's whole output, task logs included, is written to ``logs/dag_test/<dag_id>.log``;
- every row of every table of the metadata database (``xcom``, ``rendered_task_instance_fields``,
  ``trigger``, ``task_instance``, ``dag_run``, ``log``, the serialized DAGs ...), except the
  tables meant to hold secrets (``connection``, ``variable``); Fernet-encrypted values (trigger
  kwargs) are decrypted with the home's key first, and compressed blobs decompressed.

A secret counts as found raw, percent-encoded or JSON-escaped. The lead can point it at any DAG
folder: ``run_dags_and_scan(REPO / "dags_examples", [DagRun("linkstats_cleanup_expired")], ...)``.

Run as ``python -m tests.support.airflow_scan <dags_folder> <json list of [dag_id, conf]>`` it is the
runner: it runs the DAGs and prints ``RESULT <dag_id> <state>`` per run.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus

REPO = Path(__file__).resolve().parents[2]
SECRET_TABLES = frozenset({"connection", "variable"})  # where secrets belong (encrypted)


@dataclass(frozen=True)
class DagRun:
    dag_id: str
    conf: dict = field(default_factory=dict)


@dataclass
class ScanReport:
    states: dict[str, str]  # dag_id -> final DagRun state
    files: list[Path]  # log files scanned
    rows: dict[str, int]  # table -> rows scanned
    decrypted: int  # Fernet tokens decrypted and scanned
    hits: list[str]  # "<where>: <secret name>"
    output: str  # the runner's output (also in logs/dag_test/)
    home: Path | None = None
    fernet_key: str = ""

    def decrypt(self, value: str) -> str:
        """A value as scanned: decrypted when it is a Fernet token of this home."""
        from cryptography.fernet import Fernet, InvalidToken

        try:
            return Fernet(self.fernet_key.encode()).decrypt(value.encode()).decode()
        except (InvalidToken, ValueError):
            return value

    def text_of_logs(self) -> str:
        return "\n".join(p.read_text("utf-8", "replace") for p in self.files)


def secret_forms(secret: str) -> set[str]:
    """How a secret may appear in text: raw, percent-encoded, JSON-escaped."""
    return {secret, quote(secret, safe=""), quote_plus(secret, safe=""), json.dumps(secret)[1:-1]}


def find_secrets(text: str, secrets: Mapping[str, str]) -> list[str]:
    return [name for name, secret in secrets.items() if any(form in text for form in secret_forms(secret))]


def run_dags_and_scan(
    dags_folder: Path | Iterable[Path],
    runs: list[DagRun],
    secrets: Mapping[str, str],
    home: Path,
    env: Mapping[str, str],
    *,
    during: Callable[[threading.Event], None] | None = None,
    timeout: float = 600,
    migrated_db: Path | None = None,
) -> ScanReport:
    """Run ``runs`` in a fresh Airflow home, then scan its logs and database for ``secrets``.

    :param dags_folder: a folder of DAG files (its ``*.py`` files are copied), or DAG files.
    :param secrets: name -> value of every secret that must not appear.
    :param env: extra environment for Airflow (connections, variables, DAG settings).
    :param during: run in a thread while the DAGs run (e.g. simulated visitors); it gets an event
        set when the runs are over.
    :param migrated_db: a metadata database fresh from ``airflow db migrate`` under the same
        Airflow, copied instead of migrating again (5-10 s).
    """
    home.mkdir(parents=True, exist_ok=True)
    dags = home / "dags"
    dags.mkdir(exist_ok=True)
    sources = sorted(Path(dags_folder).glob("*.py")) if isinstance(dags_folder, (str, Path)) else list(dags_folder)
    for source in sources:
        shutil.copy(source, dags / source.name)
    fernet_key = _fernet_key()
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_"))},
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__FERNET_KEY": fernet_key,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    logs = home / "logs" / "dag_test"
    logs.mkdir(parents=True, exist_ok=True)
    if migrated_db is not None:
        shutil.copyfile(migrated_db, home / "airflow.db")
    else:
        migrate = subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if migrate.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed:\n{migrate.stdout[-3000:]}\n{migrate.stderr[-3000:]}")

    stop = threading.Event()
    helper = threading.Thread(target=during, args=(stop,), daemon=True) if during else None
    if helper:
        helper.start()
    try:
        plan = json.dumps([[run.dag_id, run.conf] for run in runs])
        runner = subprocess.run(
            [sys.executable, "-m", "tests.support.airflow_scan", str(dags), plan],
            env=full_env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        stop.set()
        if helper:
            helper.join(timeout=10)
    output = runner.stdout + runner.stderr
    (logs / "runner.log").write_text(output)
    states = {}
    for line in runner.stdout.splitlines():
        if line.startswith("RESULT "):
            _, dag_id, state = line.split(maxsplit=2)
            states[dag_id] = state

    report = ScanReport(states, [], {}, 0, [], output, home=home, fernet_key=fernet_key)
    for path in sorted((home / "logs").rglob("*")):
        if path.is_file():
            report.files.append(path)
            for name in find_secrets(path.read_bytes().decode("utf-8", "replace"), secrets):
                report.hits.append(f"{path.relative_to(home)}: {name}")
    _scan_database(home / "airflow.db", secrets, fernet_key, report)
    return report


def _scan_database(path: Path, secrets: Mapping[str, str], fernet_key: str, report: ScanReport) -> None:
    from cryptography.fernet import Fernet, InvalidToken

    fernet = Fernet(fernet_key.encode())
    db = sqlite3.connect(path)
    try:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            if table in SECRET_TABLES:
                continue
            cursor = db.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - names from sqlite_master
            columns = [d[0] for d in cursor.description]
            count = 0
            for number, row in enumerate(cursor):
                count += 1
                for column, value in zip(columns, row, strict=True):
                    for text in _readings(value):
                        if text.startswith("gAAAAA"):
                            try:
                                text = fernet.decrypt(text.encode()).decode("utf-8", "replace")
                                report.decrypted += 1
                            except (InvalidToken, ValueError):
                                pass
                        for name in find_secrets(text, secrets):
                            report.hits.append(f"table {table} row {number} column {column}: {name}")
            report.rows[table] = count
    finally:
        db.close()


def _readings(value: object) -> list[str]:
    """A cell as text, every way it may be stored: plain, UTF-8 bytes, zlib-compressed bytes."""
    if value is None:
        return []
    if isinstance(value, bytes):
        readings = [value.decode("utf-8", "replace")]
        try:
            readings.append(zlib.decompress(value).decode("utf-8", "replace"))
        except zlib.error:
            pass
        return readings
    return [str(value)]


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


# -- the runner, in the Airflow subprocess ---------------------------------------------------------


def _run(dags_folder: str, plan: list[list]) -> int:
    import importlib.util

    from tests.support.airflow_backports import reuse_in_process_execution_api

    reuse_in_process_execution_api()

    from airflow import settings

    # Each file from a dags folder of its own, which is the dags folder while its DAGs run: on
    # Airflow 3.3 every dag.test() parses the whole dags folder and writes each DAG's serialization
    # (apache/airflow#64884), so one folder for all would parse every example for every run.
    dags, folders = {}, {}
    for path in sorted(Path(dags_folder).glob("*.py")):
        alone = Path(dags_folder).parent / "dags-alone" / path.stem
        alone.mkdir(parents=True, exist_ok=True)
        (alone / path.name).symlink_to(path)
        spec = importlib.util.spec_from_file_location(f"scan_dag_{path.stem}", alone / path.name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for value in vars(module).values():
            if type(value).__name__ == "DAG" and hasattr(value, "dag_id"):
                dags[value.dag_id], folders[value.dag_id] = value, str(alone)
    failed = 0
    for dag_id, conf in plan:
        print(f"=== dag.test({dag_id!r}) ===", flush=True)
        os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = settings.DAGS_FOLDER = folders[dag_id]
        try:
            run = dags[dag_id].test(run_conf=conf or None)
            state = str(getattr(run.state, "value", run.state))
        except Exception:  # noqa: BLE001 - reported (and scanned), and the next DAG still runs
            import traceback

            traceback.print_exc()
            state = "error"
        failed += state != "success"
        print(f"RESULT {dag_id} {state}", flush=True)
    return 1 if failed else 0


def _exit_now(code: int) -> None:
    """Exit without the interpreter's teardown of Airflow's ~2,000 modules and the in-process
    Execution API's threads: 8-12 s after the last run on Airflow 3.3 (3 s on 2.11), for nothing
    the scan reads. Every run is committed to the database by then; the exit handlers (logging's
    flush among them) still run, and the output is flushed."""
    import atexit

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_now(_run(sys.argv[1], json.loads(sys.argv[2])))
