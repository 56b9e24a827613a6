"""The PyTorch distributed collector: watchdog timeouts, torchrun summaries, CUDA/NCCL errors, tracebacks."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.collectors import torch_dist
from clusterlab.collectors._base import Context, Parsed

WATCHDOG = ("[rank3]:[E1125 10:15:01.123456789 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=131072000, NumelOut=131072000, "
            "Timeout(ms)=600000) ran for 600013 milliseconds before timing out.")


def parse(lines: list[str], **ctx) -> Parsed:
    """Run the collector on these lines as the engine would (only lines PATTERN selects)."""
    schema = {"line": pl.Int64, "text": pl.String}
    frame = pl.DataFrame({"line": range(1, len(lines) + 1), "text": lines}, schema=schema)
    frame = frame.filter(pl.col("text").str.contains(torch_dist.PATTERN))
    return torch_dist.parse(frame, Context(path="t.log", **ctx))


def events(p: Parsed) -> list[dict]:
    """The events rows, detail decoded."""
    rows = p.tables["events"].sort("line").to_dicts() if "events" in p.tables else []
    for r in rows:
        r["detail"] = json.loads(r["detail"]) if r["detail"] else {}
    return rows


def summary(root: list[str], others: list[list[str]] | None = None, prefix: str = "") -> list[str]:
    """A ChildFailedError summary as torchrun prints it, with these entries' field lines."""
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60, "train.py FAILED",
             "-" * 60, "Failures:"]
    if not others:
        lines.append("  <NO_OTHER_FAILURES>")
    for i, entry in enumerate(others or [], start=1):
        lines += [f"[{i}]:", *entry]
    lines += ["-" * 60, "Root Cause (first observed failure):", "[0]:", *root, "=" * 60]
    return [prefix + x for x in lines]


def entry(time: str, host: str, rank: str, exitcode: str, traceback: str, error_file: str = "<N/A>") -> list[str]:
    """The field lines of one summary entry."""
    return [f"  time      : {time}", f"  host      : {host}", f"  rank      : {rank}", f"  exitcode  : {exitcode}",
            f"  error_file: {error_file}", f"  traceback : {traceback}"]


def test_watchdog_timeout_gives_rank_and_seqnum() -> None:
    (e,) = events(parse([WATCHDOG], year=2026, tz="Europe/Amsterdam"))
    assert (e["kind"], e["failure_mode"], e["severity"], e["rank"]) == ("watchdog_timeout", "nccl_timeout", "error", 3)
    assert e["ts"] == dt.datetime(2026, 11, 25, 9, 15, 1, 123456)  # local CET, nanoseconds cut to micro
    assert {k: e["detail"][k] for k in ("seq_num", "op_type", "timeout_ms", "ran_for_ms", "numel_in")} == {
        "seq_num": 1234, "op_type": "ALLREDUCE", "timeout_ms": 600000, "ran_for_ms": 600013, "numel_in": 131072000}


def test_c10_log_time_has_an_unpadded_month() -> None:
    (e,) = events(parse(["[rank3]:[E219 08:58:32.606667496 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] "
                         "Exception (either an error or timeout) detected by watchdog at work: 31, last enqueued "
                         "NCCL work: 58, last completed NCCL work: 30."], year=2027))
    assert e["ts"] == dt.datetime(2027, 2, 19, 8, 58, 32, 606667)
    assert e["kind"] == "watchdog_status" and e["rank"] == 3
    assert {k: e["detail"][k] for k in ("pg_id", "seq_num", "last_enqueued", "last_completed")} == {
        "pg_id": 2, "seq_num": 31, "last_enqueued": 58, "last_completed": 30}


def test_old_watchdog_format_without_time_or_seqnum() -> None:
    (e,) = events(parse(["[E ProcessGroupNCCL.cpp:587] [Rank 0] Watchdog caught collective operation timeout: "
                         "WorkNCCL(OpType=BROADCAST, TensorShape=[1048576], Timeout(ms)=1800000) ran for 1800117 "
                         "milliseconds before timing out."]))
    assert (e["kind"], e["rank"], e["ts"]) == ("watchdog_timeout", 0, None)
    assert e["detail"]["op_type"] == "BROADCAST" and "seq_num" not in e["detail"]


