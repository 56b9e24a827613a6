"""HF Trainer under torchrun --tee on several nodes: every line carries a `[defaultN]:` prefix, and the lines of the
examples' logging format (`12/06/2026 13:11:16 - INFO - accelerate.utils.fsdp_utils - ...`) keep their stamp behind
it. Under FSDP the optimizer state is written after the model: its line ends the save."""

from __future__ import annotations

import polars as pl

from clusterlab.collectors import hf_trainer
from clusterlab.collectors._base import Context

CK = "/lustre/ckpt/x/checkpoint-2750"
LINES = [
    f"[default0]:[INFO|trainer.py:3801] 2026-12-06 13:09:49,859 >> Saving model checkpoint to {CK}",
    f"[default0]:[INFO|configuration_utils.py:414] 2026-12-06 13:09:50,139 >> Configuration saved in {CK}/config.json",
    f"[default0]:12/06/2026 13:10:29 - INFO - accelerate.utils.fsdp_utils - Saving Optimizer state to {CK}/optimizer_0",
    f"[default0]:12/06/2026 13:11:16 - INFO - accelerate.utils.fsdp_utils - Optimizer state saved in {CK}/optimizer_0",
]


def test_the_optimizer_state_line_behind_a_tee_prefix_ends_the_save() -> None:
    got = hf_trainer.parse(pl.DataFrame({"line": range(1, len(LINES) + 1), "text": LINES}), Context(path="x"))
    saves = got.tables["checkpoints"].filter(pl.col("action") == "save")
    assert saves.height == 1, saves
    assert saves["step"].item() == 2750 and saves["ok"].item() is None  # a file written, not the save done
    assert abs(saves["duration_s"].item() - 86.141) < 1e-6, saves  # 13:09:49.859 -> 13:11:16
