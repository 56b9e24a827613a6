"""Every collector reads its real-format samples exactly as the expected files say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterlab.collectors import all_collectors
from clusterlab.ingest.golden import expected_path, golden_rows, is_sample
from conftest import SAMPLES

CASES = sorted(p for p in SAMPLES.glob("*/*") if p.is_file() and is_sample(p))


@pytest.mark.parametrize("sample", CASES, ids=[str(p.relative_to(SAMPLES)) for p in CASES])
def test_sample_gives_expected_rows(sample: Path) -> None:
    rows, result = golden_rows(sample)
    expected = [json.loads(x) for x in expected_path(sample).read_text().splitlines() if x.strip()]
    assert result["status"] == "ingested", result
    assert rows == expected


def test_every_collector_has_a_sample() -> None:
    covered = set()
    for sample in CASES:
        covered |= {r["source"] for r in golden_rows(sample)[0]}
    missing = {c.NAME for c in all_collectors()} - covered
    assert not missing, f"collectors without a golden sample: {sorted(missing)}"
