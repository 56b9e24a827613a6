"""Classes of defect the azure_nd_accelerate campaign (tests/campaigns/azure_nd_accelerate.py: HF Trainer + DeepSpeed
under accelerate on Azure ND H100 v5, CycleCloud Slurm) showed, each on evidence of our own:

- what a DataLoader worker raised is re-raised in the main process by torch's ExceptionWrapper (`OSError: Caught
  OSError in DataLoader worker process 3.`, then `Original Traceback (most recent call last):` and the worker's own
  traceback): the worker's exception is the cause, and its mode is the chain's (an I/O error on the dataset's mount
  is the storage's, not the user's code);
- Azure's Scheduled Events, as a poller on the VM logs the metadata service's document: a platform `Reboot` or
  `Redeploy` that has `Started` is the provider taking the host (`preemption`, dated by the syslog record), a
  `Scheduled` one only a notice, a `Freeze` or an event the user started no fault;
- a step record printed every N steps (DeepSpeed's `step=N`) whose interval held a save the same log timed is the
  steps and the save, not N slow steps;
- a tqdm bar's count drawn again (its close after the final save) is no step record: the step ended when the bar
  first showed it;
- of one step's records in one file, a whole-second one (a bar's elapsed time from its start) yields to one stamped
  finer (the engine's own line beside it): mixing them made every other interval 3 s long (a slowdown);
- an unknown key in inventory.toml is a warning, not the loss of every host's cluster and provider
  (tests/test_metadata.py).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from excerpt_events import modes

from clusterlab import Lab
from clusterlab.collectors import hf_trainer
from clusterlab.collectors._base import Context
from clusterlab.diagnose import timeline


def _wrapped(where: str, outer: str, inner: str, prefix: str = "") -> str:
    lines = ["Traceback (most recent call last):",
             '  File "/srv/job/pretrain.py", line 311, in <module>',
             "    trainer.train()",
             '  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1480, in _process_data',
             "    data.reraise()",
             '  File "/usr/lib/python3/dist-packages/torch/_utils.py", line 733, in reraise',
             "    raise exception",
             f"{outer}: Caught {outer} in {where}.",
             "Original Traceback (most recent call last):",
             '  File "/srv/job/data/packed.py", line 88, in __getitem__',
             "    chunk = self.reader.read(idx)",
             inner,
             ""]
    return "\n".join(prefix + line for line in lines)


@pytest.mark.parametrize(("where", "outer", "inner", "expect"), [
    ("DataLoader worker process 0", "OSError", "OSError: [Errno 116] Stale file handle: '/lustre/ds/part-0031.bin'",
     "filesystem_io"),
    ("DataLoader worker process 7", "OSError", "OSError: [Errno 5] Input/output error", "filesystem_io"),
    ("pin memory thread for device 2", "RuntimeError",
     "RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_error"),
    # a plain bug in the worker stays the user's: the wrapper adds no cause of its own
    ("DataLoader worker process 1", "KeyError", "KeyError: 'input_ids'", "user_code_error"),
])
@pytest.mark.parametrize("prefix", ["", "[rank12]: "])
def test_what_a_dataloader_worker_raised_is_the_cause_of_its_re_raise(tmp_path: Path, where: str, outer: str,
                                                                      inner: str, expect: str, prefix: str) -> None:
    got = modes(tmp_path, _wrapped(where, outer, inner, prefix))
    assert got == {expect}, got


def _doc(kind: str, status: str, source: str = "Platform", quote: str = '"') -> str:
    entry = {"EventId": "9F0C4E21-55AA-4B7C-9D3E-2F1A0B6C7D8E", "EventType": kind, "ResourceType": "VirtualMachine",
             "Resources": ["nd-vm-04"], "EventStatus": status, "NotBefore": "Tue, 02 Mar 2027 03:10:00 GMT",
             "Description": "Virtual machine is being paused because of a memory-preserving Live Migration "
                            "operation." if kind == "Freeze" else "", "EventSource": source, "DurationInSeconds": 9}
    body = ", ".join(f'"{k}": ' + (f'"{v}"' if isinstance(v, str) else str(v).replace("'", '"'))
                     for k, v in entry.items())
    return ('{"DocumentIncarnation": 3, "Events": [{' + body + "}]}").replace('"', quote)


@pytest.mark.parametrize(("kind", "status", "source", "expect"), [
    ("Reboot", "Started", "Platform", {"preemption"}),
    ("Redeploy", "Started", "Platform", {"preemption"}),
    ("Reboot", "Scheduled", "Platform", set()),  # a notice: the job may end first, the event may be cancelled
    ("Freeze", "Started", "Platform", set()),  # seconds of pause the job usually survives
    ("Reboot", "Started", "User", set()),  # the team's own reboot, not the provider's
])
@pytest.mark.parametrize("quote", ['"', "'"])  # a poller that logs the parsed document prints Python's quotes
def test_a_platform_reboot_that_started_is_the_providers_maintenance(tmp_path: Path, kind: str, status: str,
                                                                     source: str, expect: set[str], quote: str) -> None:
    line = f"Mar  2 03:10:02 nd-vm-04 azure-events[2210]: {_doc(kind, status, source, quote)}\n"
    assert modes(tmp_path, line, "syslog") == expect


def test_the_started_reboot_is_dated_by_the_syslog_record_that_logged_it(tmp_path: Path) -> None:
    (tmp_path / "nodes" / "nd-vm-04").mkdir(parents=True)
    (tmp_path / "nodes" / "nd-vm-04" / "syslog").write_text(
        f"Mar  2 03:10:02 nd-vm-04 azure-events[2210]: {_doc('Reboot', 'Started')}\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path, year=2027)
        got = lab.sql("SELECT ts, host FROM events WHERE failure_mode = 'preemption'").rows()
    assert got == [(dt.datetime(2027, 3, 2, 3, 10, 2), "nd-vm-04")]


def test_a_step_record_whose_interval_held_a_timed_save_is_the_steps_and_the_save(tmp_path: Path) -> None:
    # DeepSpeed's `step=N` every 10 steps (steps_per_print), 7.5 s a step, a 95 s save after step 20: the record of
    # step 30 is ten 7.5 s steps and the save, not ten steps of 17 s (which the ledger booked as slowdown)
    t0 = dt.datetime(2027, 3, 2, 8, 0, 0)

    def ds(t: dt.datetime, msg: str) -> str:
        return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [INFO] [logging.py:128:log_dist] [Rank 0] {msg}"

    lines, t = [], t0
    for n in (10, 20, 30, 40):
        t += dt.timedelta(seconds=75)
        lines.append(ds(t, f"step={n}, skipped=0, lr=[0.0002], mom=[(0.9, 0.95)]"))
        if n == 20:
            lines.append(ds(t + dt.timedelta(seconds=0.4), "[Torch] Checkpoint global_step20 is about to be saved!"))
            t += dt.timedelta(seconds=95.4)
            lines.append(f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [INFO] [torch_checkpoint_engine.py:33:"
                         "commit] [Torch] Checkpoint global_step20 is ready now!")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "train.log")
        got = dict(lab.sql("SELECT step, step_s FROM steps").iter_rows())
    assert got[20] == pytest.approx(7.5) and got[40] == pytest.approx(7.5)
    assert got[30] == pytest.approx(7.5, abs=0.05), got


def _bar(n: int, total: int, elapsed: float) -> str:
    m, sec = divmod(int(elapsed), 60)
    h, m = divmod(m, 60)
    done = f"{100 * n // total:3d}%|{'#' * (10 * n // total):10s}|"
    return f"\r{done} {n}/{total} [{h}:{m:02d}:{sec:02d}<00:00, 6.00s/it]"


def test_the_bars_count_drawn_again_after_the_final_save_is_no_step_record() -> None:
    t0 = dt.datetime(2027, 3, 2, 9, 0, 0)
    stamp = f"{t0:%m/%d/%Y %H:%M:%S}"
    lines = [f"{stamp} - INFO - transformers.trainer - ***** Running training *****",
             f"{stamp} - INFO - transformers.trainer -   Total optimization steps = 40",
             "".join(_bar(n, 40, 6.0 * n) for n in range(37, 41)),
             f"{t0 + dt.timedelta(seconds=241):%m/%d/%Y %H:%M:%S} - INFO - transformers.trainer - Saving model "
             "checkpoint to /ck/run/checkpoint-40",
             _bar(40, 40, 300.0)]  # tqdm's close, 59 s later
    frame = pl.DataFrame({"line": range(1, len(lines) + 1), "text": lines})
    steps = hf_trainer.parse(frame, Context(path="x")).tables["steps"]
    assert steps.filter(pl.col("step") == 40)["ts"].to_list() == [t0 + dt.timedelta(seconds=240)], steps


def test_a_steps_record_stamped_finer_wins_over_a_whole_second_one_on_the_same_line() -> None:
    t0 = dt.datetime(2027, 3, 2, 9, 0, 0)
    rows = []
    for k, step in enumerate((10, 20, 30, 40), 1):
        fine = t0 + dt.timedelta(seconds=92.5 * k, milliseconds=437)
        rows += [(step, fine.replace(microsecond=0) - dt.timedelta(seconds=3), 10 * k),  # the bar, 3 s early
                 (step, fine, 10 * k)]  # DeepSpeed's timer line, the same physical line
    logged = pl.DataFrame({"attempt": 1, "step": [r[0] for r in rows], "ts": [r[1] for r in rows],
                           "step_s": None, "file_id": 1, "line": [r[2] for r in rows]},
                          schema_overrides={"step_s": pl.Float64, "attempt": pl.Int32})
    got = timeline._one_log(logged.reverse()).sort("step")
    gaps = got["ts"].diff().drop_nulls().dt.total_milliseconds().to_list()
    assert gaps == [92500, 92500, 92500], got
