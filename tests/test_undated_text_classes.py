"""Defect classes found by the undated_text campaign (tests/campaigns/undated_text.py), on hand-made evidence: lines
that carry no time of their own (Megatron's unstamped iteration lines, torch 2.3's unstamped ProcessGroupNCCL lines),
and which host the NCCL completion errors' pairs blame."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from clusterlab import Lab
from clusterlab.diagnose import fabric

T0 = dt.datetime(2026, 10, 5, 14, 0, 0)
STEP_S = 10.0
_ITER = (" iteration {n:8d}/    5000 | consumed samples: {s:12d} | elapsed time per iteration (ms): {ms:.1f} | "
         "learning rate: 1.000000E-04 | global batch size:    64 | lm loss: 2.500000E+00 | loss scale: 1.0 | grad "
         "norm: 0.300 | number of skipped iterations:   0 | number of nan iterations:   0 |")
HOSTS = ["gx-01", "gx-02", "gx-03"]
NR = 2 * len(HOSTS)


def _ip(h: str) -> str:
    return f"10.9.0.{int(h[3:])}"


def _nccl(root: Path, errors: dict[int, list[str]] | None = None) -> None:
    """NCCL_DEBUG=INFO files of the 6 ranks (3 hosts x 2 GPUs), no timestamps: the rank -> host map; `errors`: the
    peers each rank's completion errors name."""
    for i, h in enumerate(HOSTS):
        for d in range(2):
            r, pid = 2 * i + d, 4100 + 10 * i + d
            p = f"{h}:{pid}:{pid + 50} [{d}] NCCL INFO "
            lines = [f"{h}:{pid}:{pid} [{d}] NCCL INFO Bootstrap : Using ib0:{_ip(h)}<0>",
                     p + f"comm 0x55a00000{r}0 rank {r} nranks {NR} cudaDev {d} nvmlDev {d} busId {18 + d}000 commId "
                         f"0x1234abcd - Init START",
                     p + f"comm 0x55a00000{r}0 rank {r} nranks {NR} cudaDev {d} nvmlDev {d} busId {18 + d}000 commId "
                         f"0x1234abcd - Init COMPLETE"]
            for peer in (errors or {}).get(r, []):
                lines += [f"{h}:{pid}:{pid + 60} [{d}] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from "
                          f"peer {_ip(peer)}<52000> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
                          f"fe80::1:{r} remoteGidsfe80::2:{r}",
                          f"{h}:{pid}:{pid + 60} [{d}] NCCL INFO transport/net.cc:1298 -> 6"]
            (root / f"{h}.{pid}.log").write_text("\n".join(lines) + "\n")


def _bundle(root: Path, tail: list[str], after_s: float, errors: dict[int, list[str]] | None = None
            ) -> tuple[Path, dt.datetime]:
    """One launch of a Megatron job whose iteration lines carry no time (10 s a step, a line every 10 steps, to step
    100), then `tail` (unstamped lines) and torchrun's stamped report of the death `after_s` after the last step."""
    run = root / "runs" / "r7" / "attempt-1"
    (run / "nccl").mkdir(parents=True)
    (root / "runs" / "r7" / "run.toml").write_text(f"gpus = {NR}\ntokens_per_step = 16384\nflops_per_token = 1e9\n")
    _nccl(run / "nccl", errors)
    first = T0 + dt.timedelta(seconds=60)
    out = [f"START TIME: {T0:%a %b %d %H:%M:%S} UTC {T0.year}",
           f"[before the start of training step] datetime: {first:%Y-%m-%d %H:%M:%S} "]
    out += [_ITER.format(n=n, s=n * 64, ms=STEP_S * 1000) for n in range(10, 101, 10)]
    last = first + dt.timedelta(seconds=100 * STEP_S)
    death = last + dt.timedelta(seconds=after_s)
    stamp = f"[{death:%Y-%m-%d %H:%M:%S},000]"
    out += tail + [f"{stamp} torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
                   f"local_rank: 1 (pid: 4111) of binary: /usr/bin/python3"]
    (run / "slurm-88.out").write_text("\n".join(out) + "\n")
    return root, last


def _abort(r: int, peer: str) -> list[str]:
    msg = (f"[PG 0 Rank {r}] NCCL watchdog thread terminated with exception: NCCL error: remote process exited or "
           f"there was a network error, NCCL version 2.20.5")
    return [f"[rank{r}]:[E ProcessGroupNCCL.cpp:1316] {msg}",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            "Last error:",
            f"NET/IB : Got completion from peer {_ip(peer)}<51000> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
            "terminate called after throwing an instance of 'c10::DistBackendError'"]


def test_an_unstamped_abort_after_unstamped_steps_lies_after_the_last_step_and_at_the_death(tmp_path: Path) -> None:
    root, last = _bundle(tmp_path / "b", _abort(3, "gx-01"), after_s=40.0)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(root)
        rows = lab.sql("""SELECT kind, ts, ts_lo, ts_hi FROM events WHERE run = 'r7'
                          AND kind IN ('watchdog_terminated', 'nccl_error', 'ib_completion_error')""").to_dicts()
    assert rows
    death = last + dt.timedelta(seconds=40)
    for r in rows:
        # the interval opens at the last iteration line above it (not at the first step's start, 1000 s before) ...
        assert r["ts_lo"] == last, r
        # ... and the abort is printed as the process dies: at the stamped death after it
        assert r["ts"] == death and r["ts_hi"] == death, r


