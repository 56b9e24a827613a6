"""Own campaign bloom_opt (tests/campaigns/bloom_opt.py), scored with the outsiders' scorer: the BLOOM-176B / OPT-175B
chronicles at 1/3 scale (Megatron-DeepSpeed's undated iteration lines, a Lustre hang leaving an incomplete `latest`
that the next launch dies loading, a divergence then a deliberate rollback, a GPU 6.5 % slow for a whole attempt, a
requeued job appending to one slurm-J.out); every incident found on its failure mode, host and attempt, no decoy
blamed, no false incident, every ledger category within the scorer's bar, on the scorer's seed and on seed 1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SCORER = ROOT.parent / "shared" / "evidence" / "score_scenario.py"
GEN = Path(__file__).parent / "campaigns" / "bloom_opt.py"

pytestmark = pytest.mark.skipif(not SCORER.exists(), reason="../shared/evidence is not beside this checkout")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [None, 1])
def test_bloom_opt_scores_every_incident_and_the_ledger(seed: int | None) -> None:
    env = {**os.environ, "HELDOUT_GEN": str(GEN), "HELDOUT_BUDGET_S": "600"}
    if seed is not None:
        env["HELDOUT_SEED"] = str(seed)
    else:
        env.pop("HELDOUT_SEED", None)
    res = subprocess.run([sys.executable, str(SCORER)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    out = res.stdout
    print(out)
    summary = out.strip().splitlines()[-1] if out.strip() else res.stderr[-2000:]
    m = re.search(r"incidents (\d+)/(\d+) matched", summary)
    assert m, summary  # the product ran and was scored
    assert m[1] == m[2], summary
    assert res.returncode == 0 and " — FAIL: " not in summary, summary
