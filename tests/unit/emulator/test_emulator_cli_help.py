"""``linkstats-emulator --help`` shows the default of every option that has one."""

from __future__ import annotations

import re
import subprocess
import sys


def test_help_shows_every_default():
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--help"],
        capture_output=True, text=True, timeout=60, env={"COLUMNS": "200", "PATH": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    options = done.stdout.split("options:", 1)[1]
    # One entry per option: its name, then its help (argparse may wrap it onto the next lines)
    lines = {block.split()[0].rstrip(","): " ".join(block.split()) for block in re.split(r"\n(?=  -)", options)[1:]}
    expected = {
        "--host": "default 127.0.0.1",
        "--port": "default 8765",
        "--timezone": "default UTC",
        "--rate-limit-window": "default 60",
        "--api-version": "the default",
        "--analytics-version": "the default",
        "--log-level": "default warning",
    }
    for option, default in expected.items():
        assert default in lines.get(option, ""), f"{option}: {lines.get(option)!r}\n{done.stdout}"
    assert "49 (v46-49, the default)" in lines["--api-version"]
