"""The ledger's hang runs from the root event of an attempt's end to its exit (DESIGN's ledger): the steps a job began
after the root (it stepped on after silent data corruption until a guard stopped it) are hang, neither work kept nor
thrown away. A root dated only by its interval (an unstamped traceback between two stamped lines) may be that
interval's lower bound, long before the fault: the steps inside the interval stay steps."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
from test_sdc_rank_records import FROM_STEP, STEPS, _bundle

from clusterlab import Lab
from clusterlab.account import ledger

T0 = dt.datetime(2026, 12, 3, 9, 0, 0)
LAST = 34


def _tl(starts: list[float]) -> pl.DataFrame:
    return pl.DataFrame({"attempt": [1] * len(starts), "step": list(range(1, len(starts) + 1)),
                         "start": [T0 + dt.timedelta(seconds=s) for s in starts]}).with_columns(
        pl.col("attempt").cast(pl.Int32))


def test_records_begun_after_the_root_and_its_slack_are_cut() -> None:
    tl = _tl([0, 10, 20, 30, 40])
    roots = pl.DataFrame({"attempt": [1], "root_ts": [T0 + dt.timedelta(seconds=20)]})
    # step 3 began at the root and step 4 within the clocks' slack of it: both stay; step 5 began after
    assert ledger.until_root(tl, roots.with_columns(root_ts=pl.col("root_ts") + dt.timedelta(seconds=5.5))
                             )["step"].to_list() == [1, 2, 3, 4]
    assert ledger.until_root(tl, roots)["step"].to_list() == [1, 2, 3]
    other = roots.with_columns(attempt=pl.lit(2, pl.Int32))
    assert ledger.until_root(tl, other)["step"].to_list() == [1, 2, 3, 4, 5]  # no root of its own: all kept


def test_steps_after_the_first_non_finite_number_are_hang(tmp_path: Path) -> None:
    with Lab(tmp_path / "s.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "bundle", trainer_log=True))
        att = lab.attribute("sdcrun")
        got = dict(att.ledger.select("category", "gpu_hours").iter_rows())
    step_h = att.gpus * 5 / 3600
    after = (STEPS - FROM_STEP) * step_h  # the steps after the first non-finite one
    assert abs(got["hang"] - after) <= 2 * step_h + 1e-9, got  # the slack keeps the steps begun within 5 s


def _megatron_deepspeed(root: Path) -> Path:
    """34 iterations of 8 s, one line in ten stamped, then a NaN check's traceback without a stamp of its own: between
    the last iteration line's end and the worker's exit (the stamped iteration 31 alone would date it minutes early,
    and the iterations after it must not become hang)."""
    att = root / "runs" / "nanrun" / "attempt-1"
    att.mkdir(parents=True)
    lines = [f"[{T0:%Y-%m-%d %H:%M:%S}] training ..."]
    for n in range(1, LAST + 1):
        stamp = f"[{T0 + dt.timedelta(seconds=8 * n):%Y-%m-%d %H:%M:%S}] " if n % 10 == 1 else ""
        lines.append(f" {stamp}iteration {n:8d}/ 5000000 | consumed samples: {80 * n:12d} | elapsed time per "
                     f"iteration (ms): 8000.0 | learning rate: 2.000000E-05 | global batch size:    80 | lm loss: "
                     f"{6.5 - 0.01 * n:.6E} | loss scale: 1.0 | grad norm: 0.310 | number of skipped iterations:   0 |"
                     " number of nan iterations:   0 |")
    lines += ["[rank3]: Traceback (most recent call last):",
              '[rank3]:   File "/opt/megatron-lm/pretrain_gpt.py", line 284, in <module>',
              f"[rank3]: RuntimeError: Rank 3, node n-002, device 1, iteration {LAST + 1}: Unexpected result nan "
              "(message='found NaN in local grad norm for bucket #0 in backward pass before data-parallel "
              "communication collective')",
              f"W{T0 + dt.timedelta(seconds=8 * LAST + 2):%m%d %H:%M:%S}.405000 83620 torch/distributed/elastic/"
              "multiprocessing/api.py:897] Sending process 83677 closing signal SIGTERM",
              f"E{T0 + dt.timedelta(seconds=8 * LAST + 3):%m%d %H:%M:%S}.005000 34087 torch/distributed/elastic/"
              "multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 34144) of binary: /usr/bin/python"]
    (att / "train.log").write_text("\n".join(lines) + "\n")
    (att.parent / "run.toml").write_text("gpus = 8\n")
    return root


def test_a_root_dated_by_its_interval_cuts_no_step(tmp_path: Path) -> None:
    with Lab(tmp_path / "n.duckdb") as lab:
        lab.ingest(_megatron_deepspeed(tmp_path / "bundle"))
        end = lab.incidents("nanrun").filter(pl.col("kind") == "attempt_end").row(0, named=True)
        att = lab.attribute("nanrun")
        got = dict(att.ledger.select("category", "gpu_hours").iter_rows())
    # the traceback has no stamp: it comes after the last iteration line (its interval narrowed by the step rows
    # before it, `ingest.step_clock`), no later than the worker's exit 3 s after it
    assert T0 + dt.timedelta(seconds=8 * LAST) <= end["root_ts"] <= T0 + dt.timedelta(seconds=8 * LAST + 3), end
    tail_h = att.gpus * (3 + 1) / 3600  # the exit 3 s after the last step, and a second of stamp
    assert got["hang"] <= tail_h, got  # iterations 32-34 ran: not hang


def test_the_simulators_truth_books_the_steps_after_the_corruption_as_hang() -> None:
    from test_simulate_cases import FIXTURE_SEED, FLEET

    from clusterlab.simulator import adversarial, expected, timeline
    from clusterlab.simulator.fleet import Config, clusters

    cfg = Config(seed=FIXTURE_SEED, **{k: v for k, v in FLEET.items()})
    runs = [timeline.build(cfg, c) for c in clusters(cfg)]
    run, k = next((r, i) for r in runs for i, a in enumerate(r.attempts) if a.ending.case == "sdc")
    att, nxt = run.attempts[k], (run.attempts[k + 1] if k + 1 < len(run.attempts) else None)
    s = att.steps
    assert adversarial.truth_root_ms(att) == s.end[-adversarial.SDC_STEPS]  # the first non-finite loss
    got = expected.attempt_ms(att, nxt, *expected.baseline_ms(run))
    # the step begun at the root stays a step; the one after it is hang, up to the exit
    assert got["hang"] == expected.span_ms(att, True)[1] - s.end[-2], got


def test_a_save_among_the_steps_after_the_root_is_hang_not_checkpoint() -> None:
    """A diverged job that steps on until the scancel may write a save among those steps: it is part of the hang. A
    save of the last step kept, and every save of an attempt nothing was cut from, stay checkpoints."""
    tl = pl.concat([_tl([0, 10, 20, 30, 40]), _tl([0, 10, 20]).with_columns(attempt=pl.lit(2, pl.Int32))])
    cut = ledger.until_root(tl, pl.DataFrame({"attempt": [1], "root_ts": [T0 + dt.timedelta(seconds=22)]}))
    saves = pl.DataFrame({"s_attempt": [1, 1, 1, 2], "save_step": [2, 3, 4, 3], "ts": [T0] * 4,
                          "duration_s": [1.0] * 4})
    left = ledger.saves_before_cut(saves, tl, cut)
    assert list(left.select("s_attempt", "save_step").iter_rows()) == [(1, 2), (1, 3), (2, 3)]
