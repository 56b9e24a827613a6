"""An ft_launcher run whose workers print a harmless traceback at start-up (issue 29): the postmortem blames the
fault that ended the cycle, never the traceback the job stepped past.

The console is one `srun ft_launcher ...` job on two nodes, in the formats the collectors read: NVRx 0.6's
launcher lines (`launcher.py:655 [default] starting workers ...`, `Worker group FAILED. 3/3 attempts left; will
restart worker group`, `Joining cluster restart`, torch elastic's `worker group successfully finished`), the
workers' own output (a `ModuleNotFoundError` traceback a library prints and catches while importing, Megatron's
iteration lines), NCCL's IB completion errors and the watchdog's abort on the ranks whose peer's link went down.
The cause is in the node's kernel log (`dmesg --time-format iso`): mlx5's `Link DOWN`, `Link ACTIVE` 45 s later,
after which the in-job restart trains on. The workers of the restarted cycle print the same traceback again.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab

T0 = dt.datetime(2026, 11, 24, 10, 0, 0)
DOWN = T0 + dt.timedelta(minutes=10, seconds=3)  # gpu-018's IB port goes down: the cause
ERRORS = DOWN + dt.timedelta(seconds=31)  # the peers' queue pairs give up (NCCL_IB_TIMEOUT's retries)
RESTART = ERRORS + dt.timedelta(seconds=2)  # the launcher restarts its worker group in the job
RESUMED = RESTART + dt.timedelta(minutes=2)  # the restarted cycle's first interval begins
HOSTS = {"gpu-017": "10.40.1.17", "gpu-018": "10.40.1.18"}
GPN = 2  # ranks 0-1 on gpu-017, 2-3 on gpu-018


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def _launcher(t: dt.datetime, host: str, msg: str, src: str = "launcher.py:636", level: str = "INFO") -> str:
    infra = list(HOSTS).index(host)
    return f"{_stamp(t)} [{level}] [{host}] [workload:?(?) infra:{infra}({infra})] {src} {msg}"


def _iters(first: int, last: int, start: dt.datetime, stamped: bool) -> list[str]:
    """Megatron iteration lines every 10 iterations of 1 s each, the first ending 10 s after `start` (Megatron-LM
    stamps each; Megatron-DeepSpeed's carry no time: only the launcher's lines date the console then)."""
    stamp = "[{:%Y-%m-%d %H:%M:%S.%f}]" if stamped else ""
    return [stamp.format(start + dt.timedelta(seconds=10 * n)) + f" iteration {it:>8}/   20000 | consumed "
            f"samples: {it * 64:>12} | elapsed time per iteration (ms): 1000.0 | learning rate: 2.000000E-04 | global "
            "batch size:    64 | lm loss: 2.412201E+00 | loss scale: 1.0 | grad norm: 0.311 | number of skipped "
            "iterations:   0 | number of nan iterations:   0 |"
            for n, it in enumerate(range(first, last + 1, 10), start=1)]


def _startup(t: dt.datetime, cycle: int, nccl_info: bool = True) -> list[str]:
    """Each worker's start-up: NCCL's interface and communicator lines (NCCL_DEBUG=INFO), and the traceback a
    library prints for an optional import it then does without (the job goes on)."""
    out = [_launcher(t, h, "[default] starting workers for entrypoint: python", "launcher.py:655") for h in HOSTS]
    for n, (host, ip) in enumerate(HOSTS.items() if nccl_info else ()):
        for local in range(GPN):
            pid, rank = 51230 + 100 * cycle + 10 * n + local, n * GPN + local
            head = f"{host}:{pid}:{pid} [{local}] NCCL INFO"
            out += [f"{head} Bootstrap : Using ib0:{ip}<0>",
                    f"{head} NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:{ip}<0>",
                    f"{head} ncclCommInitRank comm 0x55a1c3e0f2b{rank} rank {rank} nranks {GPN * len(HOSTS)} cudaDev "
                    f"{local} nvmlDev {local} busId {local + 1}000 commId 0x5e7d1c09a4b3f62{cycle} - Init START"]
    out += ["Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/dist-packages/megatron/core/extensions/transformer_engine.py", line 48, '
            "in <module>",
            "    from flash_attn_3.flash_attn_interface import flash_attn_func as flash_attn3_func",
            "ModuleNotFoundError: No module named 'flash_attn_3'",
            "> building GPT model ..."]
    return out


def _failure() -> list[str]:
    """The ranks of gpu-017 lose their peer on gpu-018: IB completion errors, then the watchdog's abort."""
    out = []
    for local in range(GPN):
        pid = 51230 + local
        out.append(f"gpu-017:{pid}:{pid + 70} [{local}] transport/net_ib.cc:2160 NCCL WARN NET/IB : Got completion "
                   f"from peer {HOSTS['gpu-018']}<4731{local}> with status=12 opcode=0 len=0 vendor err 129 (Recv)")
    for rank in range(GPN):
        t = ERRORS + dt.timedelta(milliseconds=400 + rank)
        out.append(f"[rank{rank}]:[E{t:%m%d %H:%M:%S.%f}000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) "
                   f"Rank {rank}] Process group watchdog thread terminated with exception: NCCL error: remote process "
                   "exited or there was a network error, NCCL version 2.21.5")
    out += [_launcher(RESTART, "gpu-017", "[default] Worker group FAILED. 3/3 attempts left; will restart worker "
                                          "group"),
            _launcher(RESTART, "gpu-017", "Stopping workers... Timeout = 30 sec.", "launcher.py:1002"),
            _launcher(RESTART + dt.timedelta(milliseconds=90), "gpu-018",
                      "[default] Joining cluster restart (group_rank=1)")]
    return out