def test_rank_of_a_subgroup_is_not_taken_for_the_global_rank() -> None:
    (e,) = events(parse(["[E1125 10:15:01.1 ProcessGroupNCCL.cpp:1785] [PG ID 1 PG GUID 5(tp) Rank 0] failure "
                         "detected by watchdog at work sequence id: 7 PG status: last enqueued work: 9, last "
                         "completed work: 6"]))
    assert e["rank"] is None and e["detail"]["pg_rank"] == 0 and e["detail"]["pg_desc"] == "tp"


def test_watchdog_terminated_takes_the_mode_of_the_nccl_error_and_its_detail_line() -> None:
    p = parse(["[rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 1] Process group watchdog thread terminated with "
               "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5",
               "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
               "prematurely.", "Last error:"])
    (e,) = events(p)
    assert (e["kind"], e["failure_mode"], e["severity"], e["rank"]) == ("watchdog_terminated", "network",
                                                                       "critical", 1)
    assert e["detail"]["nccl_result"] == "ncclRemoteError" and e["detail"]["nccl_version"] == "2.20.5"


def test_what_line_repeating_a_watchdog_message_is_not_a_second_event() -> None:
    p = parse([WATCHDOG, "terminate called after throwing an instance of 'c10::DistBackendError'",
               "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with "
               "exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234)"])
    assert [e["kind"] for e in events(p)] == ["watchdog_timeout", "process_abort"]


def test_heartbeat_monitor_timeout() -> None:
    p = parse(["[rank3]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] Heartbeat monitor timed out! Process will be "
               "terminated after dumping debug info. workMetaList_.size()=2",
               "[rank3]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 3] ProcessGroupNCCL's watchdog got stuck for 600 "
               "seconds without making progress in monitoring enqueued collectives."])
    a, b = events(p)
    assert (a["kind"], a["failure_mode"], a["rank"]) == ("heartbeat_timeout", "nccl_timeout", 3)
    assert b["detail"]["heartbeat_timeout_s"] == 600 and b["severity"] == "critical"


def test_child_failed_root_cause_host_and_exitcode() -> None:
    lines = summary(
        root=entry("2026-11-25_10:15:01", "gpu-c13.cluster.internal", "6 (local_rank: 2)", "-6 (pid: 88133)",
                   "Signal 6 (SIGABRT) received by PID 88133"),
        others=[entry("2026-11-25_10:15:04", "gpu-c13.cluster.internal", "4 (local_rank: 0)", "-15 (pid: 88131)",
                      "Signal 15 (SIGTERM) received by PID 88131")])
    other, root = events(parse(lines, tz="Europe/Amsterdam"))
    assert (root["kind"], root["host"], root["rank"], root["severity"]) == ("child_failed", "gpu-c13", 6, "critical")
    assert root["ts"] == dt.datetime(2026, 11, 25, 9, 15, 1)
    assert root["detail"] == {"root_cause": True, "local_rank": 2, "exitcode": -6, "signal": "SIGABRT", "pid": 88133,
                              "fqdn": "gpu-c13.cluster.internal", "message": "Signal 6 (SIGABRT) received by PID 88133"}
    assert other["detail"]["root_cause"] is False and other["detail"]["signal"] == "SIGTERM" and other["rank"] == 4


def test_child_failed_signal_name_after_the_pid_and_srun_labels() -> None:
    lines = summary(root=entry("2026-02-18_09:00:00", "node-7", "12 (local_rank: 4)", "-11 (pid: 5277) (SIGSEGV)",
                               "<N/A>"), prefix="1: ")
    (e,) = events(parse(lines))
    assert (e["host"], e["rank"], e["detail"]["signal"], e["detail"]["exitcode"]) == ("node-7", 12, "SIGSEGV", -11)
    assert "message" not in e["detail"]


