"""A hostless line of a fault on one machine's devices takes the host of the one node whose own logs report it.

A job log that interleaves every host's ranks (`[default1]: RuntimeError: CUDA error: uncorrectable ECC error
encountered`, torchrun `--tee` under one srun) says which local rank failed but not on which node, and the
launcher's failure summary may list only the ranks it sent SIGTERM. The node whose kernel logged the same mode
(Xid 94 / 63) in the attempt is where it happened. Where two nodes report it, or the mode is a hang (whose reporters
are often symptoms), no host is guessed."""

from __future__ import annotations

import polars as pl
import pytest
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.diagnose import root_cause
from clusterlab.ingest import attempts

HOSTS = ["gx-101", "gx-102", "gx-103", "gx-104"]
END = 40 + 200 * 5.0  # the first attempt's last step end: 200 steps of 5 s from 40 s


def _first_end(kernel: list[tuple[str, int, str]], job_mode: str = "gpu_memory_ecc",
               reference: bool = False) -> dict:
    """The first attempt's end, with the job log's hostless line (`job_mode`) 1 s after its last step, `kernel`
    lines (host, xid, mode) a second later and the launcher's summary 2 s after those."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 32, [Attempt(0, 40, [5.0] * 200, hosts=HOSTS),
                                     Attempt(2000, 60, [5.0] * 50, hosts=HOSTS)])
        # every host of the job says where it is (as NCCL's bootstrap lines do), so each is in both attempts
        lab.con.execute("INSERT INTO facts (file_id, run, attempt, line, host, key, value, ts) "
                        "SELECT 1, 'r', a, h, 'gx-10' || h, 'nccl_bootstrap_if', 'ib0', "
                        "? + to_seconds(CASE a WHEN 1 THEN 50 ELSE 2070 END) FROM range(1, 3) x(a), range(1, 5) y(h)",
                        [T0])
        attempts.refresh(lab.con)
        write_events(lab.con, [{"t": END + 1, "source": "torch", "kind": "cuda_error", "failure_mode": job_mode,
                                "text": "[default1]:RuntimeError: CUDA error: uncorrectable ECC error encountered"},
                               {"t": END + 4, "source": "torch", "kind": "child_failed", "severity": "info",
                                "text": "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"}],
                     run="r", attempt=1, name="slurm-7001.out")
        for host, xid, mode in kernel:
            write_events(lab.con, [{"t": END + 2, "host": host, "kind": "xid", "xid": xid, "failure_mode": mode,
                                    "severity": "critical"}], name=f"{host}-messages")
        if reference:
            inc, _ = root_cause.attempt_end_incidents(lab.con, "r", reference=True)
            return inc.filter(pl.col("attempt") == 1).row(0, named=True)
        return lab.incidents("r").filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 1).row(0, named=True)


@pytest.mark.parametrize("reference", [False, True])
def test_the_one_node_whose_kernel_reports_the_fault_is_its_host(reference: bool) -> None:
    end = _first_end([("gx-103", 94, "gpu_memory_ecc"), ("gx-103", 63, "gpu_memory_ecc")], reference=reference)
    assert (end["failure_mode"], end["host"]) == ("gpu_memory_ecc", "gx-103"), end
    assert not any(r["candidate"]["host"] == "gx-103" for r in end["rejected"]), end["rejected"]


@pytest.mark.parametrize("reference", [False, True])
def test_two_nodes_reporting_it_name_no_host(reference: bool) -> None:
    end = _first_end([("gx-102", 94, "gpu_memory_ecc"), ("gx-104", 94, "gpu_memory_ecc")], reference=reference)
    assert (end["failure_mode"], end["host"]) == ("gpu_memory_ecc", None), end


def test_a_node_reporting_another_mode_lends_no_host() -> None:
    end = _first_end([("gx-102", 79, "gpu_fell_off_bus")])
    assert end["host"] != "gx-103"
    assert end["failure_mode"] in ("gpu_memory_ecc", "gpu_fell_off_bus"), end


def test_a_hang_takes_no_host_from_the_one_node_that_printed_a_timeout() -> None:
    # a hostless watchdog line and one node's own timeout: the node printing it is as likely a symptom
    end = _first_end([("gx-102", 0, "nccl_timeout")], job_mode="nccl_timeout")
    assert (end["failure_mode"], end["host"]) == ("nccl_timeout", None), end
