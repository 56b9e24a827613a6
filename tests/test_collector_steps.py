"""Training step log collectors: Megatron-LM, torchtitan, DeepSpeed, HF Trainer, step JSONL."""

from __future__ import annotations

import datetime as dt
import json
import re

import polars as pl
import pytest

from clusterlab import store
from clusterlab.collectors import all_collectors, deepspeed, hf_trainer, megatron, nan_guards, step_jsonl, torchtitan
from clusterlab.collectors._base import Context, Parsed
from clusterlab.ingest import attempts
from clusterlab.ingest.bundle import FileTask
from clusterlab.ingest.driver import ingest_file
from conftest import SAMPLES

CTX = Context(path="test.log")
NCCL_SPAM = [
    "gpu-001:2231:2301 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    "gpu-001:2231:2231 [0] NCCL INFO comm 0x55d3c1a0 rank 0 nranks 64 cudaDev 0 busId 18000 - Init COMPLETE",
    "gpu-001:2231:2231 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.10.1.1<0>",
    "gpu-001:2231:2290 [0] NCCL INFO Connected all rings, step 3 loss 0 iteration 12/40 | size 8",
]
STEP_COLLECTORS = [megatron, torchtitan, deepspeed, hf_trainer]


def run(collector, *texts: str, ctx: Context = CTX) -> Parsed:
    """Parse `texts` as the engine would: number them, keep the lines the PATTERN matches."""
    frame = pl.DataFrame({"line": pl.Series(range(1, len(texts) + 1), dtype=pl.Int64), "text": list(texts)})
    if collector.PATTERN is not None:
        frame = frame.filter(pl.col("text").str.contains(collector.PATTERN))
    return collector.parse(frame, ctx)


def rows(parsed: Parsed, table: str) -> list[dict]:
    frame = parsed.tables.get(table)
    return [] if frame is None else frame.to_dicts()


def meg_iter(step: int, ms: str = "5432.1", ts: str | None = "2026-11-24 08:10:43", tail: str = "") -> str:
    pre = f" [{ts}]" if ts else ""
    return (f"{pre} iteration {step:8d}/  500000 | consumed samples: {step * 512:12d} | elapsed time per iteration "
            f"(ms): {ms} | throughput per GPU (TFLOP/s/GPU): 402.3 | learning rate: 3.000000E-04 | global batch "
            f"size:   512 | lm loss: 7.123456E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped "
            f"iterations:   0 | number of nan iterations:   0 |{tail}")


# ---------------------------------------------------------------- Megatron-LM

def test_megatron_iteration_line_gives_step_time_and_tflops():
    (row,) = rows(run(megatron, meg_iter(100)), "steps")
    assert row["step"] == 100 and row["step_s"] == pytest.approx(5.4321)
    assert row["tflops"] == 402.3 and row["loss"] == pytest.approx(7.123456) and row["lr"] == pytest.approx(3e-4)
    assert row["grad_norm"] == 1.234 and row["skipped"] == 0 and row["nan"] == 0
    assert row["ts"] == dt.datetime(2026, 11, 24, 8, 10, 43)


def test_megatron_time_prefix_is_local_time_of_the_node():
    (row,) = rows(run(megatron, meg_iter(100), ctx=Context(path="t", tz="America/Chicago")), "steps")
    assert row["ts"] == dt.datetime(2026, 11, 24, 14, 10, 43)


def test_megatron_deepspeed_variant_in_seconds_with_srun_label():
    line = ("63:  iteration      100/  143051 | consumed samples:       204800 | consumed tokens:    419430400 | "
            "elapsed time per iteration (s): 15.23 | learning rate: 1.944E-05 | global batch size:  2048 | "
            "lm loss: 5.396257E+00 | grad norm: 0.765 | num zeros: 0.0 | number of skipped iterations:   0 | "
            "number of nan iterations:   0 | samples per second: 134.471 | TFLOPs: 148.04 |")
    (row,) = rows(run(megatron, line), "steps")
    assert row["step_s"] == 15.23 and row["tflops"] == 148.04 and row["rank"] == 63 and row["ts"] is None


def test_megatron_nan_iterations_raise_a_loss_divergence_event():
    line = meg_iter(300).replace("number of skipped iterations:   0", "number of skipped iterations:   3").replace(
        "number of nan iterations:   0", "number of nan iterations:   3")
    parsed = run(megatron, line)
    (event,) = rows(parsed, "events")
    assert event["kind"] == "loss_nan" and event["failure_mode"] == "loss_divergence"
    assert json.loads(event["detail"]) == {"step": 300, "nan_iterations": 3}
    assert rows(parsed, "steps")[0]["skipped"] == 3


def test_megatron_rerun_validation_names_node_rank_and_step():
    line = ("[rank17]: RuntimeError: Rank 17, node gpu-003, device 1, iteration 1234: Unexpected result nan "
            "(message='found NaN in local grad norm for bucket #0 in backward pass')")
    (event,) = rows(run(megatron, line), "events")
    assert (event["host"], event["rank"], event["kind"]) == ("gpu-003", 17, "loss_nan")
    assert json.loads(event["detail"])["step"] == 1234


