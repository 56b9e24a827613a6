"""Two ways a run's evidence is placed wrongly in time, on a hand-written bundle (a site in Tokyo, UTC+09:00).

1. Files that name no host (the run's combined log, the controller's slurmctld.log) print the cluster's local
   time like the nodes' own logs do: read as UTC they lay nine hours away from the kernel's lines of the same
   moment. Their zone is the run's cluster's (inventory.toml `timezone`).
2. Without per-rank step timings a host whose clock lost NTP is still measurable: its ranks' stamped lines in
   the combined log sit among the other hosts' lines of the same burst, and its kernel reports a shared NFS
   server's outage minutes after every other client does. `timeline.host_clocks` lists it, and only it.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.diagnose import shared_clock, timeline

HOSTS = ["gx-01", "gx-02", "gx-03", "gx-04", "gx-05"]
AHEAD = {"gx-04": 170.0}  # seconds this host's clock runs ahead
T0 = dt.datetime(2027, 3, 12, 5, 0, 0)  # UTC
TOKYO = dt.timedelta(hours=9)


def _local(t: dt.datetime, host: str | None = None) -> dt.datetime:
    return t + TOKYO + dt.timedelta(seconds=AHEAD.get(host or "", 0.0))


def _glog(t: dt.datetime, host: str) -> str:
    d = _local(t, host)
    return f"E{d:%m%d} {d:%H:%M:%S}.{d.microsecond:06d}123"


def _bundle(root: Path) -> None:
    (root / "runs" / "tk-run").mkdir(parents=True)
    (root / "inventory.toml").write_text(
        "[providers.kasumi]\nusd_per_gpu_hour = 3.0\n\n[clusters.tk-1]\n"
        'provider = "kasumi"\ngpu = "H100-SXM"\ngpus_per_node = 2\n'
        'nodes = "gx-[01-05]"\ntimezone = "Asia/Tokyo"\n'
    )
    (root / "runs" / "tk-run" / "run.toml").write_text(
        'cluster = "tk-1"\ngpus = 10\ntokens_per_step = 65536\nflops_per_token = 6.0e10\n'
    )
    lines = []
    for i, h in enumerate(HOSTS):
        for d in range(2):
            r = 2 * i + d
            lines.append(
                f"{h}:{4000 + r}:{4100 + r} [{d}] NCCL INFO ncclCommInitRank comm 0x7f00{r:04x}000 rank {r} "
                f"nranks 10 cudaDev {d} nvmlDev {d} busId {'1a000' if d == 0 else '9c000'} commId "
                f"0x5e1f00aa - Init COMPLETE"
            )
    for n in range(10, 410, 10):
        t = T0 + dt.timedelta(seconds=3.2 * n)
        lines.append(
            f" [{_local(t):%Y-%m-%d %H:%M:%S}] iteration {n:8d}/    9000 | consumed samples: {16 * n:12d} | "
            f"elapsed time per iteration (ms): 3200.0 | learning rate: 1.000000E-04 | global batch size:    16 "
            f"| lm loss: 3.100000E+00 | loss scale: 1.0 | grad norm: 0.400 | number of skipped iterations:   0 "
            f"| number of nan iterations:   0 |"
        )
    hung_at = T0 + dt.timedelta(seconds=3.2 * 400)
    for r in range(1, 10):  # rank 0 (gx-01) hangs; the others time out together
        h = HOSTS[r // 2]
        t = hung_at + dt.timedelta(seconds=600.5 + 0.01 * r)
        lines.append(
            f"[rank{r}]:[{_glog(t, h)} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum=2411, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)=600000) ran for 600100 milliseconds before timing out."
        )
        lines.append(
            f"[rank{r}]:[{_glog(t + dt.timedelta(milliseconds=2), h)} ProcessGroupNCCL.cpp:630] [Rank {r}] "
            f"Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
            f"subsequent GPU operations might run on corrupted/incomplete data."
        )
    (root / "runs" / "tk-run" / "train.log").write_text("\n".join(lines) + "\n")
    outage = T0 + dt.timedelta(seconds=400)
    for i, h in enumerate(HOSTS):
        t1, t2 = outage + dt.timedelta(seconds=2 + i), outage + dt.timedelta(seconds=95 + 7 * i)
        (root / "nodes" / h).mkdir(parents=True)
        (root / "nodes" / h / "kern.log").write_text(
            f"{_local(t1, h):%Y-%m-%dT%H:%M:%S}+09:00 {h} kernel: nfs: server vault-2 not responding, still trying\n"
            f"{_local(t2, h):%Y-%m-%dT%H:%M:%S}+09:00 {h} kernel: nfs: server vault-2 OK\n"
        )
    end = hung_at + dt.timedelta(seconds=640)
    (root / "scheduler").mkdir()
    (root / "scheduler" / "slurmctld.log").write_text(
        f"[{_local(T0 - dt.timedelta(seconds=90)):%Y-%m-%dT%H:%M:%S}.120] sched: Allocate JobId=5150 "
        f"NodeList=gx-[01-05] #CPUs=320 Partition=batch\n"
        f"[{_local(end):%Y-%m-%dT%H:%M:%S}.410] _job_complete: JobId=5150 WEXITSTATUS 1\n"
    )
    _stamp_year(root, T0)


def _stamp_year(root: Path, when: dt.datetime) -> None:
    """Give every file of the bundle an mtime in its year: glog stamps print none (the reader takes the file's)."""
    for f in root.rglob("*"):
        if f.is_file():
            os.utime(f, (when.replace(tzinfo=dt.UTC).timestamp(),) * 2)


def test_hostless_files_print_the_clusters_local_time(tmp_path: Path) -> None:
    _bundle(tmp_path)
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        first = lab.sql("SELECT min(ts) AS ts FROM steps WHERE run = 'tk-run'")["ts"][0]
        alloc = lab.sql("SELECT ts FROM events WHERE source = 'slurmctld' ORDER BY ts LIMIT 1")["ts"][0]
        nfs = lab.sql("SELECT min(ts) AS ts FROM events WHERE source = 'kernel' AND host = 'gx-01'")["ts"][0]
    assert first == T0 + dt.timedelta(seconds=32)  # naive UTC, not Tokyo's wall time
    assert alloc == T0 - dt.timedelta(seconds=89.88)
    assert nfs == T0 + dt.timedelta(seconds=402)  # the kernel's own offset, as before


def test_a_host_off_by_minutes_is_measured_without_per_rank_timings(tmp_path: Path) -> None:
    _bundle(tmp_path)
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        off = shared_clock.shared_offsets(lab.con, "tk-run")
        clocks = timeline.host_clocks(lab.con, "tk-run")
    assert off["host"].to_list() == ["gx-04"]
    assert abs(off["off_us"][0] / 1e6 - 170.0) < 3.0
    assert clocks.height and set(clocks["host"]) == {"gx-04"}
    assert (clocks["corr_us"] - 170_000_000).abs().max() < 3_000_000
    assert clocks.schema["attempt"] == pl.Int32


def _late_xid_bundle(root: Path, rank_fails: bool = True) -> None:
    """One attempt on gy-[1-4] (UTC site): gy-3's GPU falls off the bus, gy-3's clock runs 4 min ahead and no
    moment the hosts share measures it (it prints nothing stamped of its own); its peers' IB errors come first in the
    log with borrowed stamps; the scheduler ends the job a minute after the fall."""
    hosts = ["gy-1", "gy-2", "gy-3", "gy-4"]
    (root / "runs" / "gy-run").mkdir(parents=True)
    (root / "inventory.toml").write_text(
        "[providers.umbra]\nusd_per_gpu_hour = 2.0\n\n[clusters.gy]\n"
        'provider = "umbra"\ngpu = "H100-SXM"\ngpus_per_node = 1\nnodes = "gy-[1-4]"\n'
    )
    (root / "runs" / "gy-run" / "run.toml").write_text(
        'cluster = "gy"\ngpus = 4\ntokens_per_step = 32768\nflops_per_token = 6.0e10\n'
    )
    t0 = dt.datetime(2027, 5, 2, 9, 0, 0)
    fall = t0 + dt.timedelta(seconds=2.5 * 300 + 1.1)
    out = [
        f"{h}:{700 + r}:{800 + r} [0] NCCL INFO ncclCommInitRank comm 0x7e00{r:04x}000 rank {r} nranks 4 cudaDev 0 "
        f"nvmlDev 0 busId 3b000 commId 0x77aa0102 - Init COMPLETE"
        for r, h in enumerate(hosts)
    ]
    for n in range(1, 301):
        t = t0 + dt.timedelta(seconds=2.5 * n)
        out.append(
            f" [{t:%Y-%m-%d %H:%M:%S}] iteration {n:8d}/    5000 | consumed samples: {8 * n:12d} | elapsed time "
            f"per iteration (ms): 2500.0 | learning rate: 2.000000E-04 | global batch size:     8 | lm loss: "
            f"2.500000E+00 | loss scale: 1.0 | grad norm: 0.300 | number of skipped iterations:   0 | number of "
            f"nan iterations:   0 |"
        )
    for r, h in enumerate(hosts):
        if h == "gy-3":
            continue
        out += [
            "",
            f"{h}:{700 + r}:{900 + r} [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
            f"10.9.0.3<40022> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.9.0.{r + 1} "
            f"remoteGids::ffff:10.9.0.3",
        ]
    for r, h in enumerate(hosts):
        if h == "gy-3":
            continue
        t = fall + dt.timedelta(seconds=25 + r)
        out.append(
            f"[rank{r}]:[E{t:%m%d %H:%M:%S}.{t.microsecond:06d}000 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID "
            f"0(default_pg) Rank {r}] Process group watchdog thread terminated with exception: NCCL error: "
            f"remote process exited or there was a network error, NCCL version 2.21.5"
        )
    if rank_fails:  # the rank on the fallen GPU reports it (unstamped: a traceback's last line)
        out += [
            "[rank2]: Traceback (most recent call last):",
            "[rank2]: RuntimeError: CUDA error: unspecified launch failure",
        ]
    (root / "runs" / "gy-run" / "slurm-6100.out").write_text("\n".join(out) + "\n")
    end = fall + dt.timedelta(seconds=60)
    (root / "scheduler").mkdir()
    (root / "scheduler" / "sacct.txt").write_text(
        "JobID|JobName|State|ExitCode|Start|End|NNodes|NodeList\n"
        f"6100|gy-run|FAILED|1:0|{t0 - dt.timedelta(seconds=30):%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|4|gy-[1-4]\n"
    )
    for h in hosts:
        (root / "nodes" / h).mkdir(parents=True)
        lines = [f"[{t0 - dt.timedelta(hours=2):%a %b %e %H:%M:%S %Y}] mlx5_core 0000:3c:00.0 ibp60s0: Link up"]
        if h == "gy-3":
            t = fall + dt.timedelta(seconds=240)
            lines.append(
                f"[{t:%a %b %e %H:%M:%S %Y}] NVRM: Xid (PCI:0000:3b:00): 79, pid=70113, name=python3, GPU has "
                f"fallen off the bus."
            )
        (root / "nodes" / h / "dmesg.txt").write_text("\n".join(lines) + "\n")
    _stamp_year(root, t0)


def test_a_fault_stamped_after_the_job_ended_by_an_unmeasured_clock_is_still_the_cause(tmp_path: Path) -> None:
    _late_xid_bundle(tmp_path)
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        clocks = timeline.host_clocks(lab.con, "gy-run")
        inc = lab.attribute("gy-run").incidents
    assert clocks.filter(pl.col("host") == "gy-3").height == 1
    row = inc.row(0, named=True)
    assert (row["failure_mode"], row["host"]) == ("gpu_fell_off_bus", "gy-3")
    assert abs((row["root_ts"] - dt.datetime(2027, 5, 2, 9, 12, 31, 100000)).total_seconds()) < 5


def test_a_fault_stamped_after_the_job_by_a_host_whose_ranks_did_not_fail_stays_after_it(tmp_path: Path) -> None:
    """The same Xid on a node whose processes reported nothing in the attempt: a later job's fault, not a clock."""
    _late_xid_bundle(tmp_path, rank_fails=False)
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        clocks = timeline.host_clocks(lab.con, "gy-run")
    assert not clocks.filter(pl.col("host") == "gy-3").height


def _undeclared_zone_bundle(root: Path, offsets: list[str]) -> None:
    """A site in UTC-05:00 that never wrote its zone into inventory.toml: its nodes' journals print their offset,
    the job's log and dmesg -T print the same wall clock without one."""
    (root / "runs" / "ny-run").mkdir(parents=True)
    (root / "inventory.toml").write_text(
        '[providers.hudson]\nusd_per_gpu_hour = 2.5\n\n[clusters.ny-1]\nprovider = "hudson"\ngpu = "H100-SXM"\n'
        'gpus_per_node = 8\nnodes = "ny[1-3]"\n'
    )
    (root / "runs" / "ny-run" / "run.toml").write_text('cluster = "ny-1"\ngpus = 24\ntokens_per_step = 65536\n')
    wall = dt.datetime(2026, 1, 20, 7, 0, 0)  # local wall time, UTC 12:00
    (root / "runs" / "ny-run" / "train.log").write_text(
        "".join(
            f" [{wall + dt.timedelta(seconds=4 * n):%Y-%m-%d %H:%M:%S}] iteration {n:8d}/    9000 | consumed samples: "
            f"{64 * n:12d} | elapsed time per iteration (ms): 4000.0 | learning rate: 1.000000E-04 | global batch "
            f"size:    64 | lm loss: 3.000000E+00 | loss scale: 1.0 | grad norm: 0.500 | number of skipped "
            f"iterations:   0 | number of nan iterations:   0 |\n"
            for n in range(1, 40)
        )
    )
    for i, off in enumerate(offsets):
        (root / "nodes" / f"ny{i + 1}").mkdir(parents=True)
        (root / "nodes" / f"ny{i + 1}" / "kernel.journal").write_text(
            f"{wall - dt.timedelta(hours=3):%Y-%m-%dT%H:%M:%S}{off} ny{i + 1} kernel: mlx5_core 0000:1a:00.0 "
            f"ibp26s0: Link up\n"
        )
    _stamp_year(root, wall)


def test_an_undeclared_zone_is_the_offset_every_nodes_journal_prints(tmp_path: Path) -> None:
    _undeclared_zone_bundle(tmp_path, ["-05:00", "-05:00", "-05:00"])
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        first = lab.sql("SELECT min(ts) AS ts FROM steps WHERE run = 'ny-run'")["ts"][0]
    assert first == dt.datetime(2026, 1, 20, 12, 0, 4)


def test_journals_that_disagree_on_the_offset_name_no_zone(tmp_path: Path) -> None:
    _undeclared_zone_bundle(tmp_path, ["-05:00", "+00:00", "-05:00"])
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        first = lab.sql("SELECT min(ts) AS ts FROM steps WHERE run = 'ny-run'")["ts"][0]
    assert first == dt.datetime(2026, 1, 20, 7, 0, 4)  # read as UTC, as before
