"""The figures the project holds itself to (issue 43, item 6), checked by ``make lint``.

On the provider without its emulator (``airflow_provider_linkstats/`` less ``emulator/``), with radon:

- no function or method rated D or worse (cyclomatic complexity over 20);
- no module over 600 lines;
- the average complexity of its blocks (functions, methods, classes: radon's ``cc -a``), printed
  beside the anchors' (the code this team reads as models).

Code written before the limit holds is listed in ``tools/lint_known_offenders.txt`` with its
figure of today. The list only shrinks: the check fails when a listed offender grows or a new one
appears, and says so when one comes within the limit (remove its line) or shrinks (lower its
figure).

    python tools/lint_figures.py [--root airflow_provider_linkstats] [--known tools/lint_known_offenders.txt]

Exit status 1 when a figure is broken.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "airflow_provider_linkstats"
KNOWN = Path(__file__).resolve().parent / "lint_known_offenders.txt"
EXCLUDED = ("emulator",)  # a second, independent reading of the services: not the provider
COMPLEXITY_MAX = 20  # radon's rank C ends at 20; D (21-30) and worse fail
LINES_MAX = 600
# Average cyclomatic complexity of the anchors, measured with radon 6.0.1 the same way (issue 43).
ANCHORS = (("httpx", 2.79), ("Airflow's common-sql provider", 3.36), ("Airflow's HTTP provider", 3.17))


@dataclass(frozen=True)
class Figure:
    kind: str  # "function" or "module"
    path: str  # from the package's folder: airflow_provider_linkstats/...
    name: str  # the function's qualified name ("Class.method"), "-" for a module
    value: int  # its complexity, or the module's lines

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.path, self.name)

    def describe(self) -> str:
        if self.kind == "module":
            return f"module {self.path}: {self.value} lines (at most {LINES_MAX})"
        return f"function {self.path} {self.name}: complexity {self.value} (at most {COMPLEXITY_MAX})"


def provider_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.py") if not set(path.relative_to(root).parts[:-1]) & set(EXCLUDED))


def measure(root: Path) -> tuple[list[Figure], float, int]:
    """(every figure over its limit, the average complexity, the blocks analysed)."""
    from radon.complexity import cc_visit, sorted_results

    over: list[Figure] = []
    total, blocks = 0.0, 0
    for path in provider_files(root):
        relative = path.relative_to(root.parent).as_posix()  # airflow_provider_linkstats/...
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > LINES_MAX:
            over.append(Figure("module", relative, "-", lines))
        for block in sorted_results(cc_visit(source)):
            total += block.complexity
            blocks += 1
            if block.complexity > COMPLEXITY_MAX and block.letter in ("F", "M"):
                over.append(Figure("function", relative, block.fullname, block.complexity))
    return over, (total / blocks if blocks else 0.0), blocks


def read_known(path: Path) -> dict[tuple[str, str, str], Figure]:
    known: dict[tuple[str, str, str], Figure] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 4 or parts[0] not in ("function", "module") or not parts[3].isdigit():
            raise SystemExit(f"{path}:{number}: expected 'function|module <path> <name or -> <figure>', got {raw!r}")
        figure = Figure(parts[0], parts[1], parts[2], int(parts[3]))
        known[figure.key] = figure
    return known


def compare(over: list[Figure], known: dict[tuple[str, str, str], Figure]) -> tuple[list[str], list[str]]:
    """(failures, notes): a new offender or a grown one fails; a fixed or shrunk one is a note."""
    failures, notes = [], []
    found = {figure.key: figure for figure in over}
    for key, figure in found.items():
        listed = known.get(key)
        if listed is None:
            failures.append(f"NEW  {figure.describe()}: split it into functions (or modules) of one job")
        elif figure.value > listed.value:
            failures.append(f"GREW {figure.describe()}, listed at {listed.value}: it may only shrink")
        elif figure.value < listed.value:
            notes.append(f"shrank: {figure.describe()}, listed at {listed.value}: lower its figure in {KNOWN.name}")
    for key, listed in known.items():
        if key not in found:
            what = listed.describe().split(":")[0]
            notes.append(f"FIXED: {what} is within the limit: remove its line from {KNOWN.name}")
    return failures, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=PACKAGE)
    parser.add_argument("--known", type=Path, default=KNOWN)
    args = parser.parse_args(argv)
    over, average, blocks = measure(args.root)
    failures, notes = compare(over, read_known(args.known))
    anchors = ", ".join(f"{name} {value:.2f}" for name, value in ANCHORS)
    print(f"average cyclomatic complexity: {average:.2f} over {blocks} blocks (anchors: {anchors})")
    functions = sum(1 for figure in over if figure.kind == "function")
    modules = sum(1 for figure in over if figure.kind == "module")
    print(f"over the limits: {functions} function(s) rated D or worse, {modules} module(s) over {LINES_MAX} lines")
    for line in notes + failures:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
