"""The package's layering (docs/contributing/architecture.md): the root holds only the face and the
rooms, no room imports a higher or a peer room, and no modules import each other in a circle. The
checker itself is shown to fail on a planted bad import and a planted circle."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import REPO
from tests.support.layering import PACKAGE, ROOMS, circles, layering_violations, root_strays

ROOT = REPO / PACKAGE


def test_the_root_holds_only_the_face_and_the_rooms():
    assert root_strays(ROOT) == []
    rooms = {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}
    listed = {room for peers in ROOMS for room in peers} - {"face"}
    assert rooms == listed, "a room missing from ROOMS (tests/support/layering.py) or a listed room gone"


def test_no_room_imports_a_higher_or_a_peer_room():
    assert layering_violations(ROOT) == []


def test_no_circle_of_imports():
    assert circles(ROOT) == []


# The planted cases count only what the plant adds, so they hold whatever the tree holds today.
@pytest.fixture
def planted(tmp_path):
    copy = tmp_path / PACKAGE
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_the_check_fails_on_a_lower_room_importing_a_higher_one(planted):
    checks = planted / "client" / "checks.py"
    planted_import = "from airflow_provider_linkstats.operators.base import LinkstatsBaseOperator"
    checks.write_text(checks.read_text() + f"\n\ndef _planted():\n    {planted_import}\n")
    problems = sorted(set(layering_violations(planted)) - set(layering_violations(ROOT)))
    assert len(problems) == 1
    assert "client.checks imports airflow_provider_linkstats.operators.base" in problems[0]
    assert "a lower room" in problems[0]


def test_the_check_fails_on_a_peer_import_and_on_the_emulator_reaching_the_client(planted):
    sensor = planted / "sensors" / "links.py"
    sensor.write_text(sensor.read_text() + "\nfrom airflow_provider_linkstats.operators import base as _planted\n")
    spec = planted / "emulator" / "spec.py"
    spec.write_text(spec.read_text() + "\nfrom airflow_provider_linkstats.client import validation as _planted\n")
    problems = "\n".join(set(layering_violations(planted)) - set(layering_violations(ROOT)))
    assert "are peers" in problems
    assert "emulator.spec imports airflow_provider_linkstats.client.validation" in problems


def test_the_check_fails_on_a_circle_and_on_a_module_at_the_root(planted):
    errors = planted / "client" / "errors.py"
    planted_import = "from airflow_provider_linkstats.client import api"
    errors.write_text(errors.read_text() + f"\n\ndef _planted():\n    {planted_import}\n")
    (planted / "stray.py").write_text("X = 1\n")
    found = [group for group in circles(planted) if group not in circles(ROOT)]
    assert any(f"{PACKAGE}.client.errors" in group and f"{PACKAGE}.client.api" in group for group in found)
    assert set(root_strays(planted)) - set(root_strays(ROOT)) == {f"{PACKAGE}.stray"}
