# make test   : create or refresh the venv for AIRFLOW_VERSION, then run the whole suite
# make demo   : run the example DAGs (campaign, cleanup, report, bulk launch) against the local emulator, live
# make bench  : benchmarks against the emulator (prints one table)
# make e2e    : a real CeleryExecutor deployment (PostgreSQL, Redis, 2 workers, 2 triggerers) with a worker kill, a triggerer kill and UI checks
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3
AIRFLOW_VERSION ?= 3.3.2
VENV ?= .venv
CONSTRAINTS := constraints/airflow-$(AIRFLOW_VERSION).txt
STAMP := $(VENV)/.installed-$(AIRFLOW_VERSION)
COMPILED := $(VENV)/.compiled-$(AIRFLOW_VERSION)
PYTEST_ARGS ?=
# pytest-xdist: three workers per core, because most tests spend their time waiting on a clock
# (waits that fire at a link's end, late-commit windows, rate-limit windows, a deployment's expiry)
# while the cores are free. 2026-11-28, 3.3.2 suite (2,903 tests) on an idle 2-core machine:
# 3 workers 490 s wall for 480 s of CPU (the cores half idle), 6 workers 388 s for 602 s.
# Tests sharing one setup (xdist_group) stay together. `make test PYTEST_PARALLEL=` runs the
# suite in one process; `make test PYTEST_WORKERS=2` sets the count (at most 16 by default: each
# worker holds its own Airflow, about 300 MB).
PYTEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(min(16, 3 * (os.cpu_count() or 1)))")
PYTEST_PARALLEL ?= -n $(PYTEST_WORKERS) --dist loadgroup

.PHONY: venv test demo bench lint constraints clean e2e dist docs

venv: $(COMPILED)

# Rebuilt when pyproject.toml or the constraints change; the venv itself is kept and updated.
# tools/venv_install.sh: uv where it can (seconds), else pip.
$(STAMP): pyproject.toml $(CONSTRAINTS)
	PYTHON=$(PYTHON) bash tools/venv_install.sh $(VENV) $(CONSTRAINTS) "apache-airflow==$(AIRFLOW_VERSION)" -e ".[test]"
	rm -f $(VENV)/.installed-*
	touch $@

# Bytecode for every installed module, once per install. uv writes none, and where
# PYTHONDONTWRITEBYTECODE is set (as on this CI machine) none is ever written: each Python process
# compiled Airflow's source again, 6 of the 10 CPU seconds an `import airflow` took on 3.3.2
# (3.4 of 4.6 on 2.11.2). Compiling a venv costs about 30 s of CPU once.
$(COMPILED): $(STAMP)
	$(VENV)/bin/python -m compileall -q -j 0 "$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null || true
	rm -f $(VENV)/.compiled-*
	touch $@

# The project's own modules too (a second when nothing changed): every test process imports them.
test: venv
	$(VENV)/bin/python -m compileall -q -j 0 airflow_provider_linkstats tests dags_examples >/dev/null || true
	$(VENV)/bin/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# DEMO_API_VERSION=44 runs the demo against phpShort 44-45 and phpAnalytics 3.x instead of 49 and 31.
DEMO_API_VERSION ?= 49
demo: venv
	$(VENV)/bin/python -m dags_examples.demo --api-version $(DEMO_API_VERSION)

bench: venv
	$(VENV)/bin/python -m benchmarks.run

# Installs what is missing (apt-get: redis-server, chromium-headless-shell; pip: .venv-e2e under the
# 3.3.2 constraints with the `e2e` extra), then runs e2e/ (see e2e/__init__.py). About 5 minutes.
E2E_VENV ?= .venv-e2e
E2E_AIRFLOW_VERSION := 3.3.2
e2e:
	bash e2e/install.sh $(E2E_VENV) constraints/airflow-$(E2E_AIRFLOW_VERSION).txt $(E2E_AIRFLOW_VERSION)
	$(E2E_VENV)/bin/python -m e2e

