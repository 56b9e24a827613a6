"""Campaigns written outside the team (../shared/evidence/scenarios), generated and scored with their own scorer:
every incident found on its failure mode and host, no decoy blamed, no false incident, every ledger category
within the scorer's 2 % (or half a GPU-hour) and the sum exact, on the scorer's seed and on two more."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

EVIDENCE = ROOT.parent / "shared" / "evidence"
CAMPAIGNS = sorted(EVIDENCE.glob("scenarios/campaign*.py"))

pytestmark = pytest.mark.skipif(not CAMPAIGNS, reason="../shared/evidence is not beside this checkout")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [None, 1, 2])
@pytest.mark.parametrize("gen", CAMPAIGNS, ids=[p.stem for p in CAMPAIGNS])
def test_campaign_scores_every_incident_and_the_ledger(gen: Path, seed: int | None) -> None:
    env = {**os.environ, "HELDOUT_GEN": str(gen), "HELDOUT_BUDGET_S": "600"}
    if seed is not None:
        env["HELDOUT_SEED"] = str(seed)
    res = subprocess.run([sys.executable, str(EVIDENCE / "score_scenario.py")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    out = res.stdout
    print(out)
    summary = out.strip().splitlines()[-1] if out.strip() else res.stderr[-2000:]
    m = re.search(r"incidents (\d+)/(\d+) matched", summary)
    assert m, summary  # the product ran and was scored
    assert m[1] == m[2], summary
    problems = summary.split(" — FAIL: ", 1)[1].split("; ") if " — FAIL: " in summary else []
    assert not [p for p in problems if p.startswith(("missed ", "decoy ", "false "))], summary
    assert res.returncode == 0 and not problems, summary  # the ledger's categories and sum too
