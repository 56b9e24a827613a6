"""Own campaign deepspeed_pdsh (tests/campaigns/deepspeed_pdsh.py: DeepSpeed over pdsh on a static reservation, no
Slurm), scored with the outsiders' scorer (../shared/evidence/score_scenario.py): all 8 incidents on mode, host and
attempt, no decoy blamed, every ledger category within the scorer's bar and the sum exact."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

EVIDENCE = ROOT.parent / "shared" / "evidence"
GEN = ROOT / "tests" / "campaigns" / "deepspeed_pdsh.py"

pytestmark = pytest.mark.skipif(not (EVIDENCE / "score_scenario.py").exists(),
                                reason="../shared/evidence is not beside this checkout")


@pytest.mark.slow
def test_deepspeed_pdsh_scores_every_incident_and_the_ledger() -> None:
    env = {**os.environ, "HELDOUT_GEN": str(GEN), "HELDOUT_BUDGET_S": "600"}
    res = subprocess.run([sys.executable, str(EVIDENCE / "score_scenario.py")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    out = res.stdout
    print(out)
    summary = out.strip().splitlines()[-1] if out.strip() else res.stderr[-2000:]
    m = re.search(r"incidents (\d+)/(\d+) matched", summary)
    assert m, summary  # the product ran and was scored
    assert m[1] == m[2], summary
    assert res.returncode == 0, summary  # no decoy, no false incident, the ledger's categories and sum