def test_a_rank_missing_from_unstamped_timeouts_is_not_rejected_by_the_borrowed_earlier_stamp(tmp_path: Path) -> None:
    # 600 s timeouts printed (without a stamp) by every rank but rank 3 (gx-02) just before the death
    tail = []
    for r in (0, 1, 2, 4, 5):
        tail += [f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
                 f"WorkNCCL(SeqNum=901, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600210 "
                 f"milliseconds before timing out.",
                 f"[rank{r}]:[E ProcessGroupNCCL.cpp:583] [Rank {r}] To avoid data inconsistency, we are taking the "
                 f"entire process down."]
    root, last = _bundle(tmp_path / "b", tail, after_s=606.0)
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(root)
        inc = lab.attribute("r7").incidents.filter(pl.col("kind") == "attempt_end").to_dicts()
    assert len(inc) == 1
    assert (inc[0]["failure_mode"], inc[0]["host"]) == ("nccl_timeout", "gx-02"), inc[0]


def test_completion_errors_only_in_undated_nccl_files_still_explain_the_end_flagged(tmp_path: Path) -> None:
    # torch says only that a peer exited or the network failed; the NET/IB errors are in the per-rank NCCL files
    # (no timestamps at all): gx-02's rank 3 names gx-01 and gx-03, and gx-01's rank 1 names gx-02
    tail = ["[rank3]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] NCCL watchdog thread terminated with exception: NCCL "
            "error: remote process exited or there was a network error, NCCL version 2.20.5"]
    root, last = _bundle(tmp_path / "b", tail, after_s=20.0, errors={3: ["gx-01", "gx-03"], 1: ["gx-02"]})
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(root)
        inc = lab.attribute("r7").incidents.filter(pl.col("kind") == "attempt_end").to_dicts()
    assert len(inc) == 1
    assert (inc[0]["failure_mode"], inc[0]["host"]) == ("network", "gx-02"), inc[0]
    assert inc[0]["confidence"] < 0.9  # bounded by the attempt's span only: flagged
    # when the failure was seen: the watchdog's network error at its process's death, not the last logged step
    assert inc[0]["root_ts"] == last + dt.timedelta(seconds=20), inc[0]


def _pairs(rows: list[tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame({"run": ["r"] * len(rows), "attempt": [1] * len(rows), "tier": [80] * len(rows),
                         "host": [h for h, _ in rows], "peer_host": [p for _, p in rows]},
                        schema={"run": pl.String, "attempt": pl.Int32, "tier": pl.Int64, "host": pl.String,
                                "peer_host": pl.String})


def test_one_host_at_an_end_of_every_completion_error_is_blamed() -> None:
    # its HCA: it names three peers, and each of them names it
    rows = [("h5", "h3"), ("h3", "h5"), ("h5", "h6"), ("h6", "h5"), ("h8", "h5")]
    assert fabric.endpoints(_pairs(rows)) == {("r", 1): "h5"}


def test_errors_between_pairs_sharing_no_host_are_the_fabric() -> None:
    # a leaf switch flapping under four hosts: each names a different neighbour; ties must not pick one by name
    rows = [("h2", "h1"), ("h3", "h2"), ("h6", "h5"), ("h7", "h6")]
    assert fabric.endpoints(_pairs(rows)) == {("r", 1): fabric.FABRIC}


def test_too_few_pairs_to_tell_are_left_to_the_peer_named_most() -> None:
    assert fabric.endpoints(_pairs([("h2", "h1")])) == {}
    assert fabric.endpoints(_pairs([("h2", "h1"), ("h4", "h3")])) == {}


def test_a_raw_dmesg_is_dated_by_last_reboot_saved_beside_it(tmp_path: Path) -> None:
    # `last -x reboot` prints the running boot to the minute and no year (wtmp's first record's is at the end)
    node = tmp_path / "nodes" / "gx-02"
    node.mkdir(parents=True)
    (node / "dmesg.txt").write_text(
        "[    0.000000] Linux version 5.15.0-126-generic (buildd@lcy02-amd64-026) #136-Ubuntu SMP\n"
        "[ 7261.250000] NVRM: Xid (PCI:0000:2a:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n")
    (node / "last-reboot.txt").write_text(
        "reboot   system boot  5.15.0-126-gener Tue Nov 24 22:34   still running\n\n"
        "wtmp begins Sun Nov  1 00:00:04 2026\n")
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(tmp_path / "nodes")
        (ts,) = lab.con.execute("SELECT ts FROM events WHERE xid = 79").fetchone()
    assert ts == dt.datetime(2026, 11, 24, 22, 34) + dt.timedelta(seconds=7261.25)