def test_megatron_save_pairs_start_finish_and_timer():
    parsed = run(
        megatron, meg_iter(200),
        "saving checkpoint at iteration     200 to /lustre/ckpt in torch_dist format",
        "  successfully saved checkpoint from iteration     200 to /lustre/ckpt [ t 1/8, p 1/1 ]",
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (31876.54, 32001.87)",
    )
    (ck,) = rows(parsed, "checkpoints")
    assert (ck["line"], ck["action"], ck["step"], ck["path"], ck["ok"]) == (2, "save", 200, "/lustre/ckpt", True)
    assert ck["duration_s"] == pytest.approx(32.00187)
    assert parsed.unparsed == 0


def test_megatron_save_without_finish_is_not_ok():
    (ck,) = rows(run(megatron, "saving checkpoint at iteration     400 to /lustre/ckpt in torch_dist format"),
                 "checkpoints")
    assert ck["ok"] is False and ck["duration_s"] is None


def test_megatron_async_save_is_ok_once_finalised_and_keeps_the_blocking_time():
    parsed = run(
        megatron,
        "[rank0]: [2026-11-24 14:20:42.004417] saving checkpoint at iteration    1000 to /ckpt in torch_dist format",
        "[rank0]:   [2026-11-24 14:20:44.337120] scheduled an async checkpoint save at iteration    1000 to /ckpt",
        "[rank63]:     save-checkpoint ................................: (2301.11, 2333.45)",
        meg_iter(1100, ts="2026-11-24 14:22:46.117342"),
        "[rank0]:   [2026-11-24 14:22:47.500030] successfully saved checkpoint from iteration    1000 to /ckpt "
        "[ t 1/4, gtp_remat 1/1, p 1/2 ]",
    )
    (ck,) = rows(parsed, "checkpoints")
    assert ck["ok"] is True and ck["duration_s"] == pytest.approx(2.33345) and ck["step"] == 1000
    assert ck["ts"] == dt.datetime(2026, 11, 24, 14, 20, 42, 4417)


def test_megatron_load_timer_of_a_fresh_start_is_not_a_checkpoint():
    parsed = run(
        megatron,
        "    will not load any checkpoints and will start from random",
        "    load-checkpoint ................................: (1.52, 2.10)",
        " loading distributed checkpoint from /ckpt at iteration 200",
        "  successfully loaded checkpoint from /ckpt [ t 1/8, p 1/1 ] at iteration 200",
        "    load-checkpoint ................................: (41234.50, 41260.12)",
    )
    (ck,) = rows(parsed, "checkpoints")
    assert (ck["action"], ck["step"], ck["ok"]) == ("load", 200, True)
    assert ck["duration_s"] == pytest.approx(41.26012)


def test_megatron_truncated_iteration_line_is_counted_unparsed():
    parsed = run(megatron, meg_iter(100), meg_iter(200)[:110])
    assert len(rows(parsed, "steps")) == 1 and parsed.unparsed == 1
    assert parsed.warnings == ["line 2: iteration line without a readable step time"]


def test_megatron_warns_of_five_unreadable_iteration_lines_in_each_file_of_a_group():
    """Two files' lines in one parse (numbered `file x FILE_LINE_BASE + line`, as a group numbers them): each file
    gets the warnings it gets alone, the first five of its own, not five for the group."""
    from clusterlab.collectors._base import FILE_LINE_BASE

    cut = [meg_iter(100 + i)[:110] for i in range(7)]
    frame = pl.DataFrame({"line": [f * FILE_LINE_BASE + n for f in (0, 1) for n in range(1, 8)], "text": cut * 2})
    parsed = megatron.parse(frame.filter(pl.col("text").str.contains(megatron.PATTERN)), CTX)
    want = [f"line {f * FILE_LINE_BASE + n}: iteration line without a readable step time" for f in (0, 1)
            for n in range(1, 6)]
    assert parsed.warnings == want and parsed.unparsed == 14
    assert megatron.WARNINGS_PER_FILE


def test_megatron_argument_dump_gives_model_shape_facts():
    parsed = run(
        megatron,
        "  num_layers ...................................... 32",
        "  seq_length ...................................... 8192",
        "  num_experts ..................................... None",
        " > number of parameters on (tensor, pipeline) model parallel rank (1, 0): 1003782144",
        "[before the start of training step] datetime: 2026-11-24 08:01:40 ",
    )
    facts = {r["key"]: r["value"] for r in rows(parsed, "facts")}
    assert facts == {"layers": "32", "seq_len": "8192", "params_shard_tp1_pp0": "1003782144",
                     "milestone": "before the start of training step"}
    assert parsed.unparsed == 0


def test_megatron_ignores_deepspeed_config_dump_with_shorter_dot_leaders():
    line = "[2026-11-24 06:00:20,412] [INFO] [config.py:1004:print]   world_size ................... 16"
    assert not re.search(megatron.PATTERN, line)
    assert rows(run(deepspeed, line), "facts")[0]["key"] == "data_parallel_size"


# ---------------------------------------------------------------- torchtitan

def titan(ts: str, msg: str) -> str:
    return f"[rank0]:[titan] {ts} - root - INFO - {msg}"


