"""The NCCL collector: rank map from init lines, network failures from WARN lines, selective PATTERN."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from clusterlab.collectors import nccl
from clusterlab.collectors._base import Context, Parsed


def parse(lines: list[str], **ctx) -> Parsed:
    """Run the collector on these lines as the engine would (only lines PATTERN selects)."""
    schema = {"line": pl.Int64, "text": pl.String}
    frame = pl.DataFrame({"line": range(1, len(lines) + 1), "text": lines}, schema=schema)
    frame = frame.filter(pl.col("text").str.contains(nccl.PATTERN))
    return nccl.parse(frame, Context(path="t.log", **ctx))


def events(p: Parsed) -> list[dict]:
    """The events rows, detail decoded."""
    rows = p.tables["events"].to_dicts()
    for r in rows:
        r["detail"] = json.loads(r["detail"]) if r["detail"] else {}
    return rows


INIT_221 = ("gpu-a02:20512:20553 [1] NCCL INFO ncclCommInitRank comm 0x5610f2a1c3d0 rank 5 nranks 8 cudaDev 1 "
            "nvmlDev 1 busId 2a000 commId 0x7d2c4e9f1a3b6c85 - Init COMPLETE")


def test_ib_completion_error_names_peer() -> None:
    p = parse([
        "gpu-a02:20512:20601 [1] transport/net_ib.cc:1910 NCCL WARN NET/IB : Got completion from peer "
        "10.10.0.1<49382> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.10.0.2 "
        "remoteGids::ffff:10.10.0.1",
    ])
    (e,) = events(p)
    assert (e["kind"], e["failure_mode"], e["severity"], e["peer"], e["host"]) == (
        "ib_completion_error", "network", "error", "10.10.0.1", "gpu-a02")
    assert e["detail"]["status"] == 12 and e["detail"]["status_name"] == "IBV_WC_RETRY_EXC_ERR"
    assert e["detail"]["vendor_err"] == 129 and e["detail"]["req"] == "Send"
    assert e["detail"]["remote_gid"] == "::ffff:10.10.0.1" and e["detail"]["peer_port"] == 49382


@pytest.mark.parametrize("warn, peer, status, status_name", [
    # 2.12: "with error N, opcode N, len N, vendor err N"
    ("NET/IB : Got completion from peer 172.16.4.18<41734> with error 12, opcode 0, len 0, vendor err 129",
     "172.16.4.18", 12, "IBV_WC_RETRY_EXC_ERR"),
    # 2.7: no peer at all
    ("NET/IB : Got completion with error 5, opcode 1, len 0, vendor err 249", None, 5, "IBV_WC_WR_FLUSH_ERR"),
    # 2.30: status and opcode names, hca
    ("NET/IB: Got completion from peer 10.20.1.8<47110> with status=IBV_WC_REM_ACCESS_ERR(10) opcode=IBV_WC_SEND(0) "
     "vendor_err=136  hca mlx5_3", "10.20.1.8", 10, "IBV_WC_REM_ACCESS_ERR"),
])
def test_ib_completion_error_formats_across_versions(warn: str, peer: str | None, status: int,
                                                    status_name: str) -> None:
    (e,) = events(parse([f"dgx-017:5522:5616 [1] transport/net_ib.cc:1198 NCCL WARN {warn}"]))
    assert e["kind"] == "ib_completion_error" and e["failure_mode"] == "network"
    assert e["peer"] == peer and e["detail"]["status"] == status and e["detail"]["status_name"] == status_name


def test_init_lines_give_rank_host_pid_bus_and_comm() -> None:
    p = parse([INIT_221])
    (r,) = p.tables["nccl_ranks"].to_dicts()
    assert r == {"line": 1, "ts": None, "host": "gpu-a02", "pid": 20512, "rank": 5, "nranks": 8, "cuda_dev": 1,
                 "bus_id": "0000:2a:00.0", "comm_id": "0x7d2c4e9f1a3b6c85"}


@pytest.mark.parametrize("msg, rank, nranks, comm_id", [
    # 2.7 - 2.17: no nvmlDev, no commId, COMPLETE only
    ("comm 0x7f2c88002fb0 rank 3 nranks 16 cudaDev 3 busId 4e000 - Init COMPLETE", 3, 16, None),
    # 2.18 - 2.20
    ("comm 0x55d4 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 4e000 commId 0x1a2b3c - Init START", 3, 16, "0x1a2b3c"),
    # 2.30: the rank again in front
    ("[Rank 3] ncclCommInitRankConfig comm 0x55d4 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 4e000 commId 0xabc "
     "- Init START", 3, 16, "0xabc"),
    # 2.26 split: no commId, NCCL's own missing space before "- Init"
    ("ncclCommSplit comm 0x7f21 rank 1 nranks 4 cudaDev 3 nvmlDev 3 busId 4e000 parent 0x55d4 splitCount 1 "
     "color 1440791126 key 1- Init START", 1, 4, None),
])
def test_init_line_formats_across_versions(msg: str, rank: int, nranks: int, comm_id: str | None) -> None:
    p = parse([f"[default3]:dgx-017:5524:5613 [3] NCCL INFO {msg}"])
    (r,) = p.tables["nccl_ranks"].to_dicts()
    assert (r["host"], r["pid"], r["rank"], r["nranks"], r["cuda_dev"], r["bus_id"], r["comm_id"]) == (
        "dgx-017", 5524, rank, nranks, 3, "0000:4e:00.0", comm_id)
    assert p.unparsed == 0


def test_bus_id_keeps_the_pci_domain() -> None:
    line = ("gpu-node2:2985003:2985016 [0] NCCL INFO comm 0x8e01d00 rank 1 nranks 2 cudaDev 0 busId 100000 - "
            "Init COMPLETE")
    assert parse([line]).tables["nccl_ranks"]["bus_id"].to_list() == ["0001:00:00.0"]


@pytest.mark.parametrize("prefix", ["", "3: ", "[rank3]:", "1: [rank3]:", "[default3]:", "[2026-11-25 10:15:01] "])
def test_launcher_prefixes_do_not_hide_the_host(prefix: str) -> None:
    r = parse([prefix + INIT_221]).tables["nccl_ranks"].row(0, named=True)
    assert (r["host"], r["pid"], r["rank"]) == ("gpu-a02", 20512, 5)


def test_info_spam_does_not_match_pattern() -> None:
    spam = [
        "gpu-a01:18301:18342 [0] NCCL INFO Channel 00/16 :    0   1   2   3   4   5   6   7",
        "gpu-a01:18301:18342 [0] NCCL INFO Trees [0] 1/4/-1->0->-1 [1] 1/-1/-1->0->4",
        "gpu-a01:18301:18342 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "gpu-a01:18301:18342 [0] NCCL INFO Connected all rings",
        "gpu-a01:18301:18342 [0] NCCL INFO comm 0x55d4c0a3e2b0 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0",
        "gpu-a01:18301:18342 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.10.0.1<0>",
        "gpu-a01:18301:18342 [0] NCCL INFO [Service thread] Connection closed by localRank 1",
        "gpu-a01:18301:18342 [0] NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels",
        "gpu-a01:18301:18342 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 8 total 1.02 (kernels 0.21)",
    ]
    hits = pl.Series(spam).str.contains(nccl.PATTERN)
    assert not hits.any(), [s for s, h in zip(spam, hits, strict=True) if h]


def test_warn_timestamp_is_local_time_given_as_utc() -> None:
    p = parse(["[2026-11-25 04:53:17] gpu-b07:41212:41355 [2] misc/socket.cc:64 NCCL WARN socketProgress: "
               "Connection closed by remote peer gpu-b08.cluster.internal<51622>"], tz="America/Chicago")
    (e,) = events(p)
    assert e["ts"] == dt.datetime(2026, 11, 25, 10, 53, 17)
    assert (e["kind"], e["failure_mode"], e["peer"]) == ("socket_error", "network", "gpu-b08.cluster.internal")


def test_warn_rank_comes_from_the_same_process_init_line() -> None:
    p = parse([INIT_221, "gpu-a02:20512:20601 [1] misc/ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with "
                         "110 Connection timed out, on dev mlx5_1:1, curr state INIT, next state RTR"])
    (e,) = events(p)
    assert (e["kind"], e["rank"], e["detail"]["call"], e["detail"]["ib_dev"]) == ("ibv_error", 5, "ibv_modify_qp",
                                                                                 "mlx5_1:1")
    assert e["detail"]["error"] == "110 Connection timed out"


def test_last_error_echo_in_a_python_error_is_read_without_nccl_prefix() -> None:
    p = parse(["Last error:", "socketStartConnect: Connect to 10.0.0.12<45321> failed : Software caused connection "
                              "abort"])
    (e,) = events(p)
    assert (e["kind"], e["failure_mode"], e["peer"], e["host"]) == ("socket_error", "network", "10.0.0.12", None)
    assert e["detail"] == {"via": "last_error", "peer_port": 45321, "error": "Software caused connection abort"}


def test_abort_complete_is_a_comm_abort_event() -> None:
    p = parse(["[rank1]:gpu-d01:51820:51997 [1] NCCL INFO comm 0x8e01d00 rank 1 nranks 8 cudaDev 1 busId 1b000 - "
               "Abort COMPLETE"])
    (e,) = events(p)
    assert (e["kind"], e["rank"], e["failure_mode"]) == ("comm_abort", 1, None)
    assert "nccl_ranks" not in p.tables


@pytest.mark.parametrize("warn, kind, mode", [
    ("Cuda failure 'uncorrectable ECC error encountered'", "cuda_failure", "gpu_memory_ecc"),
    ("Cuda failure 2 'out of memory'", "cuda_failure", "cuda_oom"),
    ("NET/IB : mlx5_0:1 async fatal event: local catastrophic error", "ib_async_event", "network"),
    ("[Proxy Service 10] Failed to execute operation Connect from rank 10, retcode 6", "proxy_error", "network"),
    # (NCCL_SOCKET_IFNAME naming no interface the host has: the launch's configuration, the job cannot start)
    ("Bootstrap : no socket interface found", "bootstrap_no_interface", "user_code_error"),
    ("NET/Socket : No usable listening interface found", "nccl_warn", None),
    ("Comm 0x5598e0a7f6b0 is in abort state", "comm_abort", None),
])
def test_warn_kinds_and_failure_modes(warn: str, kind: str, mode: str | None) -> None:
    (e,) = events(parse([f"gpu-b07:41210:41241 [0] proxy.cc:1201 NCCL WARN {warn}"]))
    assert (e["kind"], e["failure_mode"]) == (kind, mode)


def test_facts_give_nccl_version_and_bootstrap_address() -> None:
    p = parse(["gpu-a01:18301:18301 [0] NCCL INFO Bootstrap : Using ib0:10.10.0.1<0>",
               "gpu-a01:18301:18301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"])
    assert p.tables["facts"].select("host", "key", "value").rows() == [
        ("gpu-a01", "nccl_bootstrap_if", "ib0:10.10.0.1"), ("gpu-a01", "nccl_version", "2.21.5+cuda12.4")]


def test_truncated_init_line_counts_as_unparsed() -> None:
    cut = "gpu-a02:20513:20513 [2] NCCL INFO ncclCommInitRank comm 0x55e1 rank 6 nranks 8 cudaDev 2 nvm"
    p = parse([INIT_221, cut])
    assert p.tables["nccl_ranks"].height == 1 and p.unparsed == 1


def test_sniff_recognises_nccl_lines_by_content() -> None:
    assert nccl.sniff(b"noise\n[rank0]:node-1:12:13 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n", "x.txt")
    assert nccl.sniff(b"node-1:12:14 [0] misc/socket.cc:50 NCCL WARN socketProgress: x\n", "x")
    assert not nccl.sniff(b"iteration 10 | loss 2.3\nNCCL is great\n", "nccl.log")


def test_info_lines_with_timestamps_enabled_carry_their_time() -> None:
    # NCCL_DEBUG_TIMESTAMP_LEVELS=ALL with NCCL_DEBUG_TIMESTAMP_FORMAT="[%F %T.%3f] "
    p = parse(["[rank5]:[2026-11-25 10:15:01.250] " + INIT_221], tz="Asia/Tokyo")
    assert p.tables["nccl_ranks"]["ts"].to_list() == [dt.datetime(2026, 11, 25, 1, 15, 1, 250000)]


def test_info_retry_of_an_ibv_call_is_neither_event_nor_unparsed() -> None:
    p = parse(["gpu-b07:41211:41355 [1] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev "
               "mlx5_1:1, curr state INIT, next state RTR, retrying 1/3 after 1000 msec of sleep"])
    assert "events" not in p.tables and p.unparsed == 0


@pytest.mark.parametrize(("line", "mode"), [
    ("[rank0]: Cuda failure 999 'unknown error'", "gpu_hw_other"),
    ("Cuda failure 1 'invalid argument'", "cuda_error"),
    ("Cuda failure 'out of memory'", "cuda_oom"),
])
def test_cuda_failure_echo_after_last_error_names_the_cuda_error(line: str, mode: str) -> None:
    # ncclUnhandledCudaError says only "Call to CUDA function failed."; the "Last error:" line says which one
    lines = ["[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.", "[rank0]: Last error:", line]
    (e,) = events(parse(lines))
    assert (e["kind"], e["failure_mode"], e["detail"]["via"]) == ("cuda_failure", mode, "last_error")


def test_cuda_failure_in_prose_is_no_echo() -> None:
    assert not parse(["the job hit a Cuda failure 'unknown error' yesterday"]).tables.get("events")


def test_unclassified_warn_takes_the_mode_of_the_result_its_call_returns() -> None:
    # NCCLCHECK traces a failed call as "file.cc:LINE -> RES" under its WARN: the ncclResult_t names the class
    p = parse([
        "ws-01:1582:1705 [0] graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:01/../..",
        "ws-01:1582:1705 [0] NCCL INFO graph/xml.cc:469 -> 2",
        "ws-01:1582:1705 [0] NCCL INFO init.cc:581 -> 2",
        "ws-01:1590:1710 [1] enqueue.cc:102 NCCL WARN Kernel launch refused",
        "ws-01:1590:1710 [1] NCCL INFO enqueue.cc:110 -> 1",
        "ws-01:1599:1720 [2] bootstrap.cc:77 NCCL WARN Bootstrap peer gone",
        "ws-01:1599:1720 [2] NCCL INFO bootstrap.cc:80 -> 6",
    ])
    assert [(e["kind"], e["failure_mode"], e["severity"]) for e in events(p)] == [
        ("nccl_warn", "unknown", "error"), ("nccl_warn", "cuda_error", "error"), ("nccl_warn", "network", "error")]
    assert p.unparsed == 0


def test_benign_warn_takes_no_mode_from_another_thread_or_a_later_failure() -> None:
    lines = ["ws-01:1582:1582 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
             "ws-01:1582:1705 [0] NCCL INFO graph/xml.cc:469 -> 2"]  # another thread's trace
    lines += [f"ws-01:1582:1582 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<{i}>" for i in range(8)]
    lines += ["ws-01:1582:1582 [0] NCCL INFO group.cc:418 -> 2"]  # its own thread, long after
    (e,) = events(parse(lines))
    assert (e["kind"], e["failure_mode"], e["severity"]) == ("nccl_warn", None, "warning")


def test_warn_behind_a_foreign_prefix_is_read_as_its_message() -> None:
    line = ("[0604/1024][2026-02-16 22:31:34,422] [misc/socket.cc:586] [gn3064:pid=3942408] NCCL WARN "
            "socketPollConnect: Connect to 10.0.4.2<39953> returned 111(Connection refused)")
    assert nccl.sniff(line.encode() + b"\n", "rank_604.log")
    (e,) = events(parse([line]))
    assert (e["kind"], e["failure_mode"], e["peer"]) == ("socket_error", "network", "10.0.4.2")
