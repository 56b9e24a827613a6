"""Composer / LLM Foundry console logs: undated metric blocks as step rows, saves timed from the blocks' step clock.

Hand-written in Composer's formats (composer/loggers/console_logger.py, LLM Foundry's logging format), a run whose
duration is in epochs (`[epoch=1][batch=n/total]`: the header counts batches within the epoch, `time/batch` is the
global batch), logging every 20 batches, saving every 40."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab, store

T0 = dt.datetime(2026, 9, 14, 21, 0, 0)
STEP = 2.5  # seconds a batch
SAVE = 41.0  # seconds a save blocks training


def _stamp(t: dt.datetime, level: str, name: str, msg: str) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}: rank0[5511][MainThread]: {level}: {name}: {msg}"


def _block(n: int, window_full: bool) -> list[str]:
    out = [f"[epoch=1][batch={n - 100}/900]:", f"\t Train time/batch: {n}", f"\t Train time/sample: {n * 64}",
           f"\t Train loss/train/total: {3.5 - n / 1000:.4f}"]
    if window_full:
        out += [f"\t Train throughput/batches_per_sec: {1 / STEP:.4f}",
                f"\t Train throughput/device/flops_per_sec: {1.9e14:.4f}"]
    return out + ["\t Train lr-DecoupledAdamW/group0: 0.0001"]


def _log() -> tuple[str, dict[int, dt.datetime]]:
    """A resumed launch at batch 100: blocks at 101 (no throughput yet), 120, 140, ... 220; saves after 140, 180.
    Training starts as the load ends (Starting training... is stamped then)."""
    t = T0
    lines = [_stamp(t, "INFO", "composer.trainer.trainer", "Searching for a previous checkpoint to autoresume"),
             _stamp(t, "INFO", "composer.trainer.trainer", "Loading checkpoint from s3://bkt/run7/ep0-ba100")]
    t += dt.timedelta(seconds=30)
    lines.append(_stamp(t, "INFO", "composer.utils.checkpoint",
                        "Trainer checkpoint loaded from s3://bkt/run7/ep0-ba100"))
    lines.append(_stamp(t, "INFO", "__main__", "Starting training..."))
    ends, n = {}, 100
    for target in [101, *range(120, 221, 20)]:
        t += dt.timedelta(seconds=STEP * (target - n))
        n = target
        ends[n] = t
        lines += _block(n, n != 101)
        if n in (140, 180):
            t += dt.timedelta(seconds=SAVE)
            lines.append(_stamp(t, "DEBUG", "composer.callbacks.checkpoint_saver",
                                f"Checkpoint locally saved to /local/ckpt/ep1-ba{n}/__0_0.distcp"))
            lines.append(_stamp(t, "DEBUG", "composer.callbacks.checkpoint_saver",
                                f"Uploading checkpoint to run7/checkpoints/ep1-ba{n}/__0_0.distcp"))
    return "\n".join(lines) + "\n", ends


def test_blocks_are_steps_dated_by_their_step_times_and_saves_are_timed(tmp_path: Path) -> None:
    text, ends = _log()
    run = tmp_path / "b" / "runs" / "c7" / "attempt-1"
    run.mkdir(parents=True)
    (run / "train.log").write_text(text)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        steps = store.frame(lab.con, "SELECT step, ts, step_s, loss FROM steps WHERE source = 'composer' ORDER BY step")
        # the launch's first block (SpeedMonitor's window not yet full: no step time) is no step record: the next
        # counts its batches from the stamp before it
        assert steps["step"].to_list() == list(range(120, 221, 20))
        assert steps["step_s"].round(6).unique().to_list() == [STEP]
        # each block at its batch's end, to the millisecond
        for step, ts in steps.select("step", "ts").iter_rows():
            assert abs((ts - ends[step]).total_seconds()) < 0.01, (step, ts, ends[step])
        saves = store.frame(lab.con, "SELECT step, duration_s FROM checkpoints WHERE action = 'save' ORDER BY step")
        assert saves["step"].to_list() == [140, 180]
        assert [round(d, 3) for d in saves["duration_s"]] == [SAVE, SAVE]
        loads = lab.con.execute("SELECT step FROM checkpoints WHERE action = 'load'").fetchall()
        assert loads == [(100,)]