def test_child_failed_traceback_from_error_file_gives_exception_and_mode() -> None:
    lines = summary(root=[
        *entry("2026-11-26_05:02:44", "dgx-017", "0 (local_rank: 0)", "1 (pid: 7702)",
               "Traceback (most recent call last):", error_file="/tmp/torchelastic_k2/attempt_0/0/error.json"),
        '    File "train.py", line 98, in fit',
        "      loss = self.step(batch)",
        "  torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 39.59 GiB total "
        "capacity; 36.80 GiB already allocated; 1.02 GiB free; 37.10 GiB reserved in total by PyTorch)",
        "  "])
    (e,) = events(parse(lines))  # the OOM line inside the summary is not an event of its own
    assert (e["kind"], e["failure_mode"], e["rank"]) == ("child_failed", "cuda_oom", 0)
    assert e["detail"]["exception"] == "torch.cuda.OutOfMemoryError"
    assert e["detail"]["error_file"] == "/tmp/torchelastic_k2/attempt_0/0/error.json"


def test_cuda_oom_sizes_in_gib() -> None:
    p = parse([
        "[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 79.10 GiB of which 1.23 GiB is free. Including non-PyTorch memory, this process has 77.85 GiB memory in "
        "use. Of the allocated memory 75.20 GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but "
        "unallocated.",
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 2; 79.35 GiB total capacity; 76.20 GiB "
        "already allocated; 15.19 MiB free; 77.95 GiB reserved in total by PyTorch)"])
    new, old = events(p)
    assert (new["kind"], new["failure_mode"], new["rank"]) == ("cuda_oom", "cuda_oom", 0)
    assert {k: new["detail"][k] for k in ("gpu", "tried_gib", "total_gib", "free_gib", "process_gib",
                                          "allocated_gib", "reserved_unallocated_gib")} == {
        "gpu": 0, "tried_gib": 2.0, "total_gib": 79.1, "free_gib": 1.23, "process_gib": 77.85,
        "allocated_gib": 75.2, "reserved_unallocated_gib": 1.1}
    assert {k: old["detail"][k] for k in ("gpu", "tried_gib", "total_gib", "free_gib", "allocated_gib",
                                          "reserved_gib")} == {
        "gpu": 2, "tried_gib": 0.0195, "total_gib": 79.35, "free_gib": 0.0148, "allocated_gib": 76.2,
        "reserved_gib": 77.95}


@pytest.mark.parametrize("line, mode", [
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_error"),
    ("  what():  CUDA error: uncorrectable ECC error encountered", "gpu_memory_ecc"),
    ("torch.AcceleratorError: CUDA error: uncorrectable NVLink error detected during the execution", "nvlink_error"),
    ("RuntimeError: CUDA error: unknown error", "gpu_hw_other"),
])
def test_cuda_errors_name_their_failure_mode(line: str, mode: str) -> None:
    (e,) = events(parse([line]))
    assert (e["kind"], e["failure_mode"]) == ("cuda_error", mode)


def test_traceback_final_line_gives_exception_type() -> None:
    p = parse(["[rank6]:Traceback (most recent call last):", '[rank6]:  File "/workspace/train.py", line 97, in x',
               "[rank6]:    acc = correct / total", "[rank6]:          ~~~~~~~~^~~~~~~",
               "[rank6]:ZeroDivisionError: division by zero"])
    (e,) = events(p)
    assert (e["kind"], e["failure_mode"], e["rank"], e["line"]) == ("python_exception", "user_code_error", 6, 5)
    assert e["detail"] == {"exception": "ZeroDivisionError", "message": "division by zero"}


def test_interleaved_rank_tracebacks_pair_by_launcher_prefix() -> None:
    p = parse(["0: Traceback (most recent call last):", "1: Traceback (most recent call last):",
               '0:   File "a.py", line 1, in f', '1:   File "b.py", line 2, in g',
               "1: KeyError: 'labels'", "0: ValueError: bad shape"])
    b, a = events(p)
    assert (b["detail"]["task"], b["detail"]["exception"]) == (1, "KeyError")
    assert (a["detail"]["task"], a["detail"]["exception"]) == (0, "ValueError")


