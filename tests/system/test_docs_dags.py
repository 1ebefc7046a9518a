"""Every DAG the README and the docs show runs to success, as a user starts it on Airflow 3.

Each Python block of README.md and docs/ that builds a DAG is written, as the page shows it, to a
file in the dags folder (``dag.test()`` on Airflow 3.3 runs DAGs from there only), imported, and
run with ``dag.test()`` against the emulator. On Airflow 3 the run has no logical date, like one
started with the UI's trigger button or ``airflow dags trigger``: a template that needs one
(``ds_nodash``) fails the run. Airflow 2.11 always gives a run a logical date.

The pages' campaign links wait for 100 or 500 clicks, or for a date next month. Here they are
used up as soon as anyone looks (``UsedUpLinks``): before the emulator answers a request, and
whenever the wait reads its clock, every watched link is clicked up to its limit through the
emulator's own redirect logic, and the emulator's clock (which the wait follows here) moves past
its end. The README's DAG also runs under a real scheduler: tests/system/test_deployment_readme.py.
"""

from __future__ import annotations

import importlib.util
import re
import time
from dataclasses import dataclass

import airflow
import pytest

from tests.conftest import DAGS_FOLDER
from tests.support.docs_pages import REPO, blocks, pages
from tests.support.service_clock import follow_the_emulators_clock
from tests.support.used_up import UsedUpLinks

AIRFLOW_3 = not airflow.__version__.startswith("2.")
DAG_BLOCK = re.compile(r"^with DAG\(|^@dag\b", re.MULTILINE)


@dataclass(frozen=True)
class DocDag:
    page: str  # README.md, docs/...
    line: int  # the block's opening fence
    code: str

    @property
    def dag_id(self) -> str:
        found = re.search(r"DAG\(\s*(?:dag_id=)?[\"']([\w.-]+)[\"']", self.code)
        assert found, f"{self}: no dag_id found in the block"
        return found.group(1)

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def doc_dags() -> list[DocDag]:
    """The Python blocks of every page that build a DAG."""
    found = []
    for page in pages():
        for block in blocks(page.read_text()):
            # A "# dags/<file>.py" block is a file the page has the reader save and run (with the data
            # files it shows beside it): test_docs_examples.py runs it that way.
            saved = block.code.lstrip().startswith("# dags/")
            # The warehouse page's DAG loads statistics (no campaign link to wait for):
            # test_docs_backfill.py runs it, scheduled, backfilled and triggered by hand.
            warehouse = "ToWarehouseOperator" in block.code
            if block.language == "python" and DAG_BLOCK.search(block.code) and not saved and not warehouse:
                found.append(DocDag(str(page.relative_to(REPO)), block.line, block.code))
    return found


DOC_DAGS = doc_dags()


def test_the_pages_show_dags():
    """The collection below must not be silently empty: the README and the guide show a DAG."""
    assert {"README.md", "docs/getting-started.md"} <= {doc.page for doc in DOC_DAGS}


def readme_dag() -> DocDag:
    (first,) = [doc for doc in DOC_DAGS if doc.page == "README.md"]
    return first


def load_dag(doc: DocDag, folder):
    """The block written to ``folder`` as a DAG file and imported, as the dags folder would."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"\W", "_", doc.page)
    path = folder / f"docs_{stem}_{doc.line}.py"
    path.write_text(f"# {doc}, as the page shows it\n{doc.code}")
    spec = importlib.util.spec_from_file_location(f"docs_dag_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module.dag


@pytest.fixture
def used_up(emu, monkeypatch):
    """``UsedUpLinks`` on the emulator; the waits follow its clock, read after a visit."""
    from airflow_provider_linkstats.waiting import plan

    visitors = UsedUpLinks(emu)
    monkeypatch.setattr(plan, "now", lambda: (visitors.expire(), time.time())[1])
    follow_the_emulators_clock(monkeypatch, emu)
    undo = visitors.install()
    yield visitors
    undo()


def run_without_logical_date(dag):
    """``dag.test()`` as a manual trigger on Airflow 3 starts a run: no logical date."""
    if AIRFLOW_3:
        run = dag.test(logical_date=None)
        assert run.logical_date is None, run.logical_date
        return run
    return dag.test()


def task_states(run) -> dict[str, str]:
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


@pytest.mark.parametrize("doc", DOC_DAGS, ids=str)
def test_docs_dag_runs_to_success_without_a_logical_date(doc, emu, used_up, airflow_db):
    folder = DAGS_FOLDER / "docs"
    path, dag = load_dag(doc, folder)
    try:
        assert dag.dag_id == doc.dag_id
        run = run_without_logical_date(dag)
    finally:
        path.unlink()  # pages share dag ids: one of them in the dags folder at a time
    states = task_states(run)
    assert run.state == "success", f"{doc}: {states}"
    assert set(states.values()) == {"success"}, f"{doc}: {states}"
    created = run.get_task_instance(dag.task_ids[0]).xcom_pull(task_ids=dag.task_ids[0])
    assert "None" not in created["alias"] and "{" not in created["alias"], created["alias"]  # rendered, from the run
    deletes = [task for task in dag.tasks if task.task_type == "LinkstatsDeleteLinkOperator"]
    for wait in [task for task in dag.tasks if task.task_type == "LinkstatsLinkExpiredSensor"]:
        record = run.get_task_instance(wait.task_id).xcom_pull(task_ids=wait.task_id)
        assert record["id"] == created["id"], record  # the wait returned the expired link
    if deletes:
        assert emu.store.links() == [], f"{doc}: the link was not deleted"
    else:
        assert emu.store.link_status(created["id"]) == 2  # expired


def test_readme_alias_comes_from_the_run_not_the_clock(emu, used_up, airflow_db):
    """The README's alias is the day the run started, as recorded for the run: every try of the
    task (a retry, a clear) renders the same alias and finds the link it made (``if_exists="skip"``)
    instead of making a twin. A run recorded as started on 2 January shows it."""
    import pendulum

    started = pendulum.datetime(2026, 1, 2, 9, 30, tz="UTC")
    path, dag = load_dag(readme_dag(), DAGS_FOLDER / "docs")
    try:
        run = dag.test(run_after=started, logical_date=None) if AIRFLOW_3 else dag.test(execution_date=started)
    finally:
        path.unlink()
    assert run.state == "success", task_states(run)
    assert run.get_task_instance("create_link").xcom_pull(task_ids="create_link")["alias"] == "spring-20260102"
