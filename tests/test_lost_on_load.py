"""A resume that dies reading the checkpoint it follows (`clusterlab.diagnose.load_failures`), on hand-made tables:
DeepSpeed following `latest` to a save whose ZeRO shards a hung writer never wrote (own campaign bloom_opt, attempt
3) ended of a lost checkpoint, not of the user's code; a step the run never saved, or an error after the attempt
stepped, stays what it was."""

from __future__ import annotations

import datetime as dt

import pytest
from test_collector_steps import rows, run

from clusterlab import Lab
from clusterlab.collectors import deepspeed
from clusterlab.diagnose import root_cause

T0 = dt.datetime(2026, 12, 1, 15, 43)
CKPT = "/scratch/ckpt/chron/main"
MISSING = (f"[default5]:FileNotFoundError: [Errno 2] No such file or directory: "
           f"'{CKPT}/global_step700/bf16_zero_pp_rank_0_mp_rank_01_optim_states.pt'")
TRUNCATED = "[default5]:RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory"


@pytest.fixture()
def lab():
    with Lab(":memory:") as lab:
        lab.con.execute("INSERT INTO ingested_files (file_id, path) VALUES (1, 'runs/r/attempt-2/slurm-2.out'), "
                        "(2, 'runs/r/attempt-3/slurm-3.out')")
        lab.con.execute("INSERT INTO attempts VALUES ('r', 2, ?, ?, ?, 401, 700, ['h1'], 1), "
                        "('r', 3, ?, ?, NULL, NULL, NULL, ['h1'], 1)",
                        [T0 - dt.timedelta(hours=3), T0 - dt.timedelta(minutes=25), T0 - dt.timedelta(hours=3),
                         T0, T0 + dt.timedelta(minutes=8)])
        yield lab


def _save(lab: Lab, step: int, ok: bool | None) -> None:
    """Attempt 2 began (or finished) the save of `step`."""
    lab.con.execute("INSERT INTO checkpoints (file_id, source, run, attempt, line, ts, action, step, path, ok) VALUES "
                    "(1, 'megatron', 'r', 2, ?, ?, 'save', ?, ?, ?)",
                    [step, T0 - dt.timedelta(minutes=40), step, CKPT, ok])


def _error(lab: Lab, text: str, *, at_min: float = 7.0) -> None:
    """Attempt 3's rank 5 dies of `text` (dated by its process's death, as a traceback's last line is)."""
    lab.con.execute("INSERT INTO events (file_id, source, run, attempt, line, ts, kind, failure_mode, severity, text, "
                    "detail) VALUES (2, 'torch', 'r', 3, 90, ?, 'exception', 'user_code_error', 'error', ?, '{}')",
                    [T0 + dt.timedelta(minutes=at_min), text])


def _end(lab: Lab) -> dict:
    inc, _ = root_cause.attempt_end_incidents(lab.con, "r")
    return inc.filter(inc["attempt"] == 3).row(0, named=True)


def test_a_missing_shard_of_a_save_an_earlier_attempt_began_is_a_lost_checkpoint(lab: Lab) -> None:
    _save(lab, 600, True)
    _save(lab, 700, False)  # the writer hung on the filesystem; `latest` already named it
    _error(lab, MISSING)
    end = _end(lab)
    assert (end["failure_mode"], end["host"]) == ("checkpoint_lost", None)


def test_a_truncated_shard_takes_its_step_from_the_load_before_it(lab: Lab) -> None:
    _save(lab, 700, True)
    lab.con.execute("INSERT INTO checkpoints (file_id, source, run, attempt, line, ts, action, step, path) VALUES "
                    "(2, 'deepspeed', 'r', 3, 80, ?, 'load', 700, ?)", [T0 + dt.timedelta(minutes=3), CKPT])
    _error(lab, TRUNCATED)
    assert _end(lab)["failure_mode"] == "checkpoint_lost"


def test_a_step_the_run_never_saved_is_the_users_path(lab: Lab) -> None:
    _save(lab, 600, True)  # nothing of 700: `--load` named a checkpoint of another run
    _error(lab, MISSING)
    assert _end(lab)["failure_mode"] == "user_code_error"


def test_an_error_after_the_attempt_stepped_is_no_resume(lab: Lab) -> None:
    _save(lab, 700, False)
    lab.con.execute("UPDATE attempts SET first_step_ts = ?, first_step = 601, last_step = 602 WHERE attempt = 3",
                    [T0 + dt.timedelta(minutes=5)])
    _error(lab, MISSING)
    assert _end(lab)["failure_mode"] == "user_code_error"


def test_deepspeed_engine_load_line_is_a_load_of_its_tag() -> None:
    line = (f"[2026-12-01 16:06:31,000] [INFO] [engine.py:1553:_load_checkpoint] rank: 0 loading checkpoint: "
            f"{CKPT}/global_step600/mp_rank_00_model_states.pt")
    (row,) = rows(run(deepspeed, line), "checkpoints")
    assert (row["action"], row["step"], row["path"]) == ("load", 600, f"{CKPT}/global_step600")
