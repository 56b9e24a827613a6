"""The README's screenshots are made from the demo by docs/make_screenshots.py: the script keeps running."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SCRIPT = ROOT / "docs" / "make_screenshots.py"
SHOTS = ("scorecard.png", "incident-report.png")


def test_the_screenshot_script_makes_the_readme_pictures_from_the_demo(tmp_path: Path) -> None:
    quick = shutil.which("chromium") is None  # the rest still runs: the demo, its pages, the facts shown
    res = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), *(["--quick"] if quick else [])],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    shown = json.loads(res.stdout.splitlines()[-1])
    assert shown["ranking"] and shown["incident"] == "llama8b-pretrain:1:end" and shown["evidence_lines"] > 0
    readme = (ROOT / "README.md").read_text()
    assert all(f"docs/img/{name}" in readme for name in SHOTS) and "docs/make_screenshots.py" in readme
    if quick:
        return
    for name in SHOTS:
        head = (tmp_path / name).read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, 1600), name
    assert list(tmp_path.iterdir()) and not (tmp_path / "clusterlab-demo").exists()  # nothing left in the cwd
