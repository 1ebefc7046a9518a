#!/usr/bin/env bash
# `make dist`: build the wheel and the sdist, check them, then prove the wheel works on its own:
#   1. build (python -m build) into dist/ and `twine check --strict` both files;
#   2. check what the wheel holds (provider entry point, py.typed, no tests) and what the sdist holds;
#   3. for each Airflow version asked (default: the newest, 3.3.2, and the oldest supported, 2.11.2,
#      whose users install it the same way), a clean venv (recreated every run) gets Airflow under
#      that version's constraints file plus the built wheel (with the `emulator` extra), nothing
#      from this checkout;
#   4. from a directory outside the checkout: `airflow providers list` must show the provider, the
#      provider must be imported from the venv's site-packages, and the campaign example DAG runs
#      against the emulator started from that venv (the demo's runner, `--only campaign`; with
#      `--move-clock`, its A/B link ends when the emulator's clock moves a minute on, not after a
#      minute of real time: what is checked is the wheel, not the minute).
# Time (2026-12-02, 2 cores): 298 s wall, 113 s CPU before; the minute waited twice was most of the
# wall, and pip (the release tools, the build's isolated environments) and compiling every module of
# each clean venv (15 s of CPU: the checks' few processes import a part of them, once) most of the CPU.
# Usage: tools/check_dist.sh [AIRFLOW_VERSION ...]   (env: PYTHON, RELEASE_VENV, DIST_VENV)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -gt 0 ]]; then AIRFLOW_VERSIONS=("$@"); else AIRFLOW_VERSIONS=(3.3.2 2.11.2); fi
PYTHON=${PYTHON:-python3}
RELEASE_VENV=${RELEASE_VENV:-.venv-release}
DIST_VENV=${DIST_VENV:-.venv-dist}
for version in "${AIRFLOW_VERSIONS[@]}"; do
    test -f "constraints/airflow-$version.txt" || { echo "no constraints/airflow-$version.txt" >&2; exit 1; }