def test_chained_traceback_takes_the_root_cause_mode() -> None:
    p = parse(["Traceback (most recent call last):", '  File "data.py", line 44, in get',
               "OSError: [Errno 116] Stale file handle: '/nfs/datasets/shard-00412.bin'", "",
               "The above exception was the direct cause of the following exception:", "",
               "Traceback (most recent call last):", '  File "data.py", line 51, in get',
               "RuntimeError: cannot read /nfs/datasets/shard-00412.bin"])
    (e,) = events(p)
    assert (e["line"], e["failure_mode"], e["detail"]["exception"], e["detail"]["causes"]) == (
        9, "filesystem_io", "RuntimeError", ["OSError"])


def test_nccl_error_raised_in_python_folds_its_detail_line() -> None:
    p = parse(["Traceback (most recent call last):", '  File "train.py", line 141, in main',
               "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
               "remote process exited or there was a network error, NCCL version 2.19.3",
               "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
               "prematurely.", "Last error:"])
    (e,) = events(p)
    assert (e["kind"], e["failure_mode"]) == ("nccl_error", "network")
    assert {k: e["detail"][k] for k in ("nccl_error", "nccl_result", "nccl_version", "exception")} == {
        "nccl_error": "remote process exited or there was a network error", "nccl_result": "ncclRemoteError",
        "nccl_version": "2.19.3", "exception": "torch.distributed.DistBackendError"}


@pytest.mark.parametrize("line", [
    "E1125 10:15:06.117000 88120 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) "
    "local_rank: 2 (pid: 88133) of binary: /opt/venv/bin/python3",
    "[2026-11-25 10:15:06,117] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
    "local_rank: 2 (pid: 88133) of binary: /opt/venv/bin/python3",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 2 (pid: 88133) of binary: "
    "/opt/venv/bin/python3",
])
def test_elastic_worker_failed_in_each_logging_format(line: str) -> None:
    (e,) = events(parse([line], year=2026))
    assert e["kind"] == "worker_failed"
    assert {k: e["detail"][k] for k in ("exitcode", "local_rank", "pid", "binary")} == {
        "exitcode": -6, "local_rank": 2, "pid": 88133, "binary": "/opt/venv/bin/python3"}
    assert e["ts"] in (None, dt.datetime(2026, 11, 25, 10, 15, 6, 117000))


def test_ft_launchers_header_stamps_the_agents_line_and_names_its_node() -> None:
    """NVRx's ft_launcher configures the root logger (`[asctime] [LEVEL] [ft_launcher<pid>@<hostname>] msg`), so
    torch's elastic agent prints its lines behind that header: the line's own time, and the node that printed it."""
    (e,) = events(parse(["[2026-03-02 04:17:40,512] [ERROR] [ft_launcher20817@dgx-b07] failed (exitcode: 1) "
                         "local_rank: 5 (pid: 331904) of binary: /usr/bin/python3"], year=2026))
    assert e["kind"] == "worker_failed"
    assert e["ts"] == dt.datetime(2026, 3, 2, 4, 17, 40, 512000)
    assert e["host"] == "dgx-b07"
    assert {k: e["detail"][k] for k in ("exitcode", "local_rank", "pid")} == {"exitcode": 1, "local_rank": 5,
                                                                               "pid": 331904}


def test_worker_group_restart_and_agent_signal() -> None:
    p = parse(["[2026-11-25 14:52:43,955] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group "
               "FAILED. 2/3 attempts left; will restart worker group",
               "W0409 07:28:49.530000 1359 torch/distributed/elastic/agent/server/api.py:719] Received 15 death "
               "signal, shutting down workers"])
    restart, sig = events(p)
    assert restart["kind"] == "worker_group_restart" and restart["detail"] == {
        "role": "default", "state": "FAILED", "attempts_left": 2, "max_restarts": 3}
    assert sig["kind"] == "agent_signal" and sig["detail"]["signal"] == "SIGTERM"


