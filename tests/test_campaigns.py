"""Campaigns written outside the team (../shared/evidence/scenarios), generated and scored with their own scorer:
every incident found on its failure mode and host, no decoy blamed, no false incident, every ledger category
within the scorer's 2 % (or half a GPU-hour) and the sum exact, on the scorer's seed and on two more."""

from __future__ import annotations

import pytest
from campaign_scoring import SCORER, score

EVIDENCE = SCORER.parent
CAMPAIGNS = sorted(EVIDENCE.glob("scenarios/campaign*.py"))

pytestmark = pytest.mark.skipif(not CAMPAIGNS, reason="../shared/evidence is not beside this checkout")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [None, 1, 2])
@pytest.mark.parametrize("gen", CAMPAIGNS, ids=[p.stem for p in CAMPAIGNS])
def test_campaign_scores_every_incident_and_the_ledger(gen, seed: int | None) -> None:
    score(gen, seed)
