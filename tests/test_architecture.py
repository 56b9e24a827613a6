"""The rooms' import contracts (pyproject.toml, [tool.importlinter]) hold, and they do catch what they forbid."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL_MODULES = 8  # __init__, lab and the few modules every room shares; the rest live in rooms


def _lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    beside = Path(sys.executable).parent / "lint-imports"
    exe = str(beside) if beside.exists() else shutil.which("lint-imports")
    assert exe, "lint-imports is not installed (the test extra installs import-linter)"
    return subprocess.run([exe, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_import_contracts_hold() -> None:
    res = _lint_imports(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


def test_contracts_fail_on_a_circle_and_an_upward_import(tmp_path: Path) -> None:
    # a copy of the package with one circle inside a room and one import up the layers
    shutil.copytree(ROOT / "clusterlab", tmp_path / "clusterlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    timeline = tmp_path / "clusterlab" / "diagnose" / "timeline.py"
    timeline.write_text(timeline.read_text() + "\nfrom clusterlab.diagnose import root_cause  # noqa: E402,F401\n")
    store = tmp_path / "clusterlab" / "store.py"
    store.write_text(store.read_text() + "\nfrom clusterlab.account import ledger  # noqa: E402,F401\n")
    # (lint-imports reads the package from its working folder first: the copy; the real tree has neither import)
    res = _lint_imports(tmp_path, {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    assert res.returncode != 0, res.stdout
    assert "clusterlab.store is not allowed to import clusterlab.account" in res.stdout, res.stdout
    assert "- .timeline -> .root_cause" in res.stdout, res.stdout


def test_top_level_holds_few_modules() -> None:
    top = sorted(p.name for p in (ROOT / "clusterlab").glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES, f"clusterlab/ holds {', '.join(top)}: move some into a room"


def test_the_map_shows_the_contract_layers() -> None:
    contract = next(c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
                    ["contracts"] if c["type"] == "layers")
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = doc.split("<!-- layers:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert block.splitlines() == contract["layers"], "docs/architecture.md's layers differ from pyproject.toml's"