def titan_step(ts: str, step: int, loss: str = " 7.89991") -> str:
    return titan(ts, f"\x1b[31mstep: {step:2}  \x1b[32mloss: {loss}  \x1b[38;2;180;60;0mgrad_norm:  1.2345  "
                     f"\x1b[38;2;54;234;195mmemory: 23.11GiB(29.20%)  \x1b[34mtps: 6,519  \x1b[36mtflops: 377.44  "
                     f"\x1b[35mmfu: 38.16%\x1b[39m")


def test_torchtitan_coloured_step_line_gives_loss_grad_norm_and_tflops():
    (row,) = rows(run(torchtitan, titan_step("2026-11-24 08:10:00,123", 10)), "steps")
    assert (row["step"], row["loss"], row["grad_norm"], row["tflops"], row["rank"]) == (10, 7.89991, 1.2345, 377.44, 0)
    assert row["ts"] == dt.datetime(2026, 11, 24, 8, 10, 0, 123000)


def test_torchtitan_step_time_is_the_interval_between_step_lines_within_one_launch():
    parsed = run(
        torchtitan,
        titan_step("2026-11-24 08:10:00,000", 10), titan_step("2026-11-24 08:10:30,000", 20),
        titan("2026-11-24 08:20:00,000", "Loading the checkpoint from ./outputs/checkpoint/step-10."),
        titan_step("2026-11-24 08:21:00,000", 20), titan_step("2026-11-24 08:21:27,000", 30),
    )
    assert [(r["step"], r["step_s"]) for r in rows(parsed, "steps")] == [(10, None), (20, 3.0), (20, None), (30, 2.7)]


def test_torchtitan_validation_and_repeated_rank_lines_are_not_extra_steps():
    same = titan_step("2026-11-24 08:10:00,123", 10).removeprefix("[rank0]:")
    val = titan("2026-11-24 08:10:05,000", "\x1b[33mvalidate step: 10  \x1b[32mloss:  7.5512  tps: 21,040")
    parsed = run(torchtitan, same, same, same, val)
    assert [r["step"] for r in rows(parsed, "steps")] == [10] and parsed.unparsed == 0


def test_torchtitan_nan_loss_is_flagged_and_raises_an_event():
    parsed = run(torchtitan, titan_step("2026-11-24 08:10:00,123", 40, loss="     nan"))
    (row,) = rows(parsed, "steps")
    assert row["loss"] is None and row["nan"] == 1
    assert rows(parsed, "events")[0]["kind"] == "loss_nan"


def test_torchtitan_save_takes_the_last_logged_step_and_staging_leaves_ok_unknown():
    parsed = run(
        torchtitan, titan_step("2026-11-24 08:10:00,000", 500),
        titan("2026-11-24 08:10:00,100", "Saving the checkpoint."),
        titan("2026-11-24 08:10:12,440", "Finished saving the checkpoint in 12.34 seconds."),
        titan_step("2026-11-24 08:10:40,000", 510),
        titan("2026-11-24 08:10:40,100", "Staging the checkpoint."),
        titan("2026-11-24 08:10:40,600", "Finished staging the checkpoint in 0.50 seconds."),
    )
    got = [(r["step"], r["duration_s"], r["ok"]) for r in rows(parsed, "checkpoints")]
    assert got == [(500, 12.34, True), (510, 0.5, None)]


def test_torchtitan_model_size_and_trainer_facts():
    parsed = run(
        torchtitan, titan("2026-11-24 08:00:11,480", "\x1b[34mModel llama3 8B \x1b[31msize: 8,030,261,248 total "
                                                     "parameters\x1b[39m"),
        titan("2026-11-24 08:00:13,004", "Trainer is initialized with 16384 tokens per DP rank, 1048576 tokens per "
                                         "train step, gradient accumulation steps 1, maximum context length 8192, "
                                         "total steps 3000 (warmup 200)"),
    )
    facts = {r["key"]: r["value"] for r in rows(parsed, "facts")}
    assert facts["model"] == "llama3 8B" and facts["params"] == "8030261248"
    assert facts["tokens_per_step"] == "1048576" and facts["seq_len"] == "8192" and facts["train_iters"] == "3000"


# ---------------------------------------------------------------- DeepSpeed

def ds(ts: str, msg: str, src: str = "logging.py:128:log_dist") -> str:
    return f"[{ts}] [INFO] [{src}] {msg}"


def test_deepspeed_progress_and_pipeline_lines_of_one_step_merge():
    parsed = run(
        deepspeed, ds("2026-11-25 12:03:10,410", "[Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]"),
        "steps: 10 loss: 7.1234 iter time (s): 0.456 samples/sec: 140.351",
    )
    (row,) = rows(parsed, "steps")
    assert (row["step"], row["loss"], row["step_s"], row["lr"], row["line"]) == (10, 7.1234, 0.456, 1e-4, 1)
    assert row["ts"] == dt.datetime(2026, 11, 25, 12, 3, 10, 410000)


