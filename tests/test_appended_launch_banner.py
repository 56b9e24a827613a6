"""A requeued job's appended output: the second instance's first dated line is DeepSpeed's version banner (its
engine's init), printed a line before the world size the launch was found by. It belongs to the second attempt;
left in the first, it stretched that attempt over the four hours the job waited in the queue (the ledger then booked
them as hang, not restart). Found on an own campaign at an unseen seed (lightning_slurm, seed 40)."""

from __future__ import annotations

from pathlib import Path

from clusterlab import Lab

HEAD = "[2026-11-24 {t},000] [INFO] "
BANNER = "[logging.py:128:log_dist] [Rank 0] DeepSpeed info: version=0.15.4, git-hash=unknown, git-branch=unknown"
WORLD = "[config.py:733:__init__] Config mesh_device None world_size = 16"
STEP = "[logging.py:128:log_dist] [Rank 0] step={s}, skipped=0, lr=[3e-05], mom=[(0.9, 0.999)]"


def _instance(start_h: int) -> list[str]:
    lines = ["LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
             HEAD.format(t=f"{start_h:02d}:00:12") + BANNER, HEAD.format(t=f"{start_h:02d}:00:13") + WORLD]
    lines += [HEAD.format(t=f"{start_h:02d}:0{1 + k}:40") + STEP.format(s=10 * (k + 1)) for k in range(4)]
    return lines


def test_the_version_banner_of_an_appended_instance_starts_its_attempt(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "ds-sft" / "slurm-734412.out"
    out.parent.mkdir(parents=True)
    out.write_text("\n".join([*_instance(6), "srun: error: node-3: task 0: Killed", *_instance(10)]) + "\n")
    with Lab(tmp_path / "a.duckdb") as lab:
        lab.ingest(tmp_path / "runs")
        spans = lab.sql("SELECT attempt, start_ts, end_ts FROM attempts WHERE run = 'ds-sft' ORDER BY 1").rows()
        banner = lab.sql("SELECT attempt FROM facts WHERE run = 'ds-sft' AND key = 'deepspeed_version' "
                         "ORDER BY line").rows()
    assert [a for a, _, _ in spans] == [1, 2]
    assert banner == [(1,), (2,)]
    # the first attempt ends with its own last line, not with the second's first
    assert spans[0][2].hour == 6 and spans[1][1].hour == 10
