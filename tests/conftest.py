"""Test setup: a private Airflow home, connections pointing at real local servers.

Airflow reads its configuration at import, so the environment is set here, before any test
module imports it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
API_KEY = "test-key-5f0c9a1e"  # distinctive, so a leak is easy to grep for

_home = tempfile.mkdtemp(prefix="linkstats-airflow-home-")
# dag.test() on Airflow 3.3 only runs DAGs from files under the dags folder, and walks it: the
# folder holds links to the two DAG folders only (not the repo, whose .venv it would walk too).
DAGS_FOLDER = Path(_home) / "dags"
DAGS_FOLDER.mkdir()
(DAGS_FOLDER / "examples").symlink_to(REPO / "dags_examples", target_is_directory=True)
(DAGS_FOLDER / "tests").symlink_to(REPO / "tests" / "dags", target_is_directory=True)
os.environ.update(
    {
        "AIRFLOW_HOME": _home,
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        # SQLite waits 5 s for a lock by default; under CI's load a dag.test() writer (its
        # in-process Execution API thread, a trigger) can hold one longer ("database is locked").
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_home}/airflow.db?timeout=60",
        # Tests reuse one emulator address with changing accounts and versions: nothing learned is
        # kept across hooks unless a test turns the learned-service cache on (tests/unit/client/test_learned.py).
        "AIRFLOW__LINKSTATS__CACHE_DIR": "off",
    }
)


def connection_json(url: str, conn_type: str = "linkstats_links", **extra: object) -> str:
    # Real installs require domain_id on create; 1 is their global domain.
    defaults = {"max_retries": 3, "default_domain_id": 1} if conn_type == "linkstats_links" else {"max_retries": 3}
    # The documented generation at the docs' root, so that no test pays the base-URL and version
    # probe unless it asks for it (api_version="auto" or a bare site URL via ``probing=True``).
    defaults["api_version"] = "44" if conn_type == "linkstats_links" else "3"
    if not extra.pop("probing", False) and not url.rstrip("/").endswith(("/api/v1", "/public")):
        url = url.rstrip("/") + "/public/api/v1"
    extras = {**defaults, **extra}
    return json.dumps({"conn_type": conn_type, "host": url, "password": API_KEY, "extra": extras})


@contextlib.contextmanager
def links_account(emulators, monkeypatch, generation: str, **extra: object):
    """The emulator of ``generation`` ("44" or "49"), reset before and after, with the default links
    connection pointing at it (``extra``: the connection's extras)."""
    emulator = emulators(generation)
    emulator.reset()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version=generation, **extra)
    )
    try:
        yield emulator
    finally:
        emulator.reset()


# A copy of the metadata database as `airflow db migrate` left it, before any test wrote to it:
# tests that build an Airflow home of their own (the deployments) start from it instead of
# migrating again. One per pytest process (each xdist worker has its own home).
MIGRATED_DB = Path(_home) / "airflow-migrated.db"


@pytest.fixture(scope="session")
def airflow_db(tmp_path_factory, worker_id) -> str:
    """An initialised metadata database (SQLite), for tests that run DAGs."""
    import airflow

    from tests.support.airflow_backports import reuse_in_process_execution_api

    reuse_in_process_execution_api()  # dag.test() as fast on 3.0-3.2 as on 3.3
    if airflow.__version__.startswith("2."):
        # 2.11's dag_run_note.user_id points at FAB's ab_user: without FAB's models loaded, dag.test()
        # cannot delete an earlier run of the same date (NoReferencedTableError), as tests rerun dates.
        import airflow.providers.fab.auth_manager.models  # noqa: F401
    # `airflow db migrate` costs 18 s of CPU: one xdist worker runs it, the others copy its result
    # (the run's common temp folder, as pytest-xdist's docs do for session fixtures). It migrates a
    # file no connection has opened, so that the copy holds every table (see _install_database).
    shared = None if worker_id == "master" else tmp_path_factory.getbasetemp().parent / "airflow-migrated.db"
    with _held(shared):
        if shared is not None and shared.exists():
            source = shared
        else:
            source = Path(_home) / "airflow-fresh.db"
            env = {**os.environ, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{source}"}
            subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True, capture_output=True)
            if shared is not None:
                shutil.copyfile(source, shared.with_suffix(".part"))
                shared.with_suffix(".part").rename(shared)
    _install_database(source)
    shutil.copyfile(source, MIGRATED_DB)
    _DB_AT_SETUP.update(_database_state())
    return _home


