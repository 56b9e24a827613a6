"""A save stalled while the filesystem failed: a Lustre target every host of the job reports at once is the shared
service's fault (no host blamed), and so is one they report minutes apart during the stall (each client times out on
its own request); one host's own report names that host."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab
from conftest import nccl_rank_map

T0 = dt.datetime(2026, 12, 1, 8, 0, 0)
HOSTS = ["cn-01", "cn-02", "cn-03", "cn-04"]
LOST = ("Lustre: fs1-OST0007-osc-ffff9a: Connection to fs1-OST0007 (at 10.9.0.7@o2ib) was lost; in progress "
        "operations using this service will wait for recovery to complete")


def _stall_hosts(tmp: Path, reporters: list[str], apart_s: float = 1.0) -> list[tuple]:
    run = tmp / "b" / "runs" / "r1" / "attempt-1"
    run.mkdir(parents=True)
    lines, t = [], T0
    for n in range(1, 61):
        t += dt.timedelta(seconds=10)
        lines.append(f" [{t:%Y-%m-%d %H:%M:%S}] iteration {n:8d}/     100 | consumed samples: {n * 8:12d} | "
                     f"elapsed time per iteration (ms): 10000.0 | lm loss: 2.500000E+00 | loss scale: 1.0 |")
        if n % 10 == 0:
            took = 400.0 if n == 30 else 20.0
            lines += [f"saving checkpoint at iteration {n:7d} to /ck in torch_dist format",
                      f"  successfully saved checkpoint from iteration {n:7d} to /ck [ t 1/1, p 1/1 ]",
                      "(min, max) time across ranks (ms):",
                      f"    save-checkpoint ........................: ({took * 1000 - 5:.2f}, {took * 1000:.2f})"]
            if n == 30:
                stall_at = t
            t += dt.timedelta(seconds=took)
    (run / "train.log").write_text("\n".join(lines) + "\n")
    (run / "nccl.log").write_text(nccl_rank_map(HOSTS))
    (tmp / "b" / "runs" / "r1" / "run.toml").write_text("gpus = 4\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    for i, h in enumerate(reporters):
        d = tmp / "b" / "nodes" / h
        d.mkdir(parents=True)
        at = stall_at + dt.timedelta(seconds=30 + i * apart_s)
        (d / "dmesg.log").write_text(f"{at:%Y-%m-%dT%H:%M:%S},000000+00:00 {LOST}\n")
    with Lab(tmp / "db.duckdb") as lab:
        lab.ingest(tmp / "b")
        inc = lab.incidents("r1")
        return [(r["failure_mode"], r["host"]) for r in inc.filter(inc["kind"] == "checkpoint_stall")
                .iter_rows(named=True)]


def test_every_host_reporting_the_filesystem_blames_no_host(tmp_path: Path) -> None:
    assert _stall_hosts(tmp_path, HOSTS) == [("filesystem_io", None)]


def test_one_host_reporting_it_is_that_host(tmp_path: Path) -> None:
    assert _stall_hosts(tmp_path, ["cn-03"]) == [("filesystem_io", "cn-03")]


def test_hosts_reporting_it_minutes_apart_during_the_stall_blame_no_host(tmp_path: Path) -> None:
    assert _stall_hosts(tmp_path, HOSTS, apart_s=110.0) == [("filesystem_io", None)]