def test_deepspeed_skipped_is_the_skips_since_the_previous_row_not_the_running_total():
    parsed = run(
        deepspeed, *[ds(f"2026-11-24 06:0{i}:00,000", f"[Rank 0] step={10 * i}, skipped={s}, lr=[3e-05], mom=[]")
                     for i, s in ((1, 1), (2, 1), (3, 3))])
    got = [(r["step"], r["skipped"], r["step_s"]) for r in rows(parsed, "steps")]
    assert got == [(10, None, None), (20, 0, 6.0), (30, 2, 6.0)]


def test_deepspeed_overflow_is_informational_and_a_floored_loss_scale_is_divergence():
    parsed = run(
        deepspeed,
        ds("2026-11-24 06:01:02,551", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, "
                                      "reducing to 32768", src="loss_scaler.py:183:update_scale"),
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
    )
    first, second = rows(parsed, "events")
    assert (first["kind"], first["severity"], first["failure_mode"]) == ("grad_overflow", "info", None)
    assert first["rank"] == 0
    assert json.loads(first["detail"]) == {"loss_scale": 65536.0, "next_scale": 32768.0}
    assert (second["kind"], second["failure_mode"]) == ("loss_scale_min", "loss_divergence")


def test_deepspeed_save_spans_about_to_be_saved_to_ready_and_load_spans_its_files():
    model, optim = "/fsx/ckpt/global_step30/mp_rank_00_model_states.pt", "/fsx/ckpt/global_step30/zero_pp_rank_0.pt"
    parsed = run(
        deepspeed, ds("2026-11-24 06:02:58,900", "[Rank 0] [Torch] Checkpoint global_step30 is about to be saved!"),
        ds("2026-11-24 06:02:59,010", f"[Rank 0] Saving model checkpoint: {model}"),
        ds("2026-11-24 06:03:41,950", "[Torch] Checkpoint global_step30 is ready now!", src="torch_ckpt.py:33:commit"),
        ds("2026-11-24 07:00:00,000", f"[Rank 0] [Torch] Begin Load checkpoint from {model}..."),
        ds("2026-11-24 07:00:06,000", f"[Rank 0] [Torch] End Load checkpoint from {model}..."),
        ds("2026-11-24 07:00:06,100", f"[Rank 0] [Torch] Begin Load checkpoint from {optim}..."),
        ds("2026-11-24 07:00:10,000", f"[Rank 0] [Torch] End Load checkpoint from {optim}..."),
    )
    got = [(r["action"], r["step"], r["path"], r["duration_s"], r["ok"]) for r in rows(parsed, "checkpoints")]
    assert got == [("save", 30, "/fsx/ckpt/global_step30", pytest.approx(43.05), True),
                   ("load", 30, "/fsx/ckpt/global_step30", pytest.approx(10.0), True)]


def test_deepspeed_newer_save_without_commit_line_keeps_ok_unknown():
    (ck,) = rows(run(deepspeed, ds("2026-11-24 06:02:58,900", "[Rank 0] [Torch] Checkpoint global_step20 is about "
                                                              "to be saved!")), "checkpoints")
    assert ck["ok"] is None and ck["step"] == 20


# ---------------------------------------------------------------- HuggingFace Trainer

def test_hf_trainer_dict_lines_read_numbers_and_quoted_numbers():
    parsed = run(
        hf_trainer, "{'loss': 3.9813, 'grad_norm': 2.2116, 'learning_rate': 4.9911e-05, 'epoch': 0.03}",
        " 2%|▏  | 100/5625 [01:02<57:01,  1.61it/s]{'loss': '2.341', 'grad_norm': '1.12', 'learning_rate': '1.98e-05'}",
        "{'eval_loss': 3.3102, 'eval_runtime': 12.3012, 'epoch': 0.09}",
    )
    got = [(r["step"], r["loss"], r["grad_norm"], r["lr"]) for r in rows(parsed, "steps")]
    # the second dict follows tqdm's bar on its line: the bar's step is its step (the first has no bar, no banner)
    assert got == [(None, 3.9813, 2.2116, 4.9911e-05), (100, 2.341, 1.12, 1.98e-05)]


def test_hf_trainer_nan_loss_event_and_truncated_dict_unparsed():
    parsed = run(hf_trainer, "{'loss': nan, 'grad_norm': nan, 'learning_rate': 4.96e-05, 'epoch': 0.1}",
                 "{'loss': '2.01', 'grad_norm': '0.95', 'learning_ra")
    assert rows(parsed, "steps")[0]["nan"] == 1 and rows(parsed, "events")[0]["kind"] == "loss_nan"
    assert parsed.unparsed == 1


