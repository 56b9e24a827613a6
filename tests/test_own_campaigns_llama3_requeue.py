"""Own campaign llama3_requeue (tests/campaigns/llama3_requeue.py), scored with the outsiders' scorer: one requeued
Slurm job whose ten attempts append to one console file and to per-rank step files; every incident found on its
failure mode, host and attempt, no decoy blamed, no false incident, every ledger category within the scorer's bar."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SCORER = ROOT.parent / "shared" / "evidence" / "score_scenario.py"
GEN = Path(__file__).parent / "campaigns" / "llama3_requeue.py"

pytestmark = pytest.mark.skipif(not SCORER.exists(), reason="../shared/evidence is not beside this checkout")


@pytest.mark.slow
def test_llama3_requeue_scores_every_incident_and_the_ledger() -> None:
    env = {**os.environ, "HELDOUT_GEN": str(GEN), "HELDOUT_BUDGET_S": "600", "HELDOUT_SEED": "1"}
    res = subprocess.run([sys.executable, str(SCORER)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    out = res.stdout
    print(out)
    summary = out.strip().splitlines()[-1] if out.strip() else res.stderr[-2000:]
    m = re.search(r"incidents (\d+)/(\d+) matched", summary)
    assert m, summary  # the product ran and was scored
    assert m[1] == m[2], summary
    assert res.returncode == 0 and " — FAIL: " not in summary, summary
