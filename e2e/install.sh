#!/usr/bin/env bash
# Installs what `make e2e` needs, only what is missing:
#   - Debian: redis-server and chromium-headless-shell (PostgreSQL 15 is expected in /usr/lib/postgresql/15/bin);
#   - a venv (default .venv-e2e) with Airflow, this provider and its `e2e` extra, pinned by the constraints file.
# Usage: e2e/install.sh VENV CONSTRAINTS AIRFLOW_VERSION
set -euo pipefail
VENV=${1:-.venv-e2e}
CONSTRAINTS=${2:-constraints/airflow-3.3.2.txt}
AIRFLOW_VERSION=${3:-3.3.2}
PYTHON=${PYTHON:-python3}

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v chromium-headless-shell >/dev/null || missing+=(chromium-headless-shell)
if ((${#missing[@]})); then
    echo "[e2e] apt-get install ${missing[*]}"
    SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [[ ! -x /usr/lib/postgresql/15/bin/initdb ]]; then
    echo "[e2e] PostgreSQL 15 is missing: apt-get install postgresql-15" >&2
    exit 1
fi

# The venv is reused; the installer is asked again only when pyproject.toml or the constraints changed.
STAMP="$VENV/.installed-e2e-$AIRFLOW_VERSION"
if [[ ! -f $STAMP || pyproject.toml -nt $STAMP || $CONSTRAINTS -nt $STAMP ]]; then
    echo "[e2e] installing into $VENV (constraints: $CONSTRAINTS)"
    PYTHON=$PYTHON bash tools/venv_install.sh "$VENV" "$CONSTRAINTS" "apache-airflow==$AIRFLOW_VERSION" -e ".[e2e]"
    rm -f "$VENV"/.installed-e2e-*
    touch "$STAMP"
fi
