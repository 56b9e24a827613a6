from __future__ import annotations

from pathlib import Path

import pytest

from clusterlab import Lab

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "data_samples"


@pytest.fixture
def lab() -> Lab:
    """An in-memory store."""
    with Lab(":memory:") as lab:
        yield lab
