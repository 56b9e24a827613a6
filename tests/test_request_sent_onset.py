"""A Lustre target that stops answering a data read: the client prints its timeout when the request's deadline
passes, a minute after it sent it, and the line carries that send time (`[sent EPOCH/real EPOCH]`). The job blocked
from the send: that is the root, not the print. A request sent before the job's last step record held nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from clusterlab import Lab
from conftest import nccl_rank_map

T0 = dt.datetime(2026, 12, 3, 9, 0, 0)
HOSTS = ["cn-11", "cn-12", "cn-13"]
LAG_S = 67  # sent -> printed: the request's adaptive deadline, then the ping that finds the target gone


def _epoch(t: dt.datetime) -> int:
    return int(t.replace(tzinfo=dt.UTC).timestamp())


def _timeout(t_sent: dt.datetime, op: int, i: int) -> str:
    s = _epoch(t_sent)
    return (f"Lustre: {3100 + i}:0:(client.c:2295:ptlrpc_expire_one_request()) @@@ Request sent has timed out for "
            f"slow reply: [sent {s}/real {s}]  req@ffff8a01c2d3e{i:03x} x17720431{i:08d}/t0(0) o{op}->"
            f"work-OST0012-osc-ffff8a01b000{i}@10.20.0.12@o2ib:6/4 lens 488/448 e 0 to 1 dl {s + LAG_S - 1} ref 2 "
            "fl Rpc:XQr/0/ffffffff rc 0/-1 job:'train.0'")


def _titan_attempt(root: Path, run: str, steps: int, watchdog_after_s: float | None = None) -> dt.datetime:
    """A 3-host torchtitan attempt of `steps` steps, 20 s each (its collectives giving up `watchdog_after_s` after the
    last, where given); returns the last step record's time."""
    att = root / "runs" / run / "attempt-1"
    att.mkdir(parents=True)
    (root / "runs" / run / "run.toml").write_text("gpus = 24\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    lines, t = [], T0 + dt.timedelta(seconds=40)
    for n in range(1, steps + 1):
        t += dt.timedelta(seconds=20)
        lines.append(f"[titan] {t:%Y-%m-%d %H:%M:%S},{n * 7 % 1000:03d} - root - INFO - step: {n:4d}  loss:  "
                     f"3.{n % 9}210  memory: 61.20GiB(77.41%)  tps: 4,100  tflops: 190.22  mfu: 19.23%")
    if watchdog_after_s is not None:
        w = t + dt.timedelta(seconds=watchdog_after_s)
        lines += [f"[rank{r}]:[E{w:%m%d %H:%M:%S}.{r:06d} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
                  "collective operation timeout: WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                  f"Timeout(ms)=600000) ran for {600900 + r} milliseconds before timing out." for r in range(3)]
    (att / "train.log").write_text("\n".join(lines) + "\n")
    (att / "nccl.log").write_text(nccl_rank_map(HOSTS))
    return t


def _bundle(root: Path, sent_before_last_step: bool) -> tuple[dt.datetime, dt.datetime, dt.datetime]:
    """Returns the last step record's time, the first request's send time and the first printed timeout."""
    last = _titan_attempt(root, "r2", 40)
    first_sent = last + dt.timedelta(seconds=-45 if sent_before_last_step else 6)
    for i, h in enumerate(HOSTS):
        d = root / "nodes" / h
        d.mkdir(parents=True)
        sent = first_sent + dt.timedelta(seconds=2 * i)
        at = sent + dt.timedelta(seconds=LAG_S)
        (d / "dmesg.log").write_text(
            f"{at:%Y-%m-%dT%H:%M:%S},000000+00:00 {_timeout(sent, 3, i)}\n"
            f"{at:%Y-%m-%dT%H:%M:%S},001000+00:00 Lustre: work-OST0012-osc-ffff8a01b000{i}: Connection to "
            "work-OST0012 (at 10.20.0.12@o2ib) was lost; in progress operations using this service will wait for "
            "recovery to complete\n")
    return last, first_sent, first_sent + dt.timedelta(seconds=LAG_S)


def _root(tmp: Path, sent_before_last_step: bool) -> tuple[dict, dt.datetime, dt.datetime, dt.datetime]:
    last, sent, printed = _bundle(tmp / "b", sent_before_last_step)
    with Lab(tmp / "db.duckdb") as lab:
        lab.ingest(tmp / "b")
        inc = lab.incidents("r2").filter(pl.col("kind") == "attempt_end")
    assert inc.height == 1, inc
    return inc.row(0, named=True), last, sent, printed


def test_the_root_is_the_first_unanswered_requests_send_time(tmp_path: Path) -> None:
    r, last, sent, printed = _root(tmp_path, sent_before_last_step=False)
    assert r["failure_mode"] == "filesystem_io"
    assert r["root_ts"] == sent, (r["root_ts"], last, sent, printed)


def test_a_request_sent_before_the_last_step_record_moves_nothing(tmp_path: Path) -> None:
    r, last, sent, printed = _root(tmp_path, sent_before_last_step=True)
    assert r["failure_mode"] == "filesystem_io"
    assert r["root_ts"] > last, (r["root_ts"], last, sent, printed)


def test_a_hung_tasks_wait_dates_an_nfs_stall(tmp_path: Path) -> None:
    """The NFS client says `not responding` only after its retransmissions ran out (minutes); the hung-task watchdog's
    `blocked for more than 120 seconds` says the job's task waited since two minutes before its report at least."""
    root = tmp_path / "b"
    t = _titan_attempt(root, "r3", 30, watchdog_after_s=610)  # the job's collectives give up ten minutes in
    blocked_at = t + dt.timedelta(seconds=191)
    for i, h in enumerate(HOSTS):
        d = root / "nodes" / h
        d.mkdir(parents=True)
        nfs_at = t + dt.timedelta(seconds=185 + i)
        hung = [f"{blocked_at:%Y-%m-%dT%H:%M:%S},000000+00:00 INFO: task python:{4321 + i} blocked for more than "
                "120 seconds."] if i == 1 else []
        (d / "dmesg.log").write_text("\n".join(
            [f"{nfs_at:%Y-%m-%dT%H:%M:%S},000000+00:00 nfs: server nas01 not responding, still trying", *hung]) + "\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(root)
        inc = lab.incidents("r3").filter(pl.col("kind") == "attempt_end")
    (r,) = inc.iter_rows(named=True)
    assert r["failure_mode"] == "filesystem_io"
    assert r["root_ts"] == blocked_at - dt.timedelta(seconds=120), (r["root_ts"], t)
