#!/usr/bin/env bash
# Installs packages into a venv (made if missing) under a constraints file:
#     tools/venv_install.sh VENV CONSTRAINTS REQUIREMENT...
# uv installs them when it can (parallel downloads, one shared cache: about 3 s for Airflow and this
# provider against 30-90 s with pip, which matters for CI's five venvs); pip installs uv first, from
# the same index as everything else. Where uv fails (for example a machine that reaches packages
# only through an index configured for pip, which uv does not read), pip installs them instead.
set -euo pipefail
VENV=$1 CONSTRAINTS=$2
shift 2
PYTHON=${PYTHON:-python3}

# pip's notice about an empty --find-links folder configured on some machines is not news.
quiet() { "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }

test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
# A uv already here (on PATH, or in another venv of this checkout: CI makes nine venvs) saves
# installing it again (10-15 s a venv); else pip installs it into this venv.
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd)
UV=$(command -v uv || true)
for candidate in "$CHECKOUT"/.venv*/bin/uv; do
    [[ -n $UV ]] && break
    [[ -x $candidate ]] && "$candidate" --version >/dev/null 2>&1 && UV=$candidate
done
if [[ -z $UV ]]; then
    quiet "$VENV/bin/python" -m pip install -q --upgrade "pip>=24"
    quiet "$VENV/bin/python" -m pip install -q uv || true  # no uv for this platform: pip does it all
    [[ -x $VENV/bin/uv ]] && UV=$VENV/bin/uv
fi
# --compile-bytecode: uv writes no .pyc files by default (pip does), and where PYTHONDONTWRITEBYTECODE
# is set (this machine and CI) Python never writes them either, so every process compiled Airflow's
# ~2,000 modules from source again: about 20 s of CPU per Airflow process (pytest worker, dag.test()
# runner, `airflow db migrate`). uv compiles the whole site-packages once, in parallel.
# VENV_BYTECODE=lazy (tools/check_dist.sh's clean venvs): none compiled here, for processes that may
# write their own (PYTHONDONTWRITEBYTECODE unset) and import a part of the venv once.
COMPILE=(--compile-bytecode)
[[ ${VENV_BYTECODE:-} == lazy ]] && COMPILE=()
if [[ -n $UV ]] && quiet "$UV" pip install -q "${COMPILE[@]}" --python "$VENV/bin/python" -c "$CONSTRAINTS" "$@"; then
    exit 0
fi
echo "venv_install: uv could not install into $VENV; installing with pip" >&2
quiet "$VENV/bin/python" -m pip install -q --upgrade "pip>=24"
quiet "$VENV/bin/python" -m pip install -q -c "$CONSTRAINTS" "$@"
