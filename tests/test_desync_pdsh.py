"""A hang that PyTorch's desync report explains (TORCH_NCCL_DESYNC_DEBUG=1), in a DeepSpeed job launched over pdsh
with NCCL_DEBUG=WARN: the report names the lagging rank, the launcher's `global_rank_mapping` line places it on its
node, and that node is the suspect. Without the map the rank has no node and nobody is named."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from clusterlab import Lab

T0 = dt.datetime(2026, 12, 1, 6, 0, 0)
RUN, STEP_S, STEPS, WATCHDOG_S = "dsrun", 5.0, 80, 600
NODES = ["g-001", "g-002"]


def _ds(t: dt.datetime, node: str, where: str, msg: str, level: str = "INFO") -> str:
    return f"{node}: [{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [{level}] [{where}] {msg}"


def _console(rank_map: bool) -> str:
    out = []
    for i, node in enumerate(NODES):
        t = T0 + dt.timedelta(seconds=2)
        out.append(_ds(t, node, "launch.py:152:main", f"nnodes=2, num_local_procs=4, node_rank={i}"))
        if rank_map:
            out.append(_ds(t, node, "launch.py:163:main", "global_rank_mapping=defaultdict(<class 'list'>, "
                           "{'g-001': [0, 1, 2, 3], 'g-002': [4, 5, 6, 7]})"))
    for n in range(1, STEPS + 1):
        t = T0 + dt.timedelta(seconds=30 + n * STEP_S)
        out.append(_ds(t, "g-001", "logging.py:128:log_dist",
                       f"[Rank 0] step={n}, skipped=0, lr=[0.0001], mom=[[0.9, 0.95]]"))
    hung = T0 + dt.timedelta(seconds=30 + STEPS * STEP_S)
    at = hung + dt.timedelta(seconds=WATCHDOG_S + 5)
    for r in (0, 4):  # only some ranks' timeouts were kept: no flood to single out a rank from
        node = NODES[r // 4]
        out.append(f"{node}: [rank{r}]:[E{at:%m%d %H:%M:%S}.000000000 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog "
                   f"caught collective operation timeout: WorkNCCL(SeqNum=901, OpType=ALLREDUCE, NumelIn=1, "
                   f"NumelOut=1, Timeout(ms)={WATCHDOG_S * 1000}) ran for {WATCHDOG_S * 1000 + 12} milliseconds "
                   "before timing out.")
    out += [f"g-001: [rank0]:[E{at:%m%d %H:%M:%S}.100000000 ProcessGroupNCCL.cpp:1321] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 0] ",
            "g-001: \t - [0] Timeout at collective: ALLREDUCE, #901",
            "g-001: \t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
            "g-001: \t     [5] finished collective #900, but didn't join collective #901 (count from 1)"]
    end = at + dt.timedelta(seconds=3)
    for node in NODES:
        out.append(_ds(end, node, "launch.py:325:sigkill_handler",
                       "['/usr/bin/python3', '-u', 'train.py', '--local_rank=0'] exits with return code = -6", "ERROR"))
    return "\n".join(out) + "\n"


def _end(tmp_path: Path, rank_map: bool) -> dict:
    root = tmp_path / "bundle"
    att = root / "runs" / RUN / "attempt-1"
    att.mkdir(parents=True)
    (root / "inventory.toml").write_text(
        '[providers.p]\nusd_per_gpu_hour = 2.0\n[clusters.c]\nprovider = "p"\ngpu = "H100-SXM"\n'
        'gpus_per_node = 4\nnodes = "g-[001-002]"\n')
    (root / "runs" / RUN / "run.toml").write_text('cluster = "c"\ngpus = 8\n')
    (att / "ds_console.log").write_text(_console(rank_map))
    with Lab(tmp_path / "h.duckdb") as lab:
        lab.ingest(root)
        inc = lab.incidents(RUN).filter(kind="attempt_end")
    assert inc.height == 1, inc
    return inc.row(0, named=True)


def test_the_lagging_rank_of_a_desync_report_is_the_suspect(tmp_path: Path) -> None:
    inc = _end(tmp_path, rank_map=True)
    assert (inc["failure_mode"], inc["host"]) == ("nccl_timeout", "g-002")


def test_without_a_rank_map_the_lagging_rank_names_no_node(tmp_path: Path) -> None:
    inc = _end(tmp_path, rank_map=False)
    assert inc["host"] is None