def test_keyboard_interrupt_is_a_manual_stop() -> None:
    (e,) = events(parse(["Traceback (most recent call last):", '  File "t.py", line 1, in <module>',
                         "KeyboardInterrupt"]))
    assert (e["failure_mode"], e["detail"]["exception"]) == ("manual_stop", "KeyboardInterrupt")


def test_traceback_without_an_exception_line_counts_as_unparsed() -> None:
    p = parse(["Traceback (most recent call last):", '  File "threading.py", line 1016, in _bootstrap_inner'])
    assert events(p) == [] and p.unparsed == 1


def test_exception_words_outside_a_traceback_are_not_events() -> None:
    p = parse(["wandb: ERROR Error while calling W&B API: ConnectionError: timed out", "ValueError: just a log line"])
    assert events(p) == [] and p.unparsed == 0


def test_nccl_lines_are_left_to_the_nccl_collector() -> None:
    p = parse(["gpu-a02:20512:20601 [1] misc/socket.cc:50 NCCL WARN socketProgress: NCCL error here"])
    assert events(p) == []


def test_launcher_start_is_a_fact_with_its_time() -> None:
    p = parse(["W1125 10:02:11.530000 88120 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment "
               "variable for each process to be 1 in default"], year=2026)
    assert p.tables["facts"].select("ts", "key", "value").rows() == [
        (dt.datetime(2026, 11, 25, 10, 2, 11, 530000), "launcher_start", "torchrun")]


def test_sniff_recognises_torch_output_by_content() -> None:
    assert torch_dist.sniff(b"[rank0]:[W1125 10:02:19.8 ProcessGroupNCCL.cpp:4561] using GPU 0\n", "x.out")
    assert torch_dist.sniff(b"RuntimeError: CUDA error: an illegal memory access was encountered\n", "x")
    # issue 30: a traceback is evidence wherever it appears, a file holding only one included
    assert torch_dist.sniff(b"Traceback (most recent call last):\nValueError: x\n", "torch.log")


def test_watchdog_terminated_by_a_cuda_error_is_a_cuda_error() -> None:
    (e,) = events(parse(["[rank2]:[E1125 10:15:01.1 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) "
                         "Rank 2] Process group watchdog thread terminated with exception: CUDA error: an illegal "
                         "memory access was encountered"]))
    assert (e["kind"], e["failure_mode"], e["rank"]) == ("watchdog_terminated", "cuda_error", 2)
    assert e["detail"]["cuda_error"] == "an illegal memory access was encountered"


DESYNC = ["[rank3]:[E1124 08:22:10.501234567 ProcessGroupNCCL.cpp:1398] Rank 3",
          "\t - [3] Timeout at collective: ALLREDUCE, #41208",
          "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
          "\t   - [5] joined but didn't finish collective #41207 (count from 1)",
          "\t     [0, 1, 2, 4, 6, 7] finished collective #41207, but didn't join collective #41208 (count from 1)",
          "\t - Snapshot of ranks' latest states:", "\t     [5] started ALLREDUCE"]


def test_desync_report_names_the_lagging_rank() -> None:
    ev = events(parse(DESYNC, year=2026))
    assert [(e["kind"], e["failure_mode"]) for e in ev] == [("desync_report", "nccl_timeout")] * 2 + [
        ("desync_lagging", "nccl_timeout")] * 2
    assert (ev[0]["detail"]["desync_op"], ev[0]["detail"]["desync_seq"]) == ("ALLREDUCE", 41208)
    one, many = ev[2], ev[3]
    assert (one["rank"], one["detail"]["lagging_ranks"]) == (5, "5")  # the rank the line names, not the printer
    assert (many["rank"], many["detail"]["lagging_ranks"]) == (None, "0, 1, 2, 4, 6, 7")


