"""Notebooks are committed without outputs and run top to bottom on the samples."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from clusterlab import Lab
from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# a string polars cut short in a frame's HTML (it keeps 30 characters and adds an ellipsis)
CUT_CELL = re.compile(r"<td>&quot;[^<]*…</td>")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{path.name}: strip outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_shows_evidence_lines_and_incident_ids_whole(path: Path, bundle_db_copy: Path) -> None:
    """Set before the first frame is shown, polars' string length covers every evidence line and incident ID."""
    code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    setting = [(i, re.search(r"pl\.Config\.set_fmt_str_lengths\((\d+)\)", s)) for i, s in enumerate(code)]
    found = [(i, int(m[1])) for i, m in setting if m]
    assert found and found[0][0] <= 1, f"{path.name}: no pl.Config.set_fmt_str_lengths in its first cells"
    with Lab(bundle_db_copy, read_only=True) as lab:
        longest = max(lab.sql("SELECT max(length(text)) AS n FROM events")["n"][0],
                      lab.incidents()["incident_id"].str.len_chars().max())
    assert found[0][1] >= longest


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    tables = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "text/html" in o.get("data", {})]
    assert not [m for t in tables for m in CUT_CELL.findall(t)], "a frame shows a string cut short"