_DB_AT_SETUP: dict[str, object] = {}


def _database_state() -> dict[str, object]:
    """What this process's metadata database is now: its file, its tables, the engines' URLs."""
    import sqlite3

    path = Path(_home) / "airflow.db"
    state: dict[str, object] = {"path": str(path), "exists": path.exists()}
    if path.exists():
        stat = path.stat()
        state.update(inode=stat.st_ino, size=stat.st_size, mtime=stat.st_mtime)
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as db:
            names = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        state.update(tables=len(names), task_instance="task_instance" in names)
    settings = sys.modules.get("airflow.settings")
    for name in ("engine", "async_engine"):
        engine = getattr(settings, name, None)
        state[f"settings.{name}"] = str(getattr(engine, "url", None))
    state["env"] = os.environ.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN")
    state["home files"] = sorted(p.name for p in Path(_home).iterdir())
    return state


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test failing on a metadata database without its tables says what that database is, and what
    it was when the session set it up (seen on CI only, under load: "no such table: task_instance")."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and _DB_AT_SETUP and "no such table" in str(report.longrepr):
        try:
            now = _database_state()
        except Exception as error:  # a diagnosis must not hide the failure
            now = {"error": repr(error)}
        report.sections.append(("metadata database", f"at setup: {_DB_AT_SETUP}\nnow: {now}"))


def _install_database(source: Path) -> None:
    """``source`` becomes this process's metadata database, with no connection open on the file before.

    Airflow 3 runs SQLite in WAL mode, where a connection notices another's writes through the
    ``-shm`` index, never a file replaced under it: a connection pooled before the copy (this
    process's imports open one on the empty file) kept its empty schema and answered "no such
    table: task_instance" whenever a test drew it from the pool (seen on CI; reproduced by hand).
    """
    _drop_pooled_connections()
    target = Path(_home) / "airflow.db"
    for suffix in ("-wal", "-shm", "-journal"):
        target.with_name(target.name + suffix).unlink(missing_ok=True)
    part = target.with_suffix(".part")
    shutil.copyfile(source, part)
    part.replace(target)


def _drop_pooled_connections() -> None:
    """Airflow's engines forget their pooled connections (``close=False``: an aiosqlite connection
    cannot be closed outside its event loop; the dropped ones are never handed out again)."""
    settings = sys.modules.get("airflow.settings")
    if getattr(settings, "Session", None) is not None:
        settings.Session.remove()  # a session's connection goes back to the pool, then with it
    for engine in (getattr(settings, "engine", None), getattr(settings, "async_engine", None)):
        if engine is not None:
            getattr(engine, "sync_engine", engine).dispose(close=False)


@contextlib.contextmanager
def _held(shared: Path | None):
    """Hold a lock beside ``shared`` (the workers' one migrated database) while it is made or read."""
    if shared is None:
        yield
        return
    import fcntl

    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


GENERATIONS = {"44": "3", "49": "31"}  # phpShort generation -> the phpAnalytics one served beside it


@pytest.fixture(scope="session")
def shared_deployment(request, airflow_db):
    """One real Airflow deployment for the tests marked ``deployment_scenario(name)``, every
    selected scenario under way in it side by side (tests/support/deployment.py)."""
    from tests.support.deployment import shared_deployment as deployment

    wanted = [m.args[0] for item in request.session.items if (m := item.get_closest_marker("deployment_scenario"))]
    with deployment(list(dict.fromkeys(wanted))) as shared:
        yield shared