def test_hf_trainer_checkpoint_step_from_its_folder_and_final_metrics_as_facts():
    parsed = run(
        hf_trainer,
        "[INFO|trainer.py:3705] 2026-11-24 11:05:12,441 >> Saving model checkpoint to out/gpt2/checkpoint-500",
        "[INFO|trainer.py:2250] 2026-11-24 11:20:10,012 >> Loading model from out/gpt2/checkpoint-500.",
        "[INFO|trainer.py:2134] 2026-11-24 11:20:31,500 >>   Total train batch size (w. parallel, distributed & "
        "accumulation) = 64",
        "{'train_runtime': 3601.2219, 'train_samples_per_second': 99.97, 'train_steps_per_second': 1.562, "
        "'train_loss': 3.0511, 'epoch': 3.0}",
        ctx=Context(path="t", tz="Asia/Singapore"),
    )
    got = [(r["action"], r["step"], r["path"], r["ok"], r["ts"]) for r in rows(parsed, "checkpoints")]
    assert got == [("save", 500, "out/gpt2/checkpoint-500", None, dt.datetime(2026, 11, 24, 3, 5, 12, 441000)),
                   ("load", 500, "out/gpt2/checkpoint-500", None, dt.datetime(2026, 11, 24, 3, 20, 10, 12000))]
    facts = {r["key"]: r["value"] for r in rows(parsed, "facts")}
    assert facts == {"global_batch_size": "64", "train_runtime_s": "3601.2219", "train_samples_per_second": "99.97",
                     "train_steps_per_second": "1.562", "train_loss": "3.0511"}


# ---------------------------------------------------------------- step JSONL

def record(**kw) -> str:
    base = {"ts": 1795824002.5, "rank": 0, "host": "east-001", "step": 1, "step_s": 2.41}
    return json.dumps({**base, **kw})


def test_step_jsonl_junk_lines_counted_not_fatal():
    parsed = run(step_jsonl, record(), "WARNING: not json", "\x00\x00\x00", '{"ts": 1, "rank": 1, "step": 2,, }',
                 '{"ts": 1, "step": 2}', record(rank=1, step_s=[2.4]), "", record(rank=2), '{"ts": 1795824002.5, "ra')
    assert [r["rank"] for r in rows(parsed, "rank_steps")] == [0, 2]
    assert parsed.unparsed == 6
    assert parsed.unparsed_lines.to_list() == [2, 3, 4, 5, 6, 9]  # reported by the engine, three a batch
    assert step_jsonl.UNPARSED_WARNING == "not a step record (a JSON object with rank and step)"


def test_step_jsonl_reads_iso_offsets_epoch_seconds_and_numbers_as_text():
    parsed = run(step_jsonl, record(ts="2026-11-28T01:00:05.250+01:00"), record(ts="2026-11-28T00:00:05Z"),
                 record(ts="2026-11-28 00:00:07.5"), record(ts=1795824002.5), record(rank="3", tokens="65536"))
    got = [(r["ts"], r["rank"]) for r in rows(parsed, "rank_steps")]
    day = dt.datetime(2026, 11, 28)
    assert [g[0] for g in got[:4]] == [day + dt.timedelta(seconds=s) for s in (5.25, 5, 7.5, 2.5)]
    assert got[4][1] == 3 and rows(parsed, "rank_steps")[4]["tokens"] == 65536


