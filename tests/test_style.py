"""The tree stays ruff clean and its modules small."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_ruff_is_clean() -> None:
    beside = Path(sys.executable).with_name("ruff")  # the venv's own, whatever PATH says
    ruff = str(beside) if beside.exists() else shutil.which("ruff")
    res = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout


def test_modules_stay_under_600_lines() -> None:
    for pkg in ("clusterlab",):
        for py in (ROOT / pkg).rglob("*.py"):
            n = len(py.read_text().splitlines())
            assert n <= 600, f"{py.relative_to(ROOT)} has {n} lines: split it"