def test_desync_never_joined_form() -> None:
    (e,) = events(parse(["\t - To our best knowledge, ranks [6] are the lagging ranks that caused this timeout. "
                         "They never joined any collectives"]))
    assert (e["kind"], e["rank"], e["failure_mode"]) == ("desync_lagging", 6, "nccl_timeout")


def test_summary_host_is_given_to_the_events_of_its_ranks(tmp_path) -> None:
    from clusterlab import Lab

    lines = [WATCHDOG, *summary([*entry("2026-11-25_10:15:02", "gpu-c13.cluster.internal", "3 (local_rank: 3)",
                                        "-6 (pid: 88133)", "Signal 6 (SIGABRT) received by PID 88133")])]
    ev = events(parse(lines, year=2026))
    # the collector leaves the rank's host to the ingest, so that where a batch was cut changes nothing
    assert next(e for e in ev if e["kind"] == "watchdog_timeout")["host"] is None
    log = tmp_path / "runs" / "r" / "attempt-1" / "train.log"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join(lines) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path)
        ev = lab.sql("SELECT kind, host, failure_mode FROM events").rows()
    assert ("watchdog_timeout", "gpu-c13", "nccl_timeout") in ev and ("child_failed", "gpu-c13", "unknown") in ev


def test_summary_of_torch_1_9() -> None:
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 39, "Root Cause:", "[0]:",
             "  time: 2026-11-24_03:41:17", "  rank: 1 (local_rank: 1)", "  exitcode: -6 (pid: 6150)",
             "  error_file: <N/A>", '  msg: "Signal 6 (SIGABRT) received by PID 6150"', "=" * 39,
             "Other Failures:", "  <NO_OTHER_FAILURES>"]
    (e,) = events(parse(lines, year=2026))
    # the collector names no cause: the exit's is inferred after ingest, over the whole file (test below)
    assert (e["kind"], e["rank"], e["severity"], e["failure_mode"]) == ("child_failed", 1, "critical", "unknown")
    assert (e["detail"]["exitcode"], e["detail"]["signal"], e["detail"]["pid"]) == (-6, "SIGABRT", 6150)
    assert e["ts"] == dt.datetime(2026, 11, 24, 3, 41, 17)


def test_unpadded_time_or_rank_lines_elsewhere_are_no_summary_fields() -> None:
    p = parse(["  time: 0.512", "  rank: 3", "  msg: done"])
    assert "events" not in p.tables and p.unparsed == 0


def test_unreadable_summary_entry_is_kept_as_unrecognised() -> None:
    lines = summary(["  time      : ", "  host      : gpu-025", "  rank      : <N/A>", "  exitcode  : ?? (pid: ??)"])
    (e,) = events(parse(lines))
    assert (e["kind"], e["failure_mode"], e["severity"], e["host"]) == ("unrecognised", "unknown", "warning", "gpu-025")


@pytest.mark.parametrize(("line", "mode"), [
    ("WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down workers",
     "manual_stop"),
    ("[2026-11-25 14:55:10,004] torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGHUP death "
     "signal, shutting down workers", "manual_stop"),
    ("W1124 07:28:49.530000 1359 torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, "
     "shutting down workers", "unknown"),
])
def test_agent_death_signal_mode_follows_the_signal(line: str, mode: str) -> None:
    (e,) = events(parse([line], year=2026))
    assert (e["kind"], e["failure_mode"]) == ("agent_signal", mode)


@pytest.mark.parametrize(("line", "kind", "mode"), [
    ("RuntimeError: DataLoader worker (pid 56811) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit.", "dataloader_shm", "host_oom"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     "dataloader_shm", "host_oom"),
    ("RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.", "dataloader_killed", "host_oom"),
    ("RuntimeError: DataLoader worker (pid 23616) is killed by signal: Terminated. ", "dataloader_died", "unknown"),
    ("RuntimeError: DataLoader worker (pid(s) 18360, 18361) exited unexpectedly", "dataloader_died", "unknown"),
])
def test_dataloader_worker_losses(line: str, kind: str, mode: str) -> None:
    (e,) = events(parse([line]))
    assert (e["kind"], e["failure_mode"]) == (kind, mode)


