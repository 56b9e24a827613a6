"""Classes of defect the nvswitch_weka campaign (tests/campaigns/nvswitch_weka.py: Megatron-LM on a Slurm cluster of
HGX H100 nodes, NVSwitch, a VAST mount) showed, each on evidence of our own:

- Slurm giving up on a step it could not kill (`*** STEP J.0 STEPD TERMINATED ON host AT ... DUE TO JOB NOT ENDING
  WITH SIGNALS ***`) names the host where a hung job stopped, as torchrun's `Unable to shutdown process` does: the
  others' collective timeouts are its symptoms, and the stop is when they began to wait (their timeout less how
  long the collective ran), not at the last logged step nor at the timeouts;
- where that host's kernel said a CPU stayed stuck from then on (a soft lockup, an RCU stall), the host is the cause
  (`host_hw`), not the collective.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from clusterlab import Lab

T0 = dt.datetime(2027, 1, 14, 9, 0, 0)
STEP_S = 5.0
HOSTS = ("gx-01", "gx-02", "gx-03")
STOP = T0 + dt.timedelta(seconds=600 + 7 * STEP_S)  # the 127th step never ended: rank 4's host stopped in it
_ITER = ("[{t:%Y-%m-%d %H:%M:%S}] iteration {n:8d}/   20000 | consumed samples: {s:12d} | elapsed time per iteration "
         "(ms): {ms:.1f} | learning rate: 1.000000E-04 | global batch size:   96 | lm loss: 2.400000E+00 | loss scale: "
         "1.0 | grad norm: 0.210 | number of skipped iterations:   0 | number of nan iterations:   0 |")


def _bundle(root: Path, stuck_kernel: bool) -> Path:
    run = root / "runs" / "m7"
    run.mkdir(parents=True)
    (root / "inventory.toml").write_text(
        '[providers.neo]\nusd_per_gpu_hour = 2.5\n\n[clusters.c1]\nprovider = "neo"\ngpu = "H100-SXM"\n'
        'gpus_per_node = 4\nnodes = "gx-[01-03]"\n')
    (run / "run.toml").write_text('cluster = "c1"\ngpus = 12\ntokens_per_step = 393216\nflops_per_token = 4e10\n')
    out = [f"[{T0:%Y-%m-%d %H:%M:%S}] [before the start of training step] datetime: {T0:%Y-%m-%d %H:%M:%S}"]
    for n in range(10, 121, 10):  # a line every 10 steps: steps 121-126 ran, unlogged
        t = T0 + dt.timedelta(seconds=n * STEP_S)
        out.append(_ITER.format(t=t, n=n, s=n * 96, ms=STEP_S * 1000))
    timeout = STOP + dt.timedelta(seconds=600.4)
    for rank in range(12):
        if rank // 4 == 1:
            continue  # gx-02's ranks are stuck with it: no timeout of their own
        at = timeout + dt.timedelta(milliseconds=37 * rank)
        ran = round((at - STOP).total_seconds() * 1000)
        out.append(f"[rank{rank}]:[E{at:%m%d %H:%M:%S}.{at.microsecond:06d}000 ProcessGroupNCCL.cpp:616] [Rank "
                   f"{rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8801, OpType=ALLREDUCE, "
                   f"NumelIn=4194304, NumelOut=4194304, Timeout(ms)=600000) ran for {ran} milliseconds before timing "
                   "out.")
    end = timeout + dt.timedelta(seconds=75)
    out += ["srun: error: gx-01: tasks 0-3: Aborted",
            f"slurmstepd: error: *** STEP 4242.0 STEPD TERMINATED ON gx-02 AT {end:%Y-%m-%dT%H:%M:%S} DUE TO JOB "
            "NOT ENDING WITH SIGNALS ***",
            "srun: error: gx-02: tasks 4-7: Killed"]
    (run / "slurm-4242.out").write_text("\n".join(out) + "\n")
    kern = [f"{T0 - dt.timedelta(hours=1):%Y-%m-%dT%H:%M:%S}.000000+00:00 gx-02 kernel: Linux version 6.8.0-51-generic"]
    if stuck_kernel:
        for k in range(4):
            at = STOP + dt.timedelta(seconds=23 + 28 * k)
            kern.append(f"{at:%Y-%m-%dT%H:%M:%S}.101000+00:00 gx-02 kernel: [88{k}10.101000] watchdog: BUG: soft "
                        f"lockup - CPU#61 stuck for {23 + 28 * k}s! [pt_main_thread:40411]")
    (root / "nodes" / "gx-02").mkdir(parents=True)
    (root / "nodes" / "gx-02" / "kern.log").write_text("\n".join(kern) + "\n")
    return root


@pytest.mark.parametrize(("stuck_kernel", "mode"), [(True, "host_hw"), (False, "nccl_timeout")])
def test_the_host_slurm_could_not_stop_is_where_the_hung_job_stopped(tmp_path: Path, stuck_kernel: bool,
                                                                     mode: str) -> None:
    with Lab(tmp_path / "db.duckdb") as lab:
        lab.ingest(_bundle(tmp_path / "b", stuck_kernel), year=2027)
        inc = lab.attribute("m7").incidents.filter(kind="attempt_end").row(0, named=True)
    assert (inc["failure_mode"], inc["host"]) == (mode, "gx-02"), inc
    # when the others began to wait (their timeouts less how long the collective ran): not the last logged step
    assert abs((inc["root_ts"] - STOP).total_seconds()) < 2.0, inc["root_ts"]
