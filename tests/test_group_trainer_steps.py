"""Step logs (Megatron, torchtitan, HF Trainer, DeepSpeed) and Slurm job output parsed together
(clusterlab.ingest.groups_text) store exactly what parsing each alone stores.

Each log's first lines continue what the file before it ends with, as if they were one: a Megatron step repeated
across the cut (merged into one row?), a loss printed before (a hidden NaN, a loss that falls to 0), a save started
in one file and finished or timed in the next; a torchtitan save whose last logged step is in the file before,
and a step whose interval would run from there; a progress bar of the HF Trainer whose clock would start at a
stamped line of the file before, loss dicts whose step would come from its bar or from its banner; a DeepSpeed
save and overflows pinned at one scale across the cut, a step repeated; an srun task exit after a job's time limit in
the file before. Untimed lines come first in several files; some lines cannot be read; CRLF, gzip and a missing
last newline."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from test_ingest_parallel import _ingest, _ingest_alone, _snapshot

from clusterlab import Lab
from clusterlab.collectors import all_collectors
from clusterlab.collectors._base import search
from clusterlab.ingest import groups as ingest_group
from clusterlab.ingest import groups_text as ingest_group_text
from clusterlab.ingest.heads import choose

ITER = (" [2026-11-24 08:{:02d}:00] iteration {:>8}/    1000 | consumed samples:  12800 | elapsed time per iteration "
        "(ms): 1500.0 | learning rate: 3.000000E-04 | global batch size:   128 |{} loss scale: 1.0 | grad norm: 1.234 "
        "| number of skipped iterations:   0 | number of nan iterations:   0 |")
TITAN = "[titan] 2026-11-24 09:{:02d}:00,000 - root - INFO - \x1b[31mstep: {:>2}  \x1b[32mloss: {}  \x1b[34mtps: 6,519"
TITAN_LOG = "[titan] 2026-11-24 09:{:02d}:00,000 - root - INFO - "
HF = "[INFO|trainer.py:2130] 2026-11-24 11:{:02d}:00,100 >> "
DS = "[2026-11-24 06:{:02d}:00,000] [INFO] [logging.py:128:log_dist] [Rank 0] "
OVER = ("[2026-11-24 06:{:02d}:00,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 "
        "Skipping step. Attempted loss scale: 4, reducing to 4")
LOGS = {
    # Megatron: ends with step 100 and a save that has neither its finish nor its timer
    "attempt-1/megatron.log": [
        ITER.format(1, 90, " lm loss: 2.500000E+00 |"),
        ITER.format(2, 100, " lm loss: 2.400000E+00 |"),
        " [2026-11-24 08:02:01] saving checkpoint at iteration     100 to /ckpt/gpt in torch_dist format",
        "Unexpected result "],  # a line of ours it cannot read
    # starts (untimed) with the save's finish and its timer, step 100 again, a step without a loss (a hidden NaN
    # only after a printed one); CRLF
    "attempt-2/megatron.log": [
        "successfully saved checkpoint from iteration     100 to /ckpt/gpt [ t 1/1, p 1/1 ]",
        "    save-checkpoint ................................: (2301.11, 2333.45)",
        ITER.format(3, 100, ""),
        ITER.format(4, 110, " lm loss: 2.300000E+00 |"),
        ITER.format(5, 120, ""),
        "iteration      130/    1000 | consumed samples:  12800 | learning rate: 3.000000E-04 |"],  # no step time
    # first (for its collector) in its file, after a file of printed losses: a step without a loss (no hidden NaN)
    # and a loss of 0 (no fall to 0)
    "attempt-3/megatron-b.log": [
        ITER.format(6, 130, ""),
        ITER.format(7, 140, " lm loss: 0.000000E+00 |").replace("grad norm: 1.234", "grad norm: 0.000")],
    # torchtitan: ends with step 20 (gzip)
    "attempt-3/titan.log.gz": [
        TITAN_LOG.format(0) + "torchtitan version: 0.2.1",
        TITAN.format(1, 10, "9.80012"),
        TITAN.format(2, 20, "8.11234"),
        TITAN_LOG.format(3) + "Trainer is initialized with 5 nothing it knows"],  # unreadable
    # starts with a save before any step of its own, then a step (its interval has no step before it here)
    "attempt-4/titan.log": [
        TITAN_LOG.format(4) + "Saving the checkpoint.",
        TITAN_LOG.format(5) + "Finished saving the checkpoint in 12.34 seconds.",
        TITAN.format(6, 30, "7.60981")],
    # HF Trainer: a banner (steps per epoch), the logging interval, a bar at step 100 and its dict
    "attempt-5/hf.log": [
        "11/24/2026 10:59:59 - INFO - __main__ - TrainingArguments(output_dir=out, logging_steps=50, save_steps=500)",
        HF.format(0) + "***** Running training *****",
        HF.format(0) + "  Num examples = 120,000",
        HF.format(0) + "  Num Epochs = 3",
        HF.format(0) + "  Total optimization steps = 5,625",
        "  2%|          | 100/5625 [01:02<57:01,  1.61it/s]{'loss': 3.5121, 'grad_norm': 1.8741, 'epoch': 0.05}",
        HF.format(5) + "Saving model checkpoint to out/checkpoint-500"],
    # starts with a bar (no stamped line before it in this file), a dict after it, the save's files, a dict with
    # an epoch but no banner of its own (no step); no last newline
    "attempt-6/hf.log": [
        "  3%|          | 150/5625 [01:33<57:01,  1.61it/s]",
        "{'loss': 3.4001, 'grad_norm': 1.5, 'epoch': 0.08}",
        "[INFO|modeling_utils.py:2598] 2026-11-24 11:06:00,000 >> Model weights saved in out/checkpoint-500/m.bin",
        HF.format(7) + "  Num examples = 120,000",
        "{'loss': 3.3001, 'grad_norm': 1.4, 'epoch': 0.11}"],
    # DeepSpeed: a save begun, two overflows at a scale of 4 that stays 4, step 40
    "attempt-7/ds.log": [
        DS.format(0) + "DeepSpeed info: version=0.14.4, git-hash=unknown, git-branch=unknown",
        DS.format(1) + "step=40, skipped=3, lr=[3.0e-05], mom=[(0.9, 0.999)]",
        OVER.format(2), OVER.format(3),
        DS.format(4) + "[Torch] Checkpoint global_step40 is about to be saved!"],
    # starts with the save's commit, a third overflow at 4 (pinned only with the two before it), step 40 again
    "attempt-8/ds.log": [
        "[2026-11-24 06:05:00,000] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step40 "
        "is ready now!",
        OVER.format(6),
        DS.format(7) + "step=40, skipped=4, lr=[3.0e-05], mom=[(0.9, 0.999)]",
        DS.format(8) + "step=50, skipped=4, lr=[3.0e-05], mom=[(0.9, 0.999)]"],
    # Slurm: a job's time limit at the end of a file (attempt-0: the file the group reads before attempt-10)
    "attempt-0/slurm-1.out": [
        "srun: job 41 queued and waiting for resources",
        "slurmstepd: error: *** JOB 41 ON n1 CANCELLED AT 2026-11-24T10:00:00 DUE TO TIME LIMIT ***"],
    # an exit first in the next: its own failure, not the time limit's consequence
    "attempt-10/slurm-2.out": [
        "srun: error: n2: task 3: Exited with exit code 1",
        "slurmstepd: error: *** STEP 42.0 ON n2 CANCELLED AT 2026-11-24T10:05:00 DUE TO TIME LIMIT ***"],
}
READERS = {"megatron", "torchtitan", "hf_trainer", "deepspeed", "slurm"}


def _write(root: Path, logs: dict[str, list[str]] = LOGS) -> None:
    for rel, lines in logs.items():
        p = root / "runs" / "adv" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        newline = "\r\n" if rel.startswith("attempt-2/") else "\n"
        text = newline.join(lines) + ("" if rel.startswith("attempt-6/") else newline)
        p.write_bytes(gzip.compress(text.encode()) if rel.endswith(".gz") else text.encode())


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("steps")
    _write(root)
    return root


@pytest.fixture(scope="module")
def alone(logs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list, dict, Path]:
    db = tmp_path_factory.mktemp("alone") / "alone.duckdb"
    results = _ingest_alone(db, logs)
    return results, _snapshot(db), db


def _rows(db: Path, table: str, attempt: str, **where: object) -> list[dict]:
    """The rows a file of `attempt` stored in `table`, in line order, where the columns `where` names agree."""
    with Lab(db, read_only=True) as lab:
        got = lab.sql(f"SELECT f.path AS _file, t.* FROM {table} t JOIN ingested_files f USING (file_id) "
                      "ORDER BY t.line").to_dicts()
    return [r for r in got if Path(r["_file"]).parent.name == attempt and all(r[k] == v for k, v in where.items())]


def _one_group_for_all_kinds(m: pytest.MonkeyPatch) -> None:
    """Logs of every kind in one group, as they were grouped before each kind had its own (`text_key`): the traps
    run from one kind's file into the next kind's, so the group must hold them all to fall into them."""
    real = ingest_group.text_key
    m.setattr(ingest_group, "text_key", lambda out, ctx, chosen: (k := real(out, ctx, chosen)) and k[:3])


def test_step_logs_parsed_together_store_the_rows_of_each_parsed_alone(logs, alone, tmp_path) -> None:
    results, snap, _ = alone
    groups: list[tuple[int, int]] = []  # (files, sent back alone)
    with pytest.MonkeyPatch.context() as m:
        _one_group_for_all_kinds(m)
        real = ingest_group_text.parse_text_group

        def spy(items, chosen, *a):
            rest = real(items, chosen, *a)
            groups.append((len(items), len(rest)))
            return rest

        m.setattr(ingest_group, "parse_text_group", spy)
        grouped = _ingest(tmp_path / "grouped.duckdb", logs)
    # one group, none sent back: the Megatron file whose step line has no step time gets its warning from the
    # group, as alone (megatron.WARNINGS_PER_FILE)
    assert groups == [(len(LOGS), 0)]
    assert grouped == results
    assert _snapshot(tmp_path / "grouped.duckdb") == snap


def test_without_the_warned_file_nothing_is_sent_back(logs, tmp_path) -> None:
    """The same logs less the line that draws a warning: every file stays in the group."""
    root = tmp_path / "quiet"
    _write(root, {**LOGS, "attempt-2/megatron.log": LOGS["attempt-2/megatron.log"][:-1]})
    ref = _ingest_alone(tmp_path / "a.duckdb", root)
    groups: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as m:
        _one_group_for_all_kinds(m)
        real = ingest_group_text.parse_text_group
        m.setattr(ingest_group, "parse_text_group",
                  lambda items, chosen, *a: groups.append(len(items)) or real(items, chosen, *a))
        spied = ingest_group_text._per_file
        sent_back: list[int] = []
        m.setattr(ingest_group_text, "_per_file",
                  lambda items, keep, *a: sent_back.append(len(items) - len(keep)) or spied(items, keep, *a))
        assert _ingest(tmp_path / "g.duckdb", root) == ref
    assert groups == [len(LOGS)] and sent_back == [0]
    assert _snapshot(tmp_path / "g.duckdb") == _snapshot(tmp_path / "a.duckdb")


def test_the_traps_were_there_to_fall_into(alone) -> None:
    """Each file kept what only it says: what a parse of the files as one would have got wrong."""
    results, _, db = alone
    unparsed = {"/".join(Path(r[0]).parts[-2:]): r[3] for r in results if r[3]}  # unread lines in several files
    # (HF: the printed arguments, a bar state that has no time)
    assert unparsed == {"attempt-1/megatron.log": 1, "attempt-2/megatron.log": 1, "attempt-3/titan.log.gz": 1,
                        "attempt-5/hf.log": 1, "attempt-6/hf.log": 1}
    # Megatron: step 100 in both files, a row each; no hidden NaN nor fall to 0 before a loss of the file's own
    assert len(_rows(db, "steps", "attempt-1", step=100)) == len(_rows(db, "steps", "attempt-2", step=100)) == 1
    assert not _rows(db, "events", "attempt-3")
    assert [json.loads(r["detail"])["step"] for r in _rows(db, "events", "attempt-2", kind="loss_nan")] == [120]
    # a save without its finish fails; the finish and timer of another file are a save of their own
    assert [(r["step"], r["ok"], r["duration_s"]) for r in _rows(db, "checkpoints", "attempt-1")] == [
        (100, False, None)]
    assert [(r["step"], r["ok"], r["duration_s"]) for r in _rows(db, "checkpoints", "attempt-2")] == [
        (100, True, 2.33345)]
    # torchtitan: a save with no step logged before it in its file; a first step without an interval
    assert [r["step"] for r in _rows(db, "checkpoints", "attempt-4")] == [None]
    assert [r["step_s"] for r in _rows(db, "steps", "attempt-4")] == [None]
    # HF Trainer: a bar with no stamped line before it has no time (no row); a dict takes its own file's bar step
    # only, and without a banner in the file (after its new launch) no step from its epoch
    assert [(r["line"], r["step"]) for r in _rows(db, "steps", "attempt-6")] == [(2, 150), (5, None)]
    kinds = {(a, r["kind"]) for a in (rel.split("/")[0] for rel in LOGS) for r in _rows(db, "events", a)}
    # DeepSpeed: one overflow at 4 is no floor; a save begun and never committed keeps ok unknown
    assert ("attempt-8", "loss_scale_min") not in kinds and ("attempt-7", "loss_scale_min") not in kinds
    assert [(r["step"], r["ok"]) for r in _rows(db, "checkpoints", "attempt-7")] == [(40, None)]
    assert [r["skipped"] for r in _rows(db, "steps", "attempt-8")] == [None, 0]
    # Slurm: no cancel before the exit in its file: the exit is the application's failure
    assert [r["severity"] for r in _rows(db, "events", "attempt-10", kind="slurm_task_exit")] == ["error"]


def test_the_trap_logs_are_read_by_these_collectors_only() -> None:
    """Every line a collector reads goes to a step-log collector or slurm: the group test is about them."""
    line_based = [c for c in all_collectors() if not getattr(c, "EXCLUSIVE", False)]
    readers = set()
    for rel, lines in LOGS.items():
        assert choose("\n".join(lines).encode(), rel, all_collectors()), rel
        readers |= {c.NAME for c in line_based for ln in lines if search(ln, c.PATTERN)}
    assert readers == READERS
