"""Own campaign nemo_ft (tests/campaigns/nemo_ft.py), scored with the outsiders' scorer: a NeMo / Megatron job under
NVRx's ft_launcher (in-job restarts in one slurm-J.out per Slurm job, no attempt directories), Xid 119, NVLink Xid 74
with NVSwitch SXids, PCIe AER before an Xid 79, a user's OOM twice, a time limit, a checkpoint directory the provider
wiped (the next launch trains from scratch), a node that dies silently, 10x slow saves on a degraded Lustre; every
incident found on its failure mode, host and attempt, no decoy blamed, every ledger category within the bar."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SCORER = ROOT.parent / "shared" / "evidence" / "score_scenario.py"
GEN = Path(__file__).parent / "campaigns" / "nemo_ft.py"

pytestmark = pytest.mark.skipif(not SCORER.exists(), reason="../shared/evidence is not beside this checkout")


@pytest.mark.slow
def test_nemo_ft_scores_every_incident_and_the_ledger() -> None:
    env = {**os.environ, "HELDOUT_GEN": str(GEN), "HELDOUT_BUDGET_S": "600", "HELDOUT_SEED": "2"}
    res = subprocess.run([sys.executable, str(SCORER)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    out = res.stdout
    print(out)
    summary = out.strip().splitlines()[-1] if out.strip() else res.stderr[-2000:]
    m = re.search(r"incidents (\d+)/(\d+) matched", summary)
    assert m, summary  # the product ran and was scored
    assert m[1] == m[2], summary
    assert res.returncode == 0 and " — FAIL: " not in summary, summary