done
quiet() { "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }
# uv, where there is one (on PATH, or in a venv of this checkout, as tools/venv_install.sh finds it):
# it installs the release tools and the build's isolated environments in a second, where pip takes 15 s.
UV=$(command -v uv || true)
for candidate in .venv*/bin/uv; do
    [[ -n $UV ]] && break
    [[ -x $candidate ]] && "$candidate" --version >/dev/null 2>&1 && UV=$(cd "$(dirname "$candidate")" && pwd)/uv
done
say() { echo "[dist $(date +%H:%M:%S)] $*"; }
t0=$SECONDS

# 1. build and twine check, in a small venv of their own (the `release` extra's tools only)
if [[ ! -x $RELEASE_VENV/bin/twine || pyproject.toml -nt $RELEASE_VENV/.installed ]]; then
    say "installing the release tools into $RELEASE_VENV"
    test -x "$RELEASE_VENV/bin/python" || "$PYTHON" -m venv "$RELEASE_VENV"
    tools=$("$RELEASE_VENV/bin/python" - <<'PY'
import re
text = open("pyproject.toml").read()
block = re.search(r"^release = \[(.*?)\]", text, re.M | re.S).group(1)
print(" ".join(re.findall(r'"([^"]+)"', block)))
PY
)
    # shellcheck disable=SC2086
    if [[ -z $UV ]] || ! quiet "$UV" pip install -q --python "$RELEASE_VENV/bin/python" $tools; then
        quiet "$RELEASE_VENV/bin/python" -m pip install -q $tools
    fi
    touch "$RELEASE_VENV/.installed"
fi
rm -rf dist
say "python -m build"
BUILD_LOG=$(mktemp "${TMPDIR:-/tmp}/linkstats-build-XXXXXX.log")
# The sdist, then the wheel built from it (build's default: the sdist must build); uv makes the
# isolated build environments where it is found (build looks for it on PATH).
BUILD_WITH=()
[[ -n $UV ]] && BUILD_WITH=(--installer uv)
PATH="${UV:+$(dirname "$UV"):}$PATH" quiet "$RELEASE_VENV/bin/python" -m build "${BUILD_WITH[@]}" --outdir dist . \
    >"$BUILD_LOG" || { cat "$BUILD_LOG"; exit 1; }
rm -f "$BUILD_LOG"
WHEEL=$(ls dist/*.whl)
SDIST=$(ls dist/*.tar.gz)
say "built $WHEEL ($(du -k "$WHEEL" | cut -f1) KB) and $SDIST ($(du -k "$SDIST" | cut -f1) KB)"
"$RELEASE_VENV/bin/twine" check --strict dist/*

# 2. what the files hold
"$RELEASE_VENV/bin/python" - "$WHEEL" "$SDIST" <<'PY'
import sys, tarfile, zipfile
wheel, sdist = sys.argv[1:]
names = zipfile.ZipFile(wheel).namelist()
must = ["airflow_provider_linkstats/py.typed", "airflow_provider_linkstats/get_provider_info.py",
        "airflow_provider_linkstats/emulator/__main__.py"]
missing = [name for name in must if name not in names]
assert not missing, f"the wheel lacks {missing}"
assert not [n for n in names if n.startswith(("tests/", "dags_examples/", "e2e/", "benchmarks/"))], "stray files"
entry = next(n for n in names if n.endswith("entry_points.txt"))
points = zipfile.ZipFile(wheel).read(entry).decode()
assert "[apache_airflow_provider]" in points and "get_provider_info" in points, points
assert "linkstats-emulator" in points, points
meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
for needed in ("Project-URL: Changelog", "Requires-Python: >=3.10", "Classifier: Framework :: Apache Airflow :: Provider"):
    assert needed in meta, f"METADATA lacks {needed!r}"
held = tarfile.open(sdist).getnames()
for needed in ("README.md", "CHANGELOG.md", "pyproject.toml", "LICENSE"):
    if not any(name.endswith("/" + needed) for name in held):
        sys.exit(f"the sdist lacks {needed}")
stray = [n for n in held if any(part in n for part in (".venv", "demo-output", "_build/", ".log", "__pycache__"))]
assert not stray, f"the sdist holds files that are no source: {stray[:5]}"
print(f"wheel: {len(names)} files, entry points and metadata as expected; sdist: {len(held)} files")
PY

# 3-4, per Airflow version: a clean venv with Airflow under its constraints and the built wheel,
# then the wheel run from outside the checkout (only the dags are copied, as a user copies them)
check_on() {
    local AIRFLOW_VERSION=$1 VENV=$2
    local CONSTRAINTS=constraints/airflow-$AIRFLOW_VERSION.txt
    say "clean venv $VENV: apache-airflow==$AIRFLOW_VERSION (constraints $CONSTRAINTS) + $(basename "$WHEEL")[emulator]"
    rm -rf "$VENV"
    # uv where it can, else pip (tools/venv_install.sh): what is checked is the wheel, not the installer.
    # No bytecode compiled at install (VENV_BYTECODE=lazy): the checks below write it as they import,
    # each module once (PYTHONDONTWRITEBYTECODE is unset for them), for the modules they use only.
    VENV_BYTECODE=lazy PYTHON=$PYTHON bash tools/venv_install.sh "$VENV" "$CONSTRAINTS" \
        "apache-airflow==$AIRFLOW_VERSION" "$WHEEL[emulator]"
    local VENV_BIN WORK
    VENV_BIN=$(cd "$VENV/bin" && pwd)
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/linkstats-dist-XXXXXX")
    cp -r dags_examples "$WORK/"
    find "$WORK" -name __pycache__ -prune -exec rm -rf {} +
    (
        export AIRFLOW_HOME="$WORK/airflow-home" AIRFLOW__CORE__LOAD_EXAMPLES=False
        unset PYTHONDONTWRITEBYTECODE
        cd "$WORK"
        "$VENV_BIN/python" - "$AIRFLOW_VERSION" <<'PY'
import sys, sysconfig, airflow, airflow_provider_linkstats as p
where, site = p.__file__, sysconfig.get_paths()["purelib"]
assert where.startswith(site), f"the provider was imported from {where}, not from the installed wheel ({site})"
assert airflow.__version__ == sys.argv[1], f"Airflow {airflow.__version__} installed, not {sys.argv[1]}"
print(f"[dist] provider {p.__version__} imported from {where} (Airflow {airflow.__version__})")
PY
        "$VENV_BIN/airflow" providers list -o plain 2>/dev/null | tee "$WORK/providers.txt" | grep -i linkstats
        grep -q "^airflow-provider-linkstats" "$WORK/providers.txt" \
            || { echo "airflow providers list does not show airflow-provider-linkstats" >&2; exit 1; }
        "$VENV_BIN/linkstats-emulator" --help >/dev/null
        say "the campaign example DAG against the emulator, both from $VENV (Airflow $AIRFLOW_VERSION)"
        PYTHONPATH="$WORK" "$VENV_BIN/python" -m dags_examples.demo --only campaign --move-clock
    ) || { rm -rf "$WORK"; exit 1; }
    rm -rf "$WORK"
}

for version in "${AIRFLOW_VERSIONS[@]}"; do
    # the first version in DIST_VENV, as before; the others beside it, by version
    if [[ $version == "${AIRFLOW_VERSIONS[0]}" ]]; then venv=$DIST_VENV; else venv=$DIST_VENV-$version; fi
    check_on "$version" "$venv"
done
say "make dist: ok on Airflow ${AIRFLOW_VERSIONS[*]} in $((SECONDS - t0)) s; artifacts in dist/"
