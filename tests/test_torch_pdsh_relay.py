"""Lines the DeepSpeed launcher relays through pdsh (`<node>: ` before the node's own prefix): the torch collector
reads the node, the line's own time (DeepSpeed's `[ts] [LEVEL] [file:line:func]` header, c10's glog header behind
`[rankN]:`) and its kind; a `Word: ` that names no known node stays part of the message."""

from __future__ import annotations

import datetime as dt

import polars as pl

from clusterlab.collectors import torch_dist
from clusterlab.collectors._base import Context

LINES = [
    "w-07: [2026-12-01 08:25:20,508] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 4242",
    "w-07: [2026-12-01 08:25:20,538] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', '-u', "
    "'train.py', '--local_rank=3'] exits with return code = -9",
    "w-02: [rank9]:[E1201 08:25:11.728101015 ProcessGroupNCCL.cpp:616] [Rank 9] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
    "600019 milliseconds before timing out.",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
]


def _events(known: frozenset[str]) -> pl.DataFrame:
    frame = pl.DataFrame({"line": range(1, len(LINES) + 1), "text": LINES},
                         schema={"line": pl.Int64, "text": pl.String})
    parsed = torch_dist.parse(frame.filter(pl.col("text").str.contains(torch_dist.PATTERN)),
                              Context(path="ds_console.log", known_hosts=known))
    return parsed.tables["events"].sort("line")


def test_relayed_lines_keep_their_node_time_and_kind() -> None:
    ev = _events(frozenset({"w-02", "w-07"}))
    exit_ = ev.filter(pl.col("kind") == "launcher_exit").row(0, named=True)
    assert exit_["host"] == "w-07"
    assert exit_["ts"] == dt.datetime(2026, 12, 1, 8, 25, 20, 538000)
    wd = ev.filter(pl.col("line") == 3).row(0, named=True)
    assert wd["host"] == "w-02" and wd["rank"] == 9
    assert wd["ts"] == dt.datetime(2026, 12, 1, 8, 25, 11, 728101)
    cuda = ev.filter(pl.col("line") == 4).row(0, named=True)
    assert cuda["host"] is None and cuda["failure_mode"] is not None


def test_an_unknown_word_is_no_relay() -> None:
    ev = _events(frozenset())
    assert ev["host"].is_null().all()


def test_the_deepspeed_launch_begins_at_its_runner_command_and_ends_at_its_clean_exits() -> None:
    lines = ["[2026-12-01 06:00:02,200] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w w-02,w-07 export "
             "NCCL_DEBUG=WARN; cd /work; /usr/bin/python3 -u -m deepspeed.launcher.launch --node_rank=%n train.py",
             "w-07: [2026-12-01 09:00:01,500] [INFO] [launch.py:351:main] Process 4242 exits successfully.",
             "w-07: [2026-12-01 09:00:01,600] [INFO] [launch.py:351:main] Process 4243 is still running."]
    frame = pl.DataFrame({"line": [1, 2, 3], "text": lines}, schema={"line": pl.Int64, "text": pl.String})
    facts = torch_dist.parse(frame.filter(pl.col("text").str.contains(torch_dist.PATTERN)),
                             Context(path="c.log", known_hosts=frozenset({"w-07"}))).tables["facts"].sort("line")
    assert facts.select("key", "value", "ts").rows() == [
        ("launcher_start", "deepspeed", dt.datetime(2026, 12, 1, 6, 0, 2, 200000)),
        ("launcher_end", "deepspeed", dt.datetime(2026, 12, 1, 9, 0, 1, 500000))]


def test_pdsh_answering_a_ctrl_c_is_a_stop_by_hand() -> None:
    lines = ["pdsh@w-02: interrupt (one more within 1 sec to abort)",
             "pdsh@w-02:  (^Z within 1 sec to cancel pending threads)",
             "pdsh@w-02: w-07: ssh exited with exit code 255"]
    frame = pl.DataFrame({"line": [1, 2, 3], "text": lines}, schema={"line": pl.Int64, "text": pl.String})
    ev = torch_dist.parse(frame.filter(pl.col("text").str.contains(torch_dist.PATTERN)),
                          Context(path="c.log", known_hosts=frozenset({"w-02", "w-07"}))).tables["events"]
    assert ev.select("line", "kind", "failure_mode", "host").rows() == [(1, "launcher_interrupt", "manual_stop", None)]
