"""The figures ``make lint`` holds (tools/lint_figures.py, issue 43 item 6): no function rated D or
worse and no module over 600 lines but the known offenders, whose list may only shrink."""

from __future__ import annotations

import importlib.util
import sys

from tests.conftest import REPO


def lint():
    spec = importlib.util.spec_from_file_location("lint_figures", REPO / "tools" / "lint_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("lint_figures", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_provider_holds_its_figures_with_the_known_offenders(capsys):
    tool = lint()
    assert tool.main([]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "average cyclomatic complexity: " in out and "httpx 2.79" in out and "common-sql provider 3.36" in out


def test_a_new_or_grown_offender_fails_and_a_fixed_one_is_said(tmp_path):
    tool = lint()
    package = tmp_path / "airflow_provider_linkstats"
    (package / "emulator").mkdir(parents=True)
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(25))  # complexity 26
    (package / "tangled.py").write_text(f"def tangled(x):\n{branches}\n    return -1\n")
    (package / "emulator" / "big.py").write_text("x = 1\n" * 700)  # the emulator is not the provider
    (package / "long.py").write_text("x = 1\n" * 601)
    over, _average, _blocks = tool.measure(package)
    assert {(f.kind, f.path, f.value) for f in over} == {
        ("function", "airflow_provider_linkstats/tangled.py", 26),
        ("module", "airflow_provider_linkstats/long.py", 601),
    }
    known = tmp_path / "known.txt"
    known.write_text(
        "function airflow_provider_linkstats/tangled.py tangled 25\n"
        "module airflow_provider_linkstats/gone.py - 700\n"
    )
    failures, notes = tool.compare(over, tool.read_known(known))
    assert any(line.startswith("GREW function airflow_provider_linkstats/tangled.py") for line in failures)
    assert any(line.startswith("NEW  module airflow_provider_linkstats/long.py") for line in failures)
    assert any("FIXED: module airflow_provider_linkstats/gone.py" in line for line in notes)
    known.write_text(
        "function airflow_provider_linkstats/tangled.py tangled 30\nmodule airflow_provider_linkstats/long.py - 601\n"
    )
    failures, notes = tool.compare(over, tool.read_known(known))
    assert failures == [] and any(line.startswith("shrank: function") for line in notes)
