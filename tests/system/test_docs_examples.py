"""Every example in the README and the docs runs, against the emulator, as a user would copy it.

- The Python blocks of one page run in order in one namespace (a later block may use what an
  earlier one made), with both default connections pointing at the emulator (the ``emu`` fixture).
  A block that starts with ``# dags/<name>.py`` is a DAG file: it is saved in the dags folder and
  run as ``python dags/<name>.py`` runs it (its ``dag.test()`` under ``__main__``).
- No example prints a warning that reads as a failure (Airflow's "cannot be called outside of
  the Task Runner!" for an ``op.execute({})``): examples run as a user would run them.
- The emulator page's ``curl`` blocks run against the same emulator, its address and key swapped
  in, and fail on any HTTP error.
- Every ``airflow_provider_linkstats...`` path a page names imports, and every name listed after
  one (```module`: `Name`, `Name```) is in that module's ``__all__``.
"""

from __future__ import annotations

import importlib
import logging
import re
import runpy
import shutil
import subprocess

import pytest

from tests.conftest import API_KEY, DAGS_FOLDER
from tests.support.docs_pages import REPO, blocks, pages

PAGES = pages()
RUNNABLE = [page for page in PAGES if any(block.language == "python" for block in blocks(page.read_text()))]
CURL_PAGES = [REPO / "docs" / "emulator.md"]
EMULATOR_ADDRESS = "http://127.0.0.1:8765"
EMULATOR_KEY = "my-local-key"


def page_id(path) -> str:
    return str(path.relative_to(REPO))


def test_the_pages_hold_examples():
    """The collection below must not be silently empty (the README and the guide have examples)."""
    names = {page_id(page) for page in RUNNABLE}
    assert {"README.md", "docs/getting-started.md", "docs/hooks.md", "docs/operators.md"} <= names, names


DAG_FILE = re.compile(r"# dags/(\w+\.py)\n")
# Warnings a newcomer reads as a failure; an example that prints one is not run as a user would.
# Airflow 3: "execute cannot be called outside of the Task Runner!"; 2.11: "... outside TaskInstance!".
ALARMING = ("cannot be called outside of the Task Runner", "cannot be called outside TaskInstance")


def run_block(block, where: str, namespace: dict, request) -> None:
    """One Python block: exec'd in the page's namespace, or, for a DAG file, saved under the dags
    folder and run as a script (``dag.test()`` on Airflow 3.3 runs only DAGs from that folder)."""
    dag_file = DAG_FILE.match(block.code)
    if dag_file is None:
        exec(compile(block.code, where, "exec"), namespace)
        return
    request.getfixturevalue("airflow_db")
    path = DAGS_FOLDER / f"docs_{dag_file.group(1)}"
    path.write_text(block.code)
    try:
        namespace.update(runpy.run_path(str(path), run_name="__main__"))
    finally:
        path.unlink()


class Warnings(logging.Handler):
    """Every warning logged while it is attached, whatever the loggers' propagation: Airflow 2.11's
    task loggers (``airflow.task``) stop propagating once a DAG has run in the process, so pytest's
    caplog alone would miss them later in a session."""

    LOGGERS = ("", "airflow.task")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def __enter__(self) -> Warnings:
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def alarming(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(words in line for words in ALARMING)]


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_python_examples_run_against_the_emulator(page, emu, tmp_path, monkeypatch, request, caplog, capfd):
    monkeypatch.chdir(tmp_path)  # files an example writes land here
    caplog.set_level(logging.WARNING)
    namespace: dict = {"__name__": f"docs_example_{page.stem}"}
    with Warnings() as warned:
        for block in blocks(page.read_text()):
            if block.language != "python":
                continue
            try:
                run_block(block, f"{page_id(page)}:{block.line}", namespace, request)
            except Exception as error:
                pytest.fail(f"{page_id(page)}, the block at line {block.line} fails: {type(error).__name__}: {error}")
    printed = capfd.readouterr()
    text = caplog.text + warned.text + printed.out + printed.err
    assert not alarming(text), f"{page_id(page)} prints a warning read as a failure"


def test_the_warning_check_can_fail(emu):
    """What the docs used to do: the check above sees Airflow's warning for an execute() by hand, run
    as a user's script would run it (a process of its own: in this one Airflow may have stopped
    warning once a DAG ran)."""
    import os
    import subprocess
    import sys

    code = (
        "from airflow_provider_linkstats.operators.cleanup import LinkstatsCleanupLinksOperator as Op\n"
        "Op(task_id='plan', older_than_days=30, dry_run=True).execute({})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=dict(os.environ), check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert alarming(done.stdout + done.stderr), (done.stdout + done.stderr)[-2000:]


def curl_blocks(page) -> list:
    """Bash blocks made only of curl commands (one per line, continuations and comments allowed)."""
    found = []
    for block in blocks(page.read_text()):
        commands = [line for line in block.code.splitlines() if line.strip() and not line.startswith((" ", "#"))]
        if block.language == "bash" and commands and all(line.startswith("curl ") for line in commands):
            found.append(block)
    return found


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("page", CURL_PAGES, ids=page_id)
def test_curl_examples_run_against_the_emulator(page, emu):
    runnable = curl_blocks(page)
    assert len(runnable) >= 3, "the emulator page's curl examples were not found"
    outputs = []
    for block in runnable:
        script = block.code.replace(EMULATOR_ADDRESS, emu.url).replace(EMULATOR_KEY, API_KEY)
        script = re.sub(r"(^|\n)curl ", r"\1curl --fail-with-body --max-time 10 ", script)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{page_id(page)}:{block.line}: {done.stderr}{done.stdout}"
        outputs.append(done.stdout)
    text = "\n".join(outputs)
    assert "302" in text and "https://example.com/us" in text  # the click example redirected
    assert '"value":"US","count":"1"' in text.replace(" ", "")  # the link's one click, by country
    assert '"count":1' in text.replace(" ", "") or '"count":"1"' in text.replace(" ", "")  # today's one visitor


MODULE_PATH = re.compile(r"\bairflow_provider_linkstats(?:\.\w+)*")
LISTED = re.compile(r"`(airflow_provider_linkstats[\w.]*)`: ((?:`\w+`(?:, )?)+)")


def _import(path: str):
    """The module or attribute a dotted path names (the longest importable module, then attributes)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            target = getattr(target, name)
        return target
    raise ModuleNotFoundError(path)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_named_import_path_imports(page):
    text = page.read_text()
    for path in sorted(set(MODULE_PATH.findall(text))):
        if path.endswith((".py", ".md")) or path.rstrip(".") != path:
            continue
        try:
            _import(path)
        except (ImportError, AttributeError) as error:
            pytest.fail(f"{page_id(page)} names {path}, which does not import: {error}")
    for module, names in LISTED.findall(text):
        exported = getattr(importlib.import_module(module), "__all__", ())
        for name in re.findall(r"`(\w+)`", names):
            assert name in exported, f"{page_id(page)}: {module} does not export {name}"


def test_the_import_check_can_fail():
    with pytest.raises(ModuleNotFoundError):
        _import("airflow_provider_linkstats_nothing.here")
    with pytest.raises(AttributeError):
        _import("airflow_provider_linkstats.client.no_such_function")
    assert _import("airflow_provider_linkstats.client.link_status").__name__ == "link_status"