@pytest.mark.parametrize(("line", "kind"), [
    ("[rank1]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [Rank 1] Work WorkNCCL(SeqNum=2530, "
     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) timed out in blocking wait.", "watchdog_timeout"),
    ("[rank5]:[E1124 16:48:25.440271515 ProcessGroupNCCL.cpp:698] [Rank 5] To avoid data inconsistency, we are "
     "taking the entire process down.", "process_teardown"),
    ("[rank0]:[E1128 21:11:49.041 ProcessGroupNCCL.cpp:1870] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump "
     "signal due to a collective timeout from  rank 7 and we will try our best to dump the debug info.", "dump_signal"),
])
def test_timeout_consequences_are_nccl_timeouts(line: str, kind: str) -> None:
    (e,) = events(parse([line], year=2026))
    assert (e["kind"], e["failure_mode"]) == (kind, "nccl_timeout")
    if kind == "dump_signal":
        assert e["detail"]["timeout_from_rank"] == 7


def test_nccl_system_error_is_a_network_failure() -> None:
    # ncclSystemError is a failed socket call to a peer (issue 30: the broken-network node of a Slurm job)
    (e,) = events(parse(["RuntimeError: NCCL error in: /opt/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, "
                         "unhandled system error, NCCL version 2.10.3"]))
    assert (e["kind"], e["failure_mode"]) == ("nccl_error", "network")


@pytest.mark.parametrize("head", [
    b"[Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2211) ran for 1800390 milliseconds",
    b"E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed",
    b"RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.",
    b"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
])
def test_sniff_knows_lines_without_processgroupnccl(head: bytes) -> None:
    assert torch_dist.sniff(head, "x.log")


def test_a_gloo_receive_that_timed_out_is_a_collective_timeout_not_the_users_code() -> None:
    # what the rank waiting on a hung peer raises under gloo: a symptom of the peer, never the cause
    lines = ["[rank0]: Traceback (most recent call last):",
             '[rank0]:   File "/work/examples/train_tiny_gpt.py", line 214, in train',
             "[rank0]:     dist.all_reduce(loss_t)",
             "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
             "1800000ms for recv operation to complete"]
    (e,) = events(parse(lines, year=2026, tz="UTC"))
    assert (e["kind"], e["failure_mode"], e["rank"]) == ("watchdog_timeout", "nccl_timeout", 0)


SUMMARY_1_9 = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 39, "Root Cause:", "[0]:",
               "  time: 2026-11-24_03:41:17", "  rank: 1 (local_rank: 1)", "  exitcode: {code} (pid: 6150)",
               "  error_file: <N/A>", '  msg: "Signal received by PID 6150"', "=" * 39, "Other Failures:",
               "  <NO_OTHER_FAILURES>"]


@pytest.mark.parametrize(("code", "before", "mode"), [
    (-6, [], "nccl_timeout"),  # SIGABRT, nothing else in the file: the watchdog's abort (issue 30)
    (-9, [], "host_oom"),
    (1, [], "user_code_error"),
    (-6, ["RuntimeError: CUDA error: an illegal memory access was encountered"], "unknown"),  # the file names it
    (-9, ["[2026-11-24 03:41:10,001] torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGTERM "
          "death signal, shutting down workers"], "unknown"),  # stopped from outside
], ids=["abort", "kill", "exit-1", "a-cause-elsewhere-in-the-file", "the-agent-was-stopped"])
def test_an_exit_nothing_in_its_file_explains_takes_the_mode_the_exit_implies(tmp_path: Path, code: int,
                                                                                before: list[str], mode: str) -> None:
    log = tmp_path / "excerpt.log"
    log.write_text("\n".join([*before, *(x.format(code=code) for x in SUMMARY_1_9)]) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(log)
        lab.ingest(log)  # again: a no-op, and the pass leaves the inferred mode as it was
        got = lab.sql("SELECT failure_mode FROM events WHERE kind = 'child_failed'")["failure_mode"].to_list()
    assert got == [mode]
