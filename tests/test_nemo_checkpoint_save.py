"""NeMo 2's one-line save report (`Global Checkpoint Save : Rank: 0 : Iteration: N : Start time: Es : Save duration:
Ds`) is a save with its step and its blocking time, one per report, with or without Megatron's own save lines."""

from __future__ import annotations

from pathlib import Path

from clusterlab import Lab

ITER = (" [2026-12-01 10:{:02d}:00] iteration {:8d}/  500000 | consumed samples: {:12d} | elapsed time per "
        "iteration (ms): 6400.0 | lm loss: 2.000000E+00 | loss scale: 1.0 | number of skipped iterations:   0 |")
SAVE = ("[NeMo I 2026-12-01 10:{:02d}:42 nemo_logging:393] Global Checkpoint Save : Rank: 0 : Iteration: {} : "
        "Start time: 1764583200.010s : Save duration: {}s")


def test_nemo_save_reports_are_saves_with_their_duration(tmp_path: Path) -> None:
    lines = [ITER.format(0, 100, 6400), SAVE.format(0, 100, "41.500"),
             ITER.format(2, 105, 6720),
             "saving checkpoint at iteration     105 to /ckpt in torch_dist format",
             "  successfully saved checkpoint from iteration     105 to /ckpt [ t 1/8, p 1/8 ]",
             SAVE.format(3, 105, "412.250"), ITER.format(9, 110, 7040)]
    run = tmp_path / "b" / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "train.log").write_text("\n".join(lines) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        got = lab.con.execute("SELECT step, duration_s, ok FROM checkpoints WHERE action = 'save' "
                              "ORDER BY step").fetchall()
    assert got == [(100, 41.5, True), (105, 412.25, True)]


def test_nemo_resume_line_is_a_load_of_the_step_in_the_checkpoint_name(tmp_path: Path) -> None:
    lines = ["[NeMo I 2026-12-01 10:00:01 nemo_logging:381] Resuming training from checkpoint: /lustre/ck/"
             "llama--reduced_train_loss=1.93-step=2750-consumed_samples=176000.0-last",
             ITER.format(1, 2751, 176064)]
    run = tmp_path / "b" / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "train.log").write_text("\n".join(lines) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        got = lab.con.execute("SELECT action, step, path FROM checkpoints").fetchall()
    assert got == [("load", 2750, "/lustre/ck/llama--reduced_train_loss=1.93-step=2750-consumed_samples=176000.0-last")]