def _bundle(root: Path, stamped: bool, nccl_info: bool = True) -> None:
    d = root / "runs" / "ftnet"
    d.mkdir(parents=True)
    end = RESUMED + dt.timedelta(seconds=400)
    lines = [*_startup(T0, 0, nccl_info), *_iters(10, 600, T0, stamped), *_failure(),
             *_startup(RESTART + dt.timedelta(seconds=5), 1, nccl_info), *_iters(510, 900, RESUMED, stamped),
             _launcher(end, "gpu-017", "[default] worker group successfully finished. Waiting 300 seconds for other "
                                       "agents to finish.")]
    (d / "train.log").write_text("\n".join(lines) + "\n")
    node = root / "nodes" / "gpu-018"
    node.mkdir(parents=True)

    def iso(t: dt.datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%S,%f+00:00")

    (node / "dmesg").write_text("\n".join([
        f"{iso(T0 - dt.timedelta(hours=3))} systemd[1]: Started Journal Service.",
        f"{iso(DOWN)} mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link DOWN",
        f"{iso(DOWN + dt.timedelta(seconds=45))} mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE"]) + "\n")


@pytest.mark.parametrize(("stamped", "nccl_info"), [(True, True), (False, True), (True, False)],
                         ids=["stamped-steps", "unstamped-steps", "no-nccl-info"])
def test_the_startup_traceback_the_job_stepped_past_is_not_the_cause(tmp_path: Path, stamped: bool,
                                                                      nccl_info: bool) -> None:
    # no-nccl-info: only the launcher's "starting workers" lines say gpu-018 was in the first cycle
    _bundle(tmp_path, stamped, nccl_info)
    with Lab(":memory:") as lab:
        assert lab.ingest(tmp_path).problems == []
        # the traceback is read (twice: once per cycle), so the test can fail
        tb = lab.sql("SELECT attempt FROM events WHERE text LIKE '%flash_attn_3%' AND kind = 'python_exception'")
        assert tb.height == 2
        inc = lab.incidents("ftnet").filter(pl.col("kind") == "attempt_end").sort("attempt")
        rows = inc.select("attempt", "failure_mode", "host", "confidence").to_dicts()
        # no incident blames the user's code, at any confidence
        assert "user_code_error" not in inc["failure_mode"].to_list(), rows
        first = inc.filter(pl.col("attempt") == 1).row(0, named=True)
        assert (first["failure_mode"], first["host"]) == ("network", "gpu-018"), rows
        # the restarted cycle trained to its end: nothing ended it badly
        assert inc.filter(pl.col("attempt") == 2).height == 0, rows
        # the traceback stays a rejected candidate, with the reason that the job stepped past it
        reasons = [r["reason"] for r in first["rejected"] if r["candidate"]["failure_mode"] == "user_code_error"]
        assert all("kept stepping" in r for r in reasons), first["rejected"]
