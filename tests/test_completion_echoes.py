"""A rank that dies of its own error (out of memory, an exception in the job's code) leaves its peers' transfers to it
failing: NCCL's IB / OFI transports print a completion error on each host that was talking to it. Those lines rank
above the death (a completion error names a fault of the fabric where nothing else explains it), and unstamped ones
borrow the last stamp above them, before the death. Printed after the death, they are its echo: the death is the
cause. Printed before any death, the fabric failed first and keeps the blame. Hand-written cases, with the pure rule
(`diagnose.echoes`) on hand-made frames and the whole diagnosis on a hand-made store."""

from __future__ import annotations

import datetime as dt

import polars as pl
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.diagnose import echoes, incidents

HOSTS = ["lx-a01", "lx-a02", "lx-a03", "lx-a04"]
STEP_S = 2.0
LAST_END = 30 + 200 * STEP_S  # the last step record ends 430 s after T0


def _at(sec: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=sec)


def _echo(host: str, line_sec: float, lo: float, hi: float) -> dict:
    return {"t": line_sec, "source": "nccl", "kind": "ib_completion_error", "failure_mode": "network", "host": host,
            "dated": "between", "ts_lo": _at(lo), "ts_hi": _at(hi),
            "text": f"{host}:7712:7790 [3] NCCL INFO transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion "
                    "from peer 10.8.1.12<47213> with status=12 opcode=1 len=0 vendor err 129 (Send) localGid "
                    "::ffff:10.8.1.14 remoteGids::ffff:10.8.1.12 hca mlx5_2"}


def _end(first: str) -> dict:
    """The attempt-end incident of a job whose log prints, in this order, its rank's death on lx-a02 (an OOM
    traceback without a stamp of its own) and its peers' completion errors, or the reverse (`first`)."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 32, [Attempt(0, 30, [STEP_S] * 200, hosts=HOSTS, tail_s=40.0)])
        death = {"t": LAST_END + 9, "source": "torch", "kind": "cuda_oom", "failure_mode": "cuda_oom",
                 "host": "lx-a02", "rank": 11, "dated": "between", "ts_lo": _at(LAST_END + 1),
                 "ts_hi": _at(LAST_END + 9),
                 "text": "[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 "
                         "has a total capacity of 79.11 GiB of which 1.20 GiB is free."}
        peers = [_echo(h, LAST_END + 1, LAST_END + 1, LAST_END + 9) for h in ("lx-a01", "lx-a03", "lx-a04")]
        exit_line = {"t": LAST_END + 12, "source": "torch", "kind": "elastic_child_failed", "failure_mode": "unknown",
                     "text": "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
                             "local_rank: 3 (pid: 91123) of binary: /usr/bin/python3"}
        rows = [death, *peers] if first == "death" else [*peers, death]
        write_events(lab.con, [*rows, exit_line], run="r", attempt=1, name="slurm-8841.out")
        att = lab.attribute("r")
        return att.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)


def test_peers_completion_errors_printed_after_a_rank_died_are_its_echo() -> None:
    end = _end("death")
    assert end["failure_mode"] == "cuda_oom", end


def test_completion_errors_printed_before_any_death_keep_the_blame() -> None:
    # the fabric failed first; the rank's OOM below them came after (a retry path allocating): still the network
    end = _end("echoes")
    assert end["failure_mode"] == "network", end


def _frame(rows: list[dict]) -> pl.DataFrame:
    base = {"run": "r", "attempt": 1, "file": "train.log", "progressed": False}
    return pl.DataFrame([base | r for r in rows]).with_columns(pl.col("attempt").cast(pl.Int32),
                                                               pl.col("tier").cast(pl.Int32))


def _tiers(rows: list[dict]) -> list[int]:
    return echoes.as_symptoms(_frame(rows))["tier"].to_list()


def _row(kind: str, mode: str, tier: int, line: int, lo: float, hi: float, **more) -> dict:
    return {"kind": kind, "failure_mode": mode, "tier": tier, "line": line, "ts_lo": _at(lo), "ts_hi": _at(hi)} | more


def test_an_echo_in_another_file_after_the_deaths_interval_is_lowered() -> None:
    death = _row("python_exception", "user_code_error", 55, 10, 100, 104)
    echo = _row("ofi_completion_error", "network", 80, 3, 105, 106, file="nccl-lx-a03.log")
    assert _tiers([death, echo]) == [55, incidents.SYMPTOM_TIER]


def test_a_death_the_job_stepped_past_makes_no_echo() -> None:
    death = _row("python_exception", "user_code_error", 55, 10, 100, 104, progressed=True)
    echo = _row("ib_completion_error", "network", 80, 11, 100, 104)
    assert _tiers([death, echo]) == [55, 80]


def test_an_error_long_after_the_death_is_no_echo_of_it() -> None:
    death = _row("cuda_oom", "cuda_oom", 60, 10, 100, 100)
    echo = _row("ib_completion_error", "network", 80, 50, 100 + echoes.ECHO_WITHIN_S + 30, 100 + echoes.ECHO_WITHIN_S
                + 30)
    assert _tiers([death, echo]) == [60, 80]


def test_a_death_in_another_attempt_makes_no_echo() -> None:
    death = _row("cuda_oom", "cuda_oom", 60, 10, 100, 100, attempt=2)
    echo = _row("ib_completion_error", "network", 80, 11, 101, 101)
    assert _tiers([death, echo]) == [60, 80]
