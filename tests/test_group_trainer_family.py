"""Trainer logs of every trainer (torch, Megatron, torchtitan, HF Trainer, DeepSpeed, a Slurm job's output) are one
kind of text log: parsed in one group, they store exactly the rows of each parsed alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text

SAMPLES = Path(__file__).parent.parent / "data_samples"
# (logs without NCCL lines: a head with NCCL INFO lines may be sniffed as an NCCL log, a kind of its own)
LOGS = ["megatron/nemo1_ptl_bar.log", "torch/dcp_save_eio.log", "hf_trainer/trl_sft_quoted.log", "slurm/cancelled.log",
        "ft_launcher/nvrx_0_6_restarts.log", "nan_guard/mixed_loops.log", "slurm/time_limit.log"]


def test_trainer_logs_of_every_trainer_make_one_group_of_the_rows_of_each_alone(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    for i, rel in enumerate(LOGS):
        p = root / f"job-{i}" / Path(rel).name
        p.parent.mkdir(parents=True)
        p.write_bytes((SAMPLES / rel).read_bytes())
    alone = _ingest_alone(tmp_path / "alone.duckdb", root)
    sizes: list[int] = []
    kinds: set[str] = set()
    with pytest.MonkeyPatch.context() as m:
        real, key = ingest_group_text.parse_text_group, ingest_group._group_key
        m.setattr(ingest_group, "parse_text_group", lambda items, chosen, *a: sizes.append(len(items)) or real(items,
                                                                                                           chosen, *a))
        m.setattr(ingest_group, "_group_key", lambda out, ctx, chosen: kinds.add(out.sniffed) or key(out, ctx, chosen))
        grouped = _ingest(tmp_path / "grouped.duckdb", root)
    assert sizes == [len(LOGS)] and len(kinds) >= 4  # whichever trainer's sniff knew each
    assert grouped == alone
    assert _snapshot(tmp_path / "grouped.duckdb") == _snapshot(tmp_path / "alone.duckdb")