# ruff, then the figures the project holds itself to (tools/lint_figures.py, radon from the `test`
# extra): no function of the provider rated D or worse, no module over 600 lines, but the known
# offenders of tools/lint_known_offenders.txt; the average complexity beside the anchors'.
lint: venv
	$(VENV)/bin/python -m pip install -q ruff 2>&1 | { grep -v "is ignored" || true; }
	$(VENV)/bin/python -m ruff check airflow_provider_linkstats tests dags_examples benchmarks e2e tools
	$(VENV)/bin/python tools/lint_figures.py

# Regenerate the pinned constraints from a fresh, unconstrained install (maintainers only).
# One temp venv per version, so several versions can be regenerated side by side.
CONSTRAINTS_VENV := /tmp/linkstats-constraints-venv-$(AIRFLOW_VERSION)
# Caps an older release needs because a dependency's newer release broke it after it shipped
# (each one found by dag.test() failing every task there):
# - 3.0: FastAPI 0.132 rejects JSON bodies without a Content-Type header, which the 3.0 task SDK omits;
#   universal_pathlib 0.3 makes 3.0's ObjectStoragePath refuse file:// URLs (the bulk launch example);
# - 3.2: svcs 26 leaves app.state.svcs_registry unset in the in-process Execution API, and FastAPI
#   0.137 (with Cadwyn 8, which needs it) fails building the Execution API's models.
# 3.1 and 3.3 cap FastAPI themselves and need nothing more.
CONSTRAINTS_CAPS_3.0.6 := "fastapi<0.132" "universal_pathlib<0.3"
CONSTRAINTS_CAPS_3.2.2 := "fastapi<0.137" "svcs<26"
constraints:
	rm -rf $(CONSTRAINTS_VENV)
	$(PYTHON) -m venv $(CONSTRAINTS_VENV)
	$(CONSTRAINTS_VENV)/bin/python -m pip install -q --upgrade "pip>=24"
	$(CONSTRAINTS_VENV)/bin/python -m pip install -q "apache-airflow==$(AIRFLOW_VERSION)" $(CONSTRAINTS_CAPS_$(AIRFLOW_VERSION)) -e ".[test,e2e]" \
		2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
	$(CONSTRAINTS_VENV)/bin/python -m pip freeze --exclude-editable | grep -v '^airflow-provider-linkstats' > $(CONSTRAINTS)
	rm -rf $(CONSTRAINTS_VENV)

clean:
	rm -rf .venv .venv-airflow2 .venv-airflow-* .venv-e2e .venv-release .venv-dist .ci-logs .pytest_cache demo-output e2e-output dist docs/_build

# make dist : build the wheel and sdist into dist/, twine check them, then for Airflow 3.3.2 and 2.11.2
#             install the wheel into a clean venv (.venv-dist, .venv-dist-2.11.2) with Airflow under
#             that version's constraints, then `airflow providers list` and the campaign example DAG
#             against the emulator, both from that venv (tools/check_dist.sh).
#             `make dist DIST_AIRFLOW_VERSION=3.3.2` checks one version only.
DIST_AIRFLOW_VERSION ?= 3.3.2 2.11.2
dist:
	PYTHON=$(PYTHON) bash tools/check_dist.sh $(DIST_AIRFLOW_VERSION)

# make docs : the docs site into docs/_build/html (Sphinx + MyST + autodoc, warnings are errors),
#             then the Markdown check of README.md and docs/ (every fence closed, no prose in code).
#             The `docs` extra is installed into $(VENV) once (autodoc imports the provider and Airflow).
DOCS_STAMP := $(VENV)/.installed-docs-$(AIRFLOW_VERSION)
$(DOCS_STAMP): $(STAMP)
	PYTHON=$(PYTHON) bash tools/venv_install.sh $(VENV) $(CONSTRAINTS) "apache-airflow==$(AIRFLOW_VERSION)" -e ".[test,docs]"
	touch $@
docs: $(DOCS_STAMP)
	rm -rf docs/_build/html
	$(VENV)/bin/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/system/test_docs_markdown.py
	@echo "docs: docs/_build/html/index.html"
