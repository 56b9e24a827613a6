"""Defect classes the hf_cloud_spot campaign found (HF Trainer + DeepSpeed under accelerate on SkyPilot spot VMs),
each shown on hand-made evidence of its own:

- a save two sources tell (the Trainer's `Saving model checkpoint to`, DeepSpeed's engine timing the same save) keeps
  the duration one of them measured;
- the evaluation loop's own tqdm bar (`16/16 [01:18<00:00]`) is no training step;
- SkyPilot's per-node prefix (`(worker2, rank=2, pid=3717, ip=10.1.2.3) `) hides neither torch's `[rankN]:` nor its
  glog stamps;
- an exception known by its module path rather than an `Error` suffix (`pyarrow.lib.ArrowInvalid: ...`) ends its
  traceback as the user's code."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.collectors import hf_trainer, torch_dist
from clusterlab.collectors._base import Context

T0 = dt.datetime(2026, 12, 3, 9, 0, 0)


def _frame(lines: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"line": range(1, len(lines) + 1), "text": lines})


def _hms(t: dt.datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}"


def _bar(n: int, total: int, elapsed: float) -> str:
    m, s = divmod(int(elapsed), 60)
    return f"\r{100 * n // total:3d}%|{'#' * (10 * n // total):10s}| {n}/{total} [{m:02d}:{s:02d}<00:10,  5.00s/it]"


def test_a_save_told_by_the_trainer_and_by_deepspeed_keeps_deepspeeds_duration(tmp_path: Path) -> None:
    run = tmp_path / "b" / "runs" / "ft" / "attempt-1"
    run.mkdir(parents=True)
    lines = [f"[INFO|trainer.py:2314] {_hms(T0)} >> ***** Running training *****",
             f"[INFO|trainer.py:2322] {_hms(T0)} >>   Total optimization steps = 40"]
    t = 0.0
    for n in range(1, 41):
        t += 5.0
        lines.append(_bar(n, 40, t))
        if n % 10 == 0:
            lines.append(f"{{'loss': 2.1, 'grad_norm': 0.4, 'learning_rate': 1e-05, 'epoch': {n / 40}}}")
        if n == 20:
            at = T0 + dt.timedelta(seconds=t + 0.2)
            lines += [f"[INFO|trainer.py:3801] {_hms(at)} >> Saving model checkpoint to /ck/checkpoint-20",
                      f"[{_hms(at + dt.timedelta(seconds=0.2))}] [INFO] [logging.py:128:log_dist] [Rank 0] [Torch] "
                      "Checkpoint global_step20 is about to be saved!",
                      f"[{_hms(at + dt.timedelta(seconds=60))}] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] "
                      "Checkpoint global_step20 is ready now!"]
            t += 60.0
    (run / "train.log").write_text("\n".join(lines) + "\n")
    (run.parent / "run.toml").write_text("gpus = 8\ntokens_per_step = 65536\nflops_per_token = 1e9\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        led = {r["category"]: r["gpu_hours"] for r in lab.attribute("ft").ledger.iter_rows(named=True)}
    # 60 s of 8 GPUs is the save's; none of it a slowdown
    assert abs(led["checkpoint"] - 60 * 8 / 3600) < 0.01, led
    assert led["slowdown"] < 0.005, led


def test_the_evaluation_loops_bar_is_no_training_step() -> None:
    lines = [f"[INFO|trainer.py:2314] {_hms(T0)} >> ***** Running training *****",
             f"[INFO|trainer.py:2322] {_hms(T0)} >>   Total optimization steps = 9,000",
             _bar(3749, 9000, 1180.0) + _bar(3750, 9000, 1185.0),
             f"[INFO|trainer.py:4117] {_hms(T0 + dt.timedelta(seconds=1185.1))} >> ",
             "***** Running Evaluation *****",
             "".join(_bar(i, 16, 4.9 * i) for i in range(17)),
             "{'eval_loss': 1.93, 'eval_runtime': 78.4, 'eval_samples_per_second': 104.5, 'epoch': 0.42}",
             _bar(3751, 9000, 1271.0)]
    steps = hf_trainer.parse(_frame(lines), Context(path="x")).tables["steps"]
    assert sorted(steps["step"].to_list()) == [3750, 3751], steps
    # the training bar's clock runs on across the evaluation: step 3751 ends 1271 s after the banner
    last = steps.filter(pl.col("step") == 3751)["ts"].item()
    assert last == T0 + dt.timedelta(seconds=1271), last


def test_skypilots_node_prefix_keeps_torchs_rank_and_stamp() -> None:
    lines = ["(worker2, rank=2, pid=3717, ip=10.1.2.3) W1203 09:00:01.790761 3539 torch/distributed/run.py:793] "
             "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default",
             "(worker2, rank=2, pid=3717, ip=10.1.2.3) [rank21]: Traceback (most recent call last):",
             "(worker2, rank=2, pid=3717, ip=10.1.2.3) [rank21]:   File \"/x/dataloader.py\", line 1251, in _try_get",
             "(worker2, rank=2, pid=3717, ip=10.1.2.3) [rank21]: RuntimeError: DataLoader worker (pid 5123) is killed "
             "by signal: Killed. "]
    ev = torch_dist.parse(_frame(lines), Context(path="x", year=2026)).tables["events"]
    killed = ev.filter(pl.col("kind") == "dataloader_killed")
    assert killed.height == 1 and killed["rank"].item() == 21, ev
    assert killed["failure_mode"].item() == "host_oom", killed


def test_an_exception_named_by_its_module_path_is_the_users_code() -> None:
    lines = ["[rank13]: Traceback (most recent call last):",
             "[rank13]:   File \"/x/datasets/packaged_modules/parquet/parquet.py\", line 90, in _generate_tables",
             "[rank13]:     parquet_fragment = ds.ParquetFileFormat().make_fragment(f)",
             "[rank13]: pyarrow.lib.ArrowInvalid: Could not open Parquet input source '<Buffer>': Parquet magic bytes "
             "not found in footer. Either the file is corrupted or this is not a parquet file."]
    ev = torch_dist.parse(_frame(lines), Context(path="x", year=2026)).tables["events"]
    assert ev.height >= 1, ev
    assert set(ev["failure_mode"].drop_nulls()) == {"user_code_error"}, ev
    assert ev.filter(pl.col("failure_mode") == "user_code_error")["rank"].to_list() == [13], ev


def test_a_loggers_dotted_name_is_no_exception() -> None:
    lines = ["torch.distributed.run: [WARNING] master_addr is only used for static rdzv_backend",
             "[rank0]: Traceback (most recent call last):",
             "[rank0]: ValueError: bad sample"]
    ev = torch_dist.parse(_frame(lines), Context(path="x", year=2026)).tables["events"]
    assert "WARNING" not in " ".join(ev["text"].to_list()), ev


def _ec2_event(kind: str, at: str, iid: str, **detail: str) -> str:
    extra = "".join(f',"{k.replace("_", "-")}":"{v}"' for k, v in detail.items())
    return (f'{{"version":"0","id":"0b5e","detail-type":"{kind}","source":"aws.ec2","account":"1","time":"{at}",'
            f'"region":"ap-south-1","resources":[],"detail":{{"instance-id":"{iid}"{extra}}}}}')


def _instance(iid: str, dns: str, reason: str | None) -> str:
    why = (f',\n      "StateReason": {{\n        "Code": "{reason}",\n        "Message": "{reason}: x"\n      }}'
           if reason else "")
    return (f'    {{\n      "InstanceId": "{iid}",\n      "PrivateDnsName": "{dns}.ap-south-1.compute.internal",\n'
            f'      "State": {{\n        "Code": 48,\n        "Name": "terminated"\n      }}{why}\n    }}')


def test_a_cloud_reclaim_names_its_vm_and_an_ordinary_teardown_stays_information(tmp_path: Path) -> None:
    cloud = tmp_path / "b" / "cloud"
    cloud.mkdir(parents=True)
    reclaimed, torn = "i-0aa11bb22cc33dd44", "i-0ee55ff66aa77bb88"
    (cloud / "events.jsonl").write_text("\n".join([
        _ec2_event("EC2 Instance State-change Notification", "2026-12-02T11:00:05Z", reclaimed, state="shutting-down"),
        _ec2_event("EC2 Instance State-change Notification", "2026-12-02T11:02:40Z", torn, state="shutting-down"),
    ]) + "\n")
    (cloud / "instances.json").write_text('{\n  "Reservations": [{"Instances": [\n' + ",\n".join([
        _instance(reclaimed, "ip-10-7-1-20", "Server.SpotInstanceTermination"),
        _instance(torn, "ip-10-7-1-21", "Client.UserInitiatedShutdown")]) + "\n  ]}]\n}\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        ev = lab.sql("SELECT host, kind, failure_mode FROM events WHERE source = 'aws_ec2' ORDER BY ts")
        lab.ingest(tmp_path / "b")  # the pass again changes nothing
        again = lab.sql("SELECT host, kind, failure_mode FROM events WHERE source = 'aws_ec2' ORDER BY ts")
    assert ev.rows() == [("ip-10-7-1-20", "spot_reclaim", "preemption"), ("ip-10-7-1-21", "instance_state", None)]
    assert again.rows() == ev.rows()


def test_a_save_every_rank_commits_ends_at_the_latest_commit_not_the_last_line() -> None:
    from clusterlab.collectors import deepspeed

    def ds(at: str, msg: str) -> str:
        return f"[2026-12-03 {at}] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint {msg}"
    lines = [ds("10:00:00,000", "global_step400 is about to be saved!"),
             ds("10:00:49,100", "global_step400 is ready now!"),
             ds("10:00:50,000", "global_step400 is ready now!"),
             # a node whose clock runs 50 s behind commits last: its line comes last with an early stamp
             ds("10:00:00,900", "global_step400 is ready now!")]
    saves = deepspeed.parse(_frame(lines), Context(path="x")).tables["checkpoints"]
    assert saves["duration_s"].to_list() == [50.0], saves


def test_the_final_save_model_into_the_output_folder_ends_the_completed_attempt(tmp_path: Path) -> None:
    run = tmp_path / "b" / "runs" / "ft" / "attempt-1"
    run.mkdir(parents=True)
    lines = [f"[INFO|trainer.py:2314] {_hms(T0)} >> ***** Running training *****",
             f"[INFO|trainer.py:2322] {_hms(T0)} >>   Total optimization steps = 40",
             # a tokenizer written at start-up into the output folder is no save
             f"[INFO|tokenization_utils_base.py:2646] {_hms(T0)} >> tokenizer config file saved in /out/tc.json"]
    lines += [_bar(n, 40, 5.0 * n) for n in range(1, 41)]
    end = T0 + dt.timedelta(seconds=200)
    lines += ["Training completed. Do not forget to share your model on huggingface.co/models =)",
              f"[INFO|trainer.py:3801] {_hms(end + dt.timedelta(seconds=1))} >> Saving model checkpoint to /out",
              f"[INFO|modeling_utils.py:3042] {_hms(end + dt.timedelta(seconds=91))} >> Model weights saved in "
              "/out/model.safetensors.index.json"]
    (run / "train.log").write_text("\n".join(lines) + "\n")
    (run.parent / "run.toml").write_text("gpus = 8\ntokens_per_step = 65536\nflops_per_token = 1e9\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        saves = lab.sql("SELECT step, duration_s FROM checkpoints WHERE action = 'save'")
        att = lab.attempts("ft")
    assert saves.rows() == [(None, 90.0)], saves
    assert att["end_ts"].item() == end + dt.timedelta(seconds=91), att


def test_the_interruption_notice_heralds_the_reclaim_it_is_not_the_root(tmp_path: Path) -> None:
    cloud = tmp_path / "b" / "cloud"
    cloud.mkdir(parents=True)
    vm = "i-0123456789abcdef0"
    (cloud / "events.jsonl").write_text("\n".join([
        _ec2_event("EC2 Spot Instance Interruption Warning", "2026-12-02T11:00:00Z", vm, instance_action="terminate"),
        _ec2_event("EC2 Instance State-change Notification", "2026-12-02T11:02:01Z", vm, state="shutting-down"),
    ]) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        ev = lab.sql("SELECT kind, failure_mode FROM events WHERE source = 'aws_ec2' ORDER BY ts")
    # no description of the instance is needed: its own notice says the cloud took it back
    assert ev.rows() == [("spot_interruption_warning", None), ("spot_reclaim", "preemption")]


def test_a_file_the_trainer_writes_outside_a_save_is_understood_not_unread() -> None:
    lines = [f"[INFO|trainer.py:2322] {_hms(T0)} >>   Total optimization steps = 40",
             f"[INFO|tokenization_utils_base.py:2646] {_hms(T0)} >> tokenizer config file saved in /out/tc.json"]
    got = hf_trainer.parse(_frame(lines), Context(path="x"))
    assert got.unparsed == 0, got
    assert got.tables.get("checkpoints", pl.DataFrame()).height == 0, got