@pytest.fixture(scope="session")
def emulators():
    """Emulators by phpShort generation ("44" with phpAnalytics 3.x, "49" with 31), started on first use."""
    from airflow_provider_linkstats.emulator import Emulator

    started: dict = {}
    with contextlib.ExitStack() as stack:

        def get(links_version: str):
            if links_version not in started:
                emulator = Emulator(
                    api_keys=(API_KEY,), links_version=links_version, analytics_version=GENERATIONS[links_version]
                )
                started[links_version] = stack.enter_context(emulator)
            return started[links_version]

        yield get


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL 15 cluster on 127.0.0.1 with a database ``airflow`` (trust auth on loopback only),
    one per pytest process for every module that loads into it (their tests carry
    ``xdist_group("postgres")``, so one worker runs them all); ``pg`` drops its tables around each test."""
    from e2e.procs import ProcessGroups
    from e2e.services import PG_BIN, start_postgres

    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL binaries missing ({PG_BIN}/initdb): apt-get install postgresql-15")
    groups = ProcessGroups()
    try:
        proc, database, home = start_postgres(groups)
        yield proc.port
    finally:
        groups.stop_all()
        if "home" in locals():
            shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def emulator(emulators):
    return emulators("44")


def _point_connections_at(emulator, monkeypatch, **extra: object) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, **extra))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(emulator.analytics_url, "linkstats_analytics", **extra),
    )


@pytest.fixture
def emu(emulator, monkeypatch):
    """The emulator (phpShort 44, phpAnalytics 3.x), reset, with both default connections pointing at it."""
    emulator.reset()
    _point_connections_at(emulator, monkeypatch)
    yield emulator
    emulator.reset()


@pytest.fixture(params=sorted(GENERATIONS))
def emu_any(request, emulators, monkeypatch):
    """``emu`` in each generation in turn: phpShort 44 with phpAnalytics 3.x, then 49 with 31.

    The connections give the bare site URL and no version (``api_version`` auto), as a user's
    first connection would: the provider finds the API root and the version itself.
    """
    emulator = emulators(request.param)
    emulator.reset()
    _point_connections_at(emulator, monkeypatch, probing=True, api_version="auto")
    yield emulator
    emulator.reset()


@pytest.fixture
def scripted():
    """A scripted HTTP server on 127.0.0.1 for faults the emulator does not model."""
    from tests.support.scripted_server import ScriptedServer

    with ScriptedServer() as server:
        yield server


@contextlib.contextmanager
def fails_without_retry(cause: type[BaseException], match: str | None = None):
    """The task fails with AirflowFailException (no Airflow retry) chained to a ``cause`` error."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    with pytest.raises(AirflowFailException) as caught:
        yield caught
    assert isinstance(caught.value.__cause__, cause), repr(caught.value.__cause__)
    if match:
        assert re.search(match, str(caught.value.__cause__)), str(caught.value.__cause__)


@pytest.fixture
def make_hook(monkeypatch):
    """A factory of hooks (``make_hook("links", url, **options)``), closed after the test.

    With ``url`` the service's default connection points there first.
    """
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook

    made: list = []

    def make(kind: str, url: str | None = None, **options: object):
        hook_class = LinkstatsLinksHook if kind == "links" else LinkstatsAnalyticsHook
        if url is not None:
            env = f"AIRFLOW_CONN_{hook_class.default_conn_name.upper()}"
            monkeypatch.setenv(env, connection_json(url, hook_class.conn_type))
        hook = hook_class(**options)
        made.append(hook)
        return hook

    yield make
    for hook in made:
        hook.close()


@pytest.fixture
def no_key_in_logs(caplog):
    """The test also proves that no log record carries the API key."""
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        assert API_KEY not in record.getMessage()


class RecordingTI:
    """The one TaskInstance method the operators call: xcom_push for the short-URL link."""

    def __init__(self) -> None:
        self.pushed: dict[str, object] = {}

    def xcom_push(self, key: str, value: object) -> None:
        self.pushed[key] = value


class DagRunStarted:
    """The ``dag_run`` of a context, for what operators read of it: when the run started."""

    def __init__(self, start_date) -> None:
        self.start_date = start_date
        self.run_id = f"manual__{start_date.isoformat()}"


def run_operator(operator, *, run_started=None, **params):
    """Render the operator's templates from a context, then execute it, as a worker would.

    ``run_started``: the DAG run's start (an aware datetime): the context gets a ``dag_run``, so
    two calls with the same start are two tries of one run."""
    context = {"params": params, "ti": RecordingTI(), "ds": "2026-11-21"}
    if run_started is not None:
        context["dag_run"] = DagRunStarted(run_started)
    operator.render_template_fields(context)
    return operator.execute(context), context["ti"]


# -- running in parallel (pytest-xdist, `make test`: -n <cores + 1> --dist loadgroup) ---------------
# Each worker is its own process: it imports this file, so it has its own Airflow home, metadata
# database, emulator and ports (all made here or bound to port 0); new tests need no special care.
# Tests marked ``slow`` are handed out first, so the longest ones start at once on different
# workers instead of ending the run on one. Tests that share an expensive setup carry
# ``@pytest.mark.xdist_group(name)``: --dist loadgroup sends a group to one worker.


