"""The package's rooms and what each may import (docs/contributing/architecture.md), checked from
the source text: every ``import`` of a package module, at module level or inside a function (a
lazy import is a dependency all the same), is an edge of the graph.

Two rules: an import never goes to a higher room or to a peer room (``ROOMS`` lists the rooms from
the bottom up; rooms on one line are peers and import none of each other), and no two modules reach
each other through imports (no circle, however long).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "airflow_provider_linkstats"

# From the bottom up. A room is a subpackage; "face" is the package root's own modules.
ROOMS: tuple[tuple[str, ...], ...] = (
    ("client", "emulator"),  # the API and its rules, no Airflow; the emulator shares nothing with it
    ("waiting",),  # the waits' plans (sans I/O)
    ("hooks",),  # Airflow's glue: connection, form, outcomes of errors for Airflow
    ("drivers",),  # the long jobs' drivers: pages, pools, sinks, progress
    ("triggers",),  # the waits' async drivers in the triggerer
    ("operators", "sensors"),  # thin shells over a plan and a driver
    ("face",),  # __init__.py and get_provider_info.py
)
# The emulator is a second, independent reading of the services: it imports nothing of the rest.
ISOLATED = {"emulator"}


def rank_of(room: str) -> int:
    for rank, peers in enumerate(ROOMS):
        if room in peers:
            return rank
    raise KeyError(room)


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int

    def __str__(self) -> str:
        return f"{self.importer} imports {self.imported} (line {self.line})"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` (the folder named ``PACKAGE``), by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(node: ast.AST, module: str, is_package: bool, known: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:  # relative: from . import x, from ..client import y
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:  # from pkg import submodule: an import of the submodule alone
            yield f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target


def edges(root: Path) -> list[Edge]:
    """Each import of one package module by another (a package's own ``__init__`` is not an edge
    of its submodules' importers: Python runs it, but nothing of it is used)."""
    known = modules(root)
    found = []
    for module, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, module, is_package, known):
                if target in known and target != module:
                    found.append(Edge(module, target, node.lineno))
    return sorted(set(found), key=lambda e: (e.importer, e.imported, e.line))


def room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "face"
    if len(parts) == 2 and not _is_room(parts[1]):
        return f"root module {parts[1]}"  # a module at the root that is not the face
    return parts[1]


def _is_room(name: str) -> bool:
    return any(name in peers for peers in ROOMS)


FACE_MODULES = {PACKAGE, f"{PACKAGE}.get_provider_info"}


def root_strays(root: Path) -> list[str]:
    """Modules at the package root that are neither the face nor a room."""
    at_root = [m for m in modules(root) if m.count(".") == 1]
    return sorted(m for m in at_root if m not in FACE_MODULES and not _is_room(m.split(".")[1]))


def layering_violations(root: Path) -> list[str]:
    problems = []
    for edge in edges(root):
        if edge.imported == PACKAGE:  # the package's __init__: its version, and it imports nothing
            continue
        if edge.importer == PACKAGE:
            problems.append(f"{edge}: the package's __init__ imports nothing, so every room may read its version")
            continue
        low, high = room(edge.imported), room(edge.importer)
        if low == high:
            continue
        if edge.importer in FACE_MODULES:
            low_rank = rank_of(low) if _is_room(low) else None
            if low_rank is None:
                problems.append(f"{edge}: the face imports a module outside the rooms")
            continue
        if not _is_room(low) or not _is_room(high):
            problems.append(f"{edge}: a module outside the rooms")
            continue
        if low in ISOLATED or high in ISOLATED:
            problems.append(f"{edge}: the {'emulator' if 'emulator' in (low, high) else low} room shares nothing")
        elif rank_of(low) > rank_of(high):
            problems.append(f"{edge}: {high} (a lower room) imports {low} (a higher one)")
        elif rank_of(low) == rank_of(high):
            problems.append(f"{edge}: {high} and {low} are peers and import none of each other")
    return problems


def circles(root: Path) -> list[list[str]]:
    """Every group of modules that reach each other through imports (Tarjan's strongly connected
    components, larger than one module), each as a sorted list."""
    graph: dict[str, set[str]] = {m: set() for m in modules(root)}
    for edge in edges(root):
        graph[edge.importer].add(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:  # recursion depth is the longest import chain: a few dozen
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)
