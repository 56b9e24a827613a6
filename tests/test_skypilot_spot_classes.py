"""Defect classes the skypilot_spot campaign found (a SkyPilot managed job of DeepSpeed on spot VMs across AWS and GCP,
tests/campaigns/skypilot_spot.py), each shown on hand-made evidence of its own:

- `aws ec2 describe-instances` in its text and table outputs (a `--query` of a few columns, or the full text answer
  with its `STATEREASON` row) names each instance's host, as its JSON answer does;
- a spot interruption notice is the herald of the reclaim it announces, not the reclaim: EC2 takes the VM two minutes
  after its EventBridge warning, and IMDS's `spot/instance-action` answer (a watcher on the node printing it) names
  the time. Where the reclaim itself is not on record it is made at that time, on the notice's host, so that the job
  stepping on until then does not reject it, nor the peers' network errors after the VM went outrank it;
- a training loop's evaluation pass inside its step clock (announced by its start and its validation loss /
  perplexity line) is the work the job was asked for, not a slowdown of the steps around it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.collectors import aws_ec2, cloud_spot
from clusterlab.collectors._base import Context

T0 = dt.datetime(2026, 11, 20, 6, 0, 0)
RUN = "spotty"


def _frame(lines: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"line": range(1, len(lines) + 1), "text": lines})


def _z(t: dt.datetime) -> str:
    return f"{t:%Y-%m-%dT%H:%M:%SZ}"


def test_describe_instances_text_and_table_outputs_name_each_instances_host() -> None:
    lines = [
        # the full text answer: INSTANCES row (keys in alphabetical order), its STATEREASON row below
        "RESERVATIONS\t611122233344\tr-0f1e2d3c4b5a69788",
        "INSTANCES\t0\tx86_64\t\tFalse\tTrue\txen\tami-0bb1\ti-0c0ffee0c0ffee001\tg6e.48xlarge\tk\t"
        "2026-11-20T05:00:00+00:00\tip-172-31-9-14.eu-north-1.compute.internal\t172.31.9.14\t\t/dev/sda1\tebs",
        "STATEREASON\tServer.SpotInstanceTermination\tServer.SpotInstanceTermination: Spot instance termination",
        # a table of a query's columns, DNS name before the id
        "|  ip-10-44-0-7.ec2.internal  |  i-0d00d00d00d00d002  |  running  |",
    ]
    assert aws_ec2.sniff("\n".join(lines).encode(), "instances.txt")
    facts = aws_ec2.parse(_frame(lines), Context(path="x")).tables["facts"]
    got = sorted((r["key"], r["host"], r["value"]) for r in facts.iter_rows(named=True))
    assert got == [
        ("cloud_instance_id", "ip-10-44-0-7", "i-0d00d00d00d00d002"),
        ("cloud_instance_id", "ip-172-31-9-14", "i-0c0ffee0c0ffee001"),
        ("cloud_state_reason", None, "i-0c0ffee0c0ffee001 Server.SpotInstanceTermination"),
    ], facts


def test_an_imds_instance_action_line_is_a_notice_of_no_mode() -> None:
    lines = [
        'Nov 20 06:40:05 ip-10-44-0-9 spot-poll[812]: instance-action {"action":"stop","time":"2026-11-20T06:42:05Z"}'
    ]
    assert cloud_spot.sniff(lines[0].encode(), "syslog")
    ev = cloud_spot.parse(_frame(lines), Context(path="syslog", host="ip-10-44-0-9", year=2026)).tables["events"]
    assert ev.select("kind", "failure_mode").rows() == [("spot_notice", None)], ev


def _bundle(root: Path, hosts: list[str], stop: dt.datetime, gone: str) -> None:
    """Two ranks per host stepping every 4 s until the VM `gone` is taken at `stop`; the others then print NCCL's
    remote error (the peer is gone) and exit."""
    att = root / "runs" / RUN / "attempt-1"
    (att / "steps").mkdir(parents=True)
    (root / "runs" / RUN / "run.toml").write_text(
        f"gpus = {2 * len(hosts)}\ntokens_per_step = 65536\nflops_per_token = 1e9\n"
    )
    n_steps = int((stop - T0).total_seconds() // 4)
    for i, h in enumerate(hosts):
        for r in (2 * i, 2 * i + 1):
            recs = [
                {
                    "ts": (T0 + dt.timedelta(seconds=4 * (n + 1))).isoformat(),
                    "rank": r,
                    "host": h,
                    "step": n + 1,
                    "step_s": 4.0,
                }
                for n in range(n_steps)
            ]
            (att / "steps" / f"rank{r}.jsonl").write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    lines = []
    for i, h in enumerate(hosts):
        if h == gone:
            continue
        t = stop + dt.timedelta(seconds=5 + i)
        lines.append(
            f"{h}:{4100 + i}:{4200 + i} [0] NCCL WARN NET/IB : Got completion from peer {gone}<51874> with "
            "status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.44.0.1 remoteGids"
            " ::ffff:10.44.0.9"
        )
        lines.append(
            f"[rank{2 * i}]:[E{t:%m%d %H:%M:%S}.000000000 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank "
            f"{2 * i}] Process group watchdog thread terminated with exception: NCCL error: remote process "
            "exited or there was a network error, NCCL version 2.23.4"
        )
    (att / "train.err").write_text("\n".join(lines) + "\n")


def _cause(tmp_path: Path) -> tuple[str | None, str | None, dt.datetime | None]:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        rows = lab.sql("SELECT count(*) FROM events").rows()
        lab.ingest(tmp_path / "b")  # the pass again makes nothing more
        assert lab.sql("SELECT count(*) FROM events").rows() == rows
        inc = lab.attribute(RUN).incidents.filter(pl.col("attempt") == 1)
    assert inc.height == 1, inc
    r = inc.row(0, named=True)
    return r["failure_mode"], r["host"], r["root_ts"]


def test_an_eventbridge_warning_alone_makes_the_reclaim_two_minutes_later_on_its_described_host(tmp_path: Path) -> None:
    hosts = ["ip-10-44-0-1", "ip-10-44-0-5", "ip-10-44-0-9"]
    stop = T0 + dt.timedelta(minutes=30)
    _bundle(tmp_path / "b", hosts, stop, gone="ip-10-44-0-9")
    cloud = tmp_path / "b" / "cloud"
    cloud.mkdir()
    vm = "i-09f8e7d6c5b4a3921"
    (cloud / "ec2.jsonl").write_text(
        json.dumps(
            {
                "version": "0",
                "id": "7c1e",
                "detail-type": "EC2 Spot Instance Interruption Warning",
                "source": "aws.ec2",
                "account": "611122233344",
                "time": _z(stop - dt.timedelta(seconds=120)),
                "region": "eu-north-1",
                "resources": [f"arn:aws:ec2:eu-north-1:611122233344:instance/{vm}"],
                "detail": {"instance-id": vm, "instance-action": "terminate"},
            }
        )
        + "\n"
    )
    ids = {"ip-10-44-0-1": "i-0aaaa1111bbbb2222", "ip-10-44-0-5": "i-0cccc3333dddd4444", "ip-10-44-0-9": vm}
    (cloud / "instances.txt").write_text(
        "".join(f"{i}\t{h}.eu-north-1.compute.internal\tspot\tterminated\n" for h, i in ids.items())
    )
    mode, host, root = _cause(tmp_path)
    assert (mode, host) == ("preemption", "ip-10-44-0-9")
    assert abs((root - stop).total_seconds()) <= 1, root


def test_an_imds_notice_on_the_node_makes_the_reclaim_at_the_time_it_names(tmp_path: Path) -> None:
    hosts = ["gpu-a", "gpu-b", "gpu-c"]
    stop = T0 + dt.timedelta(minutes=25)
    _bundle(tmp_path / "b", hosts, stop, gone="gpu-b")
    node = tmp_path / "b" / "nodes" / "gpu-b"
    node.mkdir(parents=True)
    (node / "imds-poll.log").write_text(
        f"{_z(T0)} polling http://169.254.169.254/latest/meta-data/spot/instance-action\n"
        f"{_z(stop - dt.timedelta(seconds=118))} got "
        f'{{"action": "terminate", "time": "{_z(stop)}"}}\n'
    )
    mode, host, root = _cause(tmp_path)
    assert (mode, host) == ("preemption", "gpu-b")
    assert abs((root - stop).total_seconds()) <= 1, root


def test_an_evaluation_pass_inside_the_step_clock_is_work_not_a_slowdown(tmp_path: Path) -> None:
    att = tmp_path / "b" / "runs" / RUN / "attempt-1"
    att.mkdir(parents=True)
    (att.parent / "run.toml").write_text("gpus = 8\ntokens_per_step = 65536\nflops_per_token = 1e9\n")
    recs, log, t = [], [f"[{T0:%Y-%m-%d %H:%M:%S}] training 8 ranks, eval every 100 steps"], T0
    for n in range(1, 301):
        if n in (101, 201):  # the pass runs between step n-1's end and step n's
            log.append(f"[{t:%Y-%m-%d %H:%M:%S}] Starting evaluation (512 batches)")
            t += dt.timedelta(seconds=90)
            log.append(f"[{t:%Y-%m-%d %H:%M:%S}] validation perplexity = 6.41")
        t += dt.timedelta(seconds=5)
        recs += [{"ts": t.isoformat(), "rank": r, "host": "gpu-e", "step": n, "step_s": 5.0} for r in range(8)]
    (att / "timings.jsonl").write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    (att / "train.log").write_text("\n".join(log) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "b")
        led = {r["category"]: r["gpu_hours"] for r in lab.attribute(RUN).ledger.iter_rows(named=True)}
    # two passes of 90 s on 8 GPUs (0.4 GPU-h) are the job's work, not lost time
    assert led["slowdown"] < 0.01, led
    assert abs(led["productive"] - (300 * 5 + 180) * 8 / 3600) < 0.02, led