# -- the suite's parts (.ci/run) -----------------------------------------------------------------
# Every pin but Airflow's own (and FastAPI, Starlette and python-dateutil, which Airflow pins) is
# the same in all five constraints files, so a test's result differs between Airflow versions only
# where it goes through Airflow. Three parts:
# - without: the client, the emulator and the waits' plans, which never import Airflow (the layering
#   test keeps those rooms free of it; `import airflow` is refused in this part);
# - runtime: the tests of how the provider meets Airflow: the hooks, operators, sensors, triggers
#   and drivers folders, the system tests (example DAGs, docs, deployments), every test that runs
#   DAGs (the ``airflow_db`` or ``shared_deployment`` fixtures) and those marked ``airflow_runtime``
#   (Airflow's redaction, its messages per version, object storage);
# - with: every test but the first part.
# .ci/run runs the whole suite on the newest and the oldest Airflow, and the runtime part on the
# versions between.
AIRFLOW_FREE = tuple(REPO / "tests" / "unit" / room for room in ("client", "emulator", "waiting"))
AIRFLOW_RUNTIME = (
    REPO / "tests" / "system",
    *(REPO / "tests" / "unit" / room for room in ("hooks", "operators", "sensors", "triggers", "drivers")),
)
RUNS_AIRFLOW = {"airflow_db", "shared_deployment"}


def pytest_addoption(parser):
    parser.addoption(
        "--airflow-part",
        choices=("all", "with", "without", "runtime"),
        default="all",
        help="all tests (the default); those that use Airflow; those that never import it; those of how "
        "the provider meets Airflow itself (tests/conftest.py)",
    )


def pytest_configure(config):
    if config.getoption("airflow_part") == "without":
        sys.meta_path.insert(0, _AirflowRefused())


def pytest_ignore_collect(collection_path, config):
    part = config.getoption("airflow_part")
    if part == "all":
        return None
    path = Path(collection_path)
    free = any(path == room or room in path.parents for room in AIRFLOW_FREE)
    above_free = any(path in room.parents for room in AIRFLOW_FREE)
    if part in ("with", "runtime"):
        return True if free else None
    return None if free or above_free else True


def _deselect_all_but_runtime(config, items) -> None:
    """``--airflow-part=runtime``: keep only the tests of how the provider meets Airflow."""
    kept, dropped = [], []
    for item in items:
        path = Path(str(item.path))
        runtime = (
            any(room in path.parents for room in AIRFLOW_RUNTIME)
            or RUNS_AIRFLOW.intersection(getattr(item, "fixturenames", ()))
            or item.get_closest_marker("airflow_runtime") is not None
        )
        (kept if runtime else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


class _AirflowRefused:
    """An import finder that refuses Airflow (``--airflow-part=without``)."""

    def find_spec(self, name, path=None, target=None):
        if name == "airflow" or name.startswith("airflow."):
            raise ImportError(
                f"import of {name!r} refused: this test is in the suite's Airflow-free part "
                "(tests/unit/client, tests/unit/emulator, tests/unit/waiting), which CI runs on two Airflow "
                "versions of five; move a test that needs Airflow to tests/integration or to the unit folder "
                "of the layer it tests"
            )
        return None


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own hook, which marks the groups
def pytest_collection_modifyitems(config, items):
    if config.getoption("airflow_part") == "runtime":
        _deselect_all_but_runtime(config, items)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: slow ones first
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        for item in items:
            _keep_xdist_group(item)


def _keep_xdist_group(item) -> None:
    """Give the item's node id its ``@group`` suffix if pytest-xdist could not.

    xdist 3.8 tells the scheduler an item's group by appending it to ``item._nodeid``; pytest 9.2
    builds the node id from ``item._id`` instead, so the suffix is lost and every group is spread
    over the workers as if it were not there (pytest-dev/pytest-xdist#1386, open). This does what
    the proposed fix does (pytest-dev/pytest-xdist#1388), and nothing once xdist does it itself.
    """
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    if not names:
        return
    suffix = "@" + "_".join(sorted(names))
    if item.nodeid.endswith(suffix) or not hasattr(item, "_id"):
        return
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(item.nodeid + suffix)  # parse() keeps the string as given, brackets and all
