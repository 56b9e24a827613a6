"""A hostless device fault takes the host of the one srun task that exited with an error code of its own.

A launcher that runs one process per node and relays a crashed rank's output (Composer's `composer` launcher: `Global
rank 19 (PID 4242) exited with code 1` and the rank's STDERR, `RuntimeError: CUDA error: uncorrectable ECC error
encountered`) names a global rank, not a node. srun, which started one launcher per node, says which task exited on
its own (`srun: error: nx-03: task 2: Exited with exit code 1`) and which it killed afterwards (`Terminated`). Where
exactly one host's task exited with an error, the fault was raised there; where several did, no host is guessed."""

from __future__ import annotations

import polars as pl
import pytest
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.diagnose import root_cause
from clusterlab.ingest import attempts

HOSTS = ["nx-01", "nx-02", "nx-03", "nx-04"]
END = 30 + 120 * 6.0


def _end(failed: list[str], mode: str = "gpu_memory_ecc", reference: bool = False) -> dict:
    """The first attempt's end: the relayed hostless CUDA error 2 s after its last step, then srun's task lines."""
    with Lab(":memory:") as lab:
        write_run(lab.con, "cz", 32, [Attempt(0, 30, [6.0] * 120, hosts=HOSTS),
                                      Attempt(1500, 45, [6.0] * 40, hosts=HOSTS)])
        lab.con.execute("INSERT INTO facts (file_id, run, attempt, line, host, key, value, ts) "
                        "SELECT 1, 'cz', a, h, 'nx-0' || h, 'nccl_bootstrap_if', 'ib0', "
                        "? + to_seconds(CASE a WHEN 1 THEN 40 ELSE 1560 END) FROM range(1, 3) x(a), range(1, 5) y(h)",
                        [T0])
        attempts.refresh(lab.con)
        rows = [{"t": END + 2, "source": "torch", "kind": "cuda_error", "failure_mode": mode, "host": None,
                 "text": "RuntimeError: CUDA error: uncorrectable ECC error encountered"}]
        for i, h in enumerate(HOSTS):
            bad = h in failed
            rows.append({"t": END + 6 + 0.01 * i, "source": "slurm", "host": h,
                         "kind": "slurm_task_exit" if bad else "slurm_task_signal",
                         "text": f"srun: error: {h}: task {i}: " + ("Exited with exit code 1" if bad
                                                                      else "Terminated")})
        write_events(lab.con, rows, run="cz", attempt=1, name="slurm-9100.out")
        if reference:
            inc, _ = root_cause.attempt_end_incidents(lab.con, "cz", reference=True)
            return inc.filter(pl.col("attempt") == 1).row(0, named=True)
        return lab.incidents("cz").filter(pl.col("kind") == "attempt_end", pl.col("attempt") == 1).row(0, named=True)


@pytest.mark.parametrize("reference", [False, True])
def test_the_one_task_that_exited_on_its_own_names_the_host(reference: bool) -> None:
    end = _end(["nx-03"], reference=reference)
    assert (end["failure_mode"], end["host"]) == ("gpu_memory_ecc", "nx-03"), end


@pytest.mark.parametrize("reference", [False, True])
def test_several_tasks_exiting_with_errors_name_no_host(reference: bool) -> None:
    end = _end(["nx-02", "nx-04"], reference=reference)
    assert (end["failure_mode"], end["host"]) == ("gpu_memory_ecc", None), end


def test_a_user_error_takes_no_host_from_the_task_that_exited() -> None:
    # the job's own bug is no node's, whichever task raised it first
    end = _end(["nx-03"], mode="user_code_error")
    assert end["host"] is None, end