def test_step_jsonl_large_batch_keeps_every_good_record_around_bad_ones():
    texts = [record(rank=i % 512, step=i // 512, comm_s=0.1) for i in range(20_000)]
    texts[777] = '{"rank": 1, "step": }'
    texts[15_000] = '{"rank": [1], "step": 3}'
    parsed = run(step_jsonl, *texts)
    frame = parsed.tables["rank_steps"]
    assert frame.height == 19_998 and parsed.unparsed == 2
    assert frame["line"].is_sorted() and 778 not in frame["line"].to_list()


def test_step_jsonl_a_bad_record_leaves_its_neighbours_to_the_fast_reader(monkeypatch):
    """One record the NDJSON reader refuses among thousands: the others are read as if it were not there (same
    values), and only a small part around it goes to the slow decoders."""
    texts = [record(rank=i % 64, step=i // 64, ts=1795824000 + i / 8) for i in range(6_000)]
    clean = run(step_jsonl, *texts).tables["rank_steps"]
    slow: list[int] = []
    real = step_jsonl._decode_slowly
    monkeypatch.setattr(step_jsonl, "_decode_slowly", lambda part: slow.append(part.height) or real(part))
    cut = run(step_jsonl, *texts[:3_000], '{"ts": 1795824002.5, "rank": 1, "step": }', *texts[3_000:])
    frame = cut.tables["rank_steps"]
    assert cut.unparsed == 1 and cut.unparsed_lines.to_list() == [3_001]
    assert frame.with_columns(line=pl.col("line") - (pl.col("line") > 3_001)).equals(clean)
    assert slow and max(slow) <= 64


def test_step_jsonl_files_read_together_give_each_file_its_rows_alone_when_some_are_damaged():
    """Per-rank files of a fleet read in one call, one cut mid-line as its rank died and one with junk inside: each
    file gets the rows and unread lines it gets alone, and the clean ones are still read together."""
    base = 1 << 32
    texts = ["\n".join(record(rank=r, step=s, ts=f"2026-11-28T00:{s:02d}:0{r}.5Z") for s in range(40)) + "\n"
             for r in range(6)]
    texts[2] += '{"ts": "2026-11-28T00:41:00Z", "rank": 2, "ste'
    texts[4] = texts[4].replace(record(rank=4, step=7, ts="2026-11-28T00:07:04.5Z"), "not json")
    together = step_jsonl.parse_whole([t.encode() for t in texts], base)
    alone = []
    for i, t in enumerate(texts):
        got = step_jsonl.parse_whole([t.encode()], base)
        unread = got.unparsed_lines.to_list() if got.unparsed_lines is not None else []
        alone.append((got.tables["rank_steps"].with_columns(line=pl.col("line") + i * base),
                      [n + i * base for n in unread]))
    assert together.tables["rank_steps"].equals(pl.concat([f for f, _ in alone]))
    assert together.unparsed_lines.to_list() == [n for _, u in alone for n in u] == [2 * base + 41, 4 * base + 8]


def test_step_jsonl_sniff_needs_objects_with_rank_and_step():
    assert step_jsonl.sniff(((record() + "\n") * 3 + '{"ts": 1, "ra').encode(), "x.jsonl")
    assert not step_jsonl.sniff(b'{"loss": 1.0, "step": 3}\n{"loss": 0.9, "step": 4}\n', "x.jsonl")
    assert not step_jsonl.sniff(b"[2026-11-24 06:00:12,002] [INFO] step=10, skipped=0\n", "x.log")


# ---------------------------------------------------------------- across the step collectors

@pytest.mark.parametrize("collector", STEP_COLLECTORS, ids=lambda c: c.NAME)
def test_step_patterns_do_not_match_nccl_info_spam(collector):
    assert not [line for line in NCCL_SPAM if re.search(collector.PATTERN, line)]


@pytest.mark.parametrize("collector", STEP_COLLECTORS, ids=lambda c: c.NAME)
def test_step_patterns_are_rust_regex(collector):
    frame = pl.DataFrame({"text": ["x"]})
    frame.filter(pl.col("text").str.contains(collector.PATTERN))  # raises on look-around or backrefs


@pytest.mark.parametrize(("collector", "sample"), [
    (megatron, "megatron/gpt_restart.log"), (torchtitan, "torchtitan/llama3_8b_restart.log"),
    (deepspeed, "deepspeed/zero2_fp16_overflow.log"), (hf_trainer, "hf_trainer/run_clm_resume.log"),
    (step_jsonl, "step_jsonl/rank_steps.jsonl"),
])
def test_each_step_collector_sniffs_its_own_sample_only(collector, sample):
    head = (SAMPLES / sample).read_bytes()[:65536]
    others = [c for c in (megatron, torchtitan, deepspeed, hf_trainer, step_jsonl) if c is not collector]
    assert collector.sniff(head, sample)
    assert not [c.NAME for c in others if c.sniff(head, sample)]


def test_pdsh_host_prefix_names_the_host_only_when_the_host_is_known():
    line = ds("2026-11-24 06:01:40,120", "[Rank 0] step=10, skipped=0, lr=[3e-05], mom=[(0.9, 0.999)]")
    known = Context(path="t", known_hosts=frozenset({"worker-1"}))
    assert rows(run(deepspeed, "worker-1: " + line, ctx=known), "steps")[0]["host"] == "worker-1"
    assert rows(run(deepspeed, "WARNING: " + line, ctx=known), "steps")[0]["host"] is None


def test_megatron_restart_in_one_log_becomes_two_attempts():
    path = SAMPLES / "megatron" / "gpt_restart.log"
    con = store.connect(":memory:")
    ctx = Context(path=path.name, run="r1", tz="America/Chicago")
    res = ingest_file(con, FileTask(path, path.name, True, "r1", None, None), ctx, all_collectors())
    assert res.status == "ingested"
    attempts.refresh(con)
    got = con.execute("SELECT attempt, first_step, last_step FROM attempts ORDER BY attempt").fetchall()
    assert got == [(1, 100, 400), (2, 300, 400)]



# ---------------------------------------------------------------- what a log says of a NaN without printing one

def test_megatron_leaves_out_a_nan_loss_only_a_whole_line_without_one_counts():
    no_loss = meg_iter(300).replace(" lm loss: 7.123456E+00 |", "")
    parsed = run(megatron, meg_iter(200), no_loss, no_loss[:150])  # the last: cut short as a process dies
    (ev,) = rows(parsed, "events")
    assert ev["line"] == 2 and ev["kind"] == "loss_nan" and json.loads(ev["detail"])["step"] == 300
    assert [r["nan"] for r in rows(parsed, "steps")] == [0, 1]
    assert rows(run(megatron, no_loss), "events") == []  # a log that never printed a loss: nothing left out


def test_megatron_skips_are_divergence_only_at_the_loss_scale_floor():
    def skipped(scale: str) -> str:
        return meg_iter(20).replace("loss scale: 1.0", f"loss scale: {scale}").replace(
            "skipped iterations:   0", "skipped iterations:   4")
    assert rows(run(megatron, skipped("65536.0")), "events") == []  # fp16's scaler search
    (ev,) = rows(run(megatron, skipped("1.0")), "events")
    assert ev["kind"] == "skipped_iterations" and ev["failure_mode"] == "loss_divergence"


def test_megatron_capital_inf_and_lower_case_nan_grad_norm():
    inf = meg_iter(10).replace("7.123456E+00", "INF")
    nan = meg_iter(20).replace("grad norm: 1.234", "grad norm: nan")
    ev = rows(run(megatron, inf, nan), "events")
    assert [(e["kind"], json.loads(e["detail"]).get("why")) for e in ev] == [
        ("loss_nan", None), ("grad_norm_nonfinite", "grad norm NaN")]


def test_nemo2_progress_lines_are_steps():
    line = ("Training epoch 0, iteration {}/99 | lr: 1.5e-05 | global_batch_size: 8 | global_step: {} | "
            "reduced_train_loss: {} | train_step_timing in s: 0.8123 | consumed_samples: 80")
    parsed = run(megatron, line.format(9, 9, "10.37"), "[default0]:" + line.format(10, 10, "nan"))
    assert megatron.sniff(line.format(9, 9, "10.37").encode(), "t")
    got = [(r["step"], r["loss"], r["step_s"], r["lr"], r["nan"]) for r in rows(parsed, "steps")]
    assert got == [(9, 10.37, 0.8123, 1.5e-05, None), (10, None, 0.8123, 1.5e-05, 1)]


def test_megatron_rerun_verdicts_blame_the_gpu_or_confirm_the_nan():
    pre = "Rank 12, node gpu-031, device 4, iteration #30112: "
    parsed = run(megatron, pre + "Possible persistent error!",
                 pre + "Correct result (but possible Application error) (found NaN in local forward loss calculation)!")
    got = [(e["kind"], e["failure_mode"], e["host"], e["rank"]) for e in rows(parsed, "events")]
    assert got == [("rerun_suspect_gpu", "gpu_hw_other", "gpu-031", 12),
                   ("rerun_confirmed", "loss_divergence", "gpu-031", 12)]


def test_deepspeed_scale_stuck_at_its_floor_and_sniffed_from_overflow_lines_alone():
    line = ds("2026-11-24 00:36:54,800", "[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {}, "
                                         "reducing to {}", src="stage2.py:1628:step")
    assert deepspeed.sniff(line.format(65536, 32768).encode(), "t")
    got = [(e["kind"], e["failure_mode"]) for e in rows(run(deepspeed, line.format(2, 1), line.format(1, 1)), "events")]
    assert got == [("grad_overflow", None), ("loss_scale_min", "loss_divergence")]


def test_other_loops_nan_guards_are_read_with_their_time_and_step():
    mmengine = "11/24 12:09:27 - mmengine - INFO - loss become infinite or NaN!"
    mmcv = ("2026-11-24 21:58:31,047 - mmdet - INFO - Iter [10100/316440]\tlr: 3.990e-04, time: 2.125, "
            "loss: nan, grad_norm: nan")
    healthy = "2026-11-24 21:58:31,047 - mmdet - INFO - Iter [10100/316440]\tlr: 3.990e-04, loss_cls: nan, loss: 0.51"
    assert nan_guards.sniff(healthy.encode(), "t")  # an MMCV log: its NaN may come after the head
    parsed = run(nan_guards, mmengine, mmcv, healthy, ctx=Context(path="t", year=2026))
    got = [(e["line"], e["ts"], json.loads(e["detail"] or "{}").get("step")) for e in rows(parsed, "events")]
    assert got == [(1, dt.datetime(2026, 11, 24, 12, 9, 27), None), (2, dt.datetime(2026, 11, 24, 21, 58, 31, 47000),
                                                                     10100)]


def test_nan_in_more_loops_progress_lines_is_loss_divergence():
    settled = "11/07 14:02:10 - mmengine - INFO - Epoch(train) [1][180/820]  lr: 1.9e-04  loss: 2.8114  grad_norm: 3.22"
    bad = {
        "grad_norm_nonfinite": "11/07 14:03:38 - mmengine - INFO - Epoch(train) [1][210/820]  lr: 1.9e-04  loss: 2.5981"
                               "  grad_norm: nan",
        "loss_nan": "Epoch 0: :   4%|▍         | 1199/30000 [1:01:59<24:49:02, reduced_train_loss=nan, global_step=1]",
        "metric_logger": "Epoch: [96]  [1280/1299]  eta: 0:00:09  loss: 6.6012 (6.6089)  grad_norm: 0.4107 (nan)",
        "keras": "612/612 [==============================] - 52s 85ms/step - loss: nan - accuracy: 0.4991",
        "keras3": "612/612 ━━━━━━━━━━━━━━━━━━━━ 52s 85ms/step - accuracy: 0.4991 - loss: nan",
        "tf": "ERROR:tensorflow:Model diverged with loss = NaN.",
    }
    good = [
        # fp16's scaler searching at the start of a run: NaN grad norms before any finite one
        "11/07 13:52:10 - mmengine - INFO - Epoch(train) [1][10/820]  lr: 1.9e-04  loss: 4.8114  grad_norm: nan",
        "Epoch 0: :   4%|▍         | 1198/30000 [1:01:56<24:49:05, reduced_train_loss=2.931, global_step=1197.0]",
        "Epoch: [96]  [1298/1299]  eta: 0:00:00  loss: 6.5987 (6.6071)  loss_scale: 8192.0000 (8695.0311)  "
        "grad_norm: 0.3880 (0.4012)",
        "612/612 [==============================] - 58s 88ms/step - loss: 0.6412 - accuracy: 0.6307",
    ]
    assert all(nan_guards.sniff(line.encode(), "t") for line in [*bad.values(), *good])  # the NaN may come later
    parsed = run(nan_guards, *good, settled, *bad.values())
    got = [(e["line"], e["kind"], e["failure_mode"]) for e in rows(parsed, "events")]
    kinds = ["grad_norm_nonfinite", "loss_nan", "grad_norm_nonfinite", "loss_nan", "loss_nan", "loss_nan"]
    assert got == [(len(good) + 2 + i, k, "loss_divergence") for i, k in enumerate(kinds)]


def test_deepspeed_hysteresis_that_keeps_the_scale_once_is_no_floor():
    line = ds("2026-11-24 00:36:54,800", "[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {}, "
                                         "reducing to {}", src="stage_1_and_2.py:1644:step")
    once = [line.format(65536, 65536), line.format(65536, 32768), line.format(32768, 32768), line.format(32768, 16384)]
    pinned = [line.format(128, 128)] * 3  # a configured floor of 128, overflow after overflow
    got = [(e["kind"], e["failure_mode"]) for e in rows(run(deepspeed, *once, *pinned), "events")]
    assert got == [("grad_overflow", None)] * 6 + [("loss_scale_min", "loss_divergence")]


def test_hand_written_loops_and_fairseq_nan_lines_are_loss_divergence():
    bad = ["2026-03-22 09:32:52 iter 3010: loss nan, time 1019.95ms, mfu 14.12%",
           "Epoch: [21][1391/1930]  Time 0.782 (0.986)  Data 0.004 (0.009)  Loss nan (10.9519)",
           "step: 100 total_loss: nan obj_cls: nan frag_cls: nan",
           "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding.",
           "INFO:tensorflow:loss = nan, step = 1200 (2.310 sec)",
           "Epoch 4:  37%|███▋      | 1108/3000 [14:02<23:58,  1.32it/s, v_num=3, train_loss_step=nan]"]
    good = ["2026-03-22 09:31:56 iter 2990: loss 3.8853, time 1096.65ms, mfu 15.34%",
            "Epoch: [21][1390/1930]  Time 0.754 (0.986)  Data 0.005 (0.009)  Loss 2.5681 (10.9521)",
            "2026-11-24 21:58:31,047 - mmdet - INFO - Iter [10100/316440]\tlr: 3.990e-04, loss_cls: nan, loss: 0.51"]
    assert nan_guards.sniff(good[0].encode(), "t")  # nanoGPT's log: its NaN comes later
    got = [e["line"] for e in rows(run(nan_guards, *good, *bad), "events")]
    assert got == list(range(len(good) + 1, len(good) + len(bad) + 1))


def test_a_loss_that_drops_to_exactly_zero_is_loss_divergence():
    parsed = run(hf_trainer, "{'loss': 6.2645, 'learning_rate': 0.001, 'epoch': 0.02}",
                 "  8%|█▎        | 1999/24128 [1:52:09<20:27:23,  3.33s/it]",
                 "{'loss': 0.0, 'learning_rate': 0.001, 'epoch': 0.04}",
                 "{'loss': 0.0012, 'learning_rate': 0.001, 'epoch': 0.06}",
                 "{'loss': 0.0, 'learning_rate': 0.001, 'epoch': 0.08}",  # converged to 0 through 0.001s: no event
                 "{'loss': 0.2113, 'grad_norm': 0.8, 'learning_rate': 0.001, 'epoch': 0.1}",
                 "{'loss': 0.0, 'grad_norm': 0.71, 'learning_rate': 0.001, 'epoch': 0.12}")  # GRPO-like: it trains
    assert [(e["line"], e["kind"]) for e in rows(parsed, "events")] == [(3, "loss_zero")]


def test_nemo1_progress_bar_gives_step_rows_from_its_last_state():
    bar = "Epoch 0: :   0%|          | {}/200000 [00:1{}<237:57:09, reduced_train_loss={}, global_step={}.000, " \
          "consumed_samples=2048.0, train_step_timing in s=2.901]"
    parsed = run(megatron, bar.format(3, 3, "10.71", 2) + "\r" + bar.format(4, 6, "10.43", 3),
                 bar.format(5, 9, "nan", 4))
    got = [(r["line"], r["step"], r["loss"], r["step_s"]) for r in rows(parsed, "steps")]
    assert got == [(1, 3, 10.43, 2.901), (2, 4, None, 2.901)]
    assert [(e["line"], e["kind"]) for e in rows(parsed, "events")] == [(2, "loss_nan")]


def test_an_mmcv_grad_norm_in_the_trillions_is_loss_divergence():
    line = ("2026-07-31 22:40:50,985 - mmdet - INFO - Epoch [1][{}/1749]\tlr: 1.978e-03, time: 1.807, "
            "loss: {}, grad_norm: {}")
    parsed = run(nan_guards, line.format(50, "59307.8674", "3801898445783.2651"), line.format(100, "0.6327", "35.02"),
                 line.format(150, "0.5311", "871.4"))
    assert [(e["line"], e["kind"]) for e in rows(parsed, "events")] == [(1, "grad_norm_exploded")]
