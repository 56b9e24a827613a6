"""Loss spikes of many files written in one batch (one set-based statement) are each file's own."""

from __future__ import annotations

from pathlib import Path

from test_training_health import STEADY, log

from clusterlab import Lab

# each file's losses: a recovered spike, one that stays high, one ending in NaN, a steady log, and a log whose
# first rows are high (it must not be judged against the rows of the file before it)
LOGS = {
    "a": [*STEADY, 8.912, 5.105, 2.521, 2.441, 2.419],
    "b": [*STEADY, 7.604, 8.813, 9.902, 10.231, 11.0],
    "c": [*STEADY, 7.604, 8.813, None],
    "d": STEADY * 3,
    "e": [9.5, 9.7, *STEADY, 9.9, 2.4, 2.41],
}
COLUMNS = "run, attempt, line, ts, host, rank, kind, failure_mode, severity, text, detail"


def _write(root: Path, name: str) -> None:
    f = root / "runs" / name / "attempt-1" / "train.log"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(log(LOGS[name]))


def _health(lab: Lab) -> list[tuple]:
    return lab.sql(f"SELECT {COLUMNS} FROM events WHERE source = 'training_health' ORDER BY ALL").rows()


def test_files_of_one_batch_get_the_spikes_each_gets_alone(tmp_path: Path) -> None:
    together = tmp_path / "together"
    for name in LOGS:
        _write(together, name)
    with Lab(tmp_path / "together.duckdb") as lab:
        summary = lab.ingest(together, workers=1)
        batch = _health(lab)
        counted = summary.rows["events"]
        stored = lab.sql("SELECT count(*) AS n FROM events")["n"][0]
    alone = []
    for name in LOGS:
        root = tmp_path / name
        _write(root, name)
        with Lab(tmp_path / f"{name}.duckdb") as lab:
            lab.ingest(root, workers=1)
            alone += _health(lab)
    assert {r[6] for r in batch} == {"loss_spike", "loss_not_recovered"}  # (the logs do trap the rules)
    assert batch == sorted(alone)
    assert counted == stored  # each file's event count includes its own spikes


def test_a_file_read_again_keeps_its_spikes_once(tmp_path: Path) -> None:
    for name in LOGS:
        _write(tmp_path, name)
    with Lab(tmp_path / "x.duckdb") as lab:
        lab.ingest(tmp_path, workers=1)
        first = _health(lab)
        grown = tmp_path / "runs" / "a" / "attempt-1" / "train.log"
        grown.write_text(log([*LOGS["a"], *STEADY]))
        lab.ingest(tmp_path, workers=1)
        assert len(_health(lab)) == len(first)
