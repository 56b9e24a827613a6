"""Loss spikes found after ingest (clusterlab.ingest.training_health), and how root cause treats them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from clusterlab import Lab
from clusterlab.ingest import training_health
from clusterlab.tables import TABLE_COLUMNS

T0 = dt.datetime(2026, 11, 24, 8, 0, 0)
STEADY = [2.412, 2.438, 2.371, 2.402, 2.455, 2.389, 2.411, 2.430, 2.398, 2.365]


def meg(i: int, loss: float | None, every_s: int = 8, step0: int = 4000, nan: int = 0) -> str:
    """A Megatron-LM iteration line (training.py's format), row `i` of a log printed every 10 iterations."""
    ts = T0 + dt.timedelta(seconds=every_s * i)
    lm = f" lm loss: {loss:.6E} |" if loss is not None else ""
    grad = " grad norm: 1.104 |" if loss is not None else " grad norm: nan |"
    step = step0 + 10 * i
    return (f"[{ts:%Y-%m-%d %H:%M:%S}] iteration {step:8d}/  500000 | consumed samples: {step * 1024:12d} | elapsed "
            f"time per iteration (ms): 800.0 | learning rate: 2.998800E-04 | global batch size:  1024 |{lm} loss "
            f"scale: 1.0 |{grad} number of skipped iterations: {nan:3d} | number of nan iterations: {nan:3d} |")


def log(losses: list[float | None], **kw) -> str:
    return "".join(meg(i, x, **kw) + "\n" for i, x in enumerate(losses))


def spikes(lab: Lab) -> list[dict]:
    rows = lab.sql("SELECT run, attempt, line, ts, severity, text, detail FROM events WHERE kind = 'loss_spike' "
                   "ORDER BY run, line").to_dicts()
    for r in rows:
        r["detail"] = json.loads(r["detail"])
    return rows


def ingest_text(lab: Lab, tmp_path: Path, text: str, name: str = "r") -> None:
    f = tmp_path / "runs" / name / "attempt-1" / "train.log"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    lab.ingest(tmp_path)


def test_a_spike_that_comes_back_is_one_recovered_event_at_its_step(lab: Lab, tmp_path: Path) -> None:
    ingest_text(lab, tmp_path, log([*STEADY, 8.912, 5.105, 2.521, 2.441, 2.419]))
    (ev,) = spikes(lab)
    assert ev["detail"]["step"] == 4100 and ev["detail"]["outcome"] == "recovered"
    assert ev["detail"]["recovered_at_step"] == 4120  # 5.1 is still more than 1.5x the median before
    assert ev["line"] == 11 and ev["ts"] == T0 + dt.timedelta(seconds=80) and ev["severity"] == "warning"
    assert ev["run"] == "r" and ev["attempt"] == 1


def test_a_spike_that_stays_high_or_turns_nan_is_diverged(lab: Lab, tmp_path: Path) -> None:
    ingest_text(lab, tmp_path, log([*STEADY, 7.604, 8.813, 9.902, 10.231, None], nan=0))
    (ev,) = spikes(lab)  # one episode, not one event per high row
    assert ev["detail"]["step"] == 4100 and ev["detail"]["outcome"] == "diverged" and ev["severity"] == "error"
    last = lab.sql("SELECT line, detail FROM events WHERE kind = 'loss_not_recovered'").rows()
    assert [(ln, json.loads(d)["step"]) for ln, d in last] == [(15, 4140)]  # the NaN row that ends the log


def test_warmup_and_a_noisy_curve_are_no_spike(lab: Lab, tmp_path: Path) -> None:
    warmup = [10.91, 10.45, 9.73, 8.86, 7.90, 7.11, 6.58, 6.10, 5.88, 5.51, 5.29, 5.04, 4.91, 4.70]
    noisy = [2.41, 2.54, 2.37, 2.60, 2.46, 2.39, 2.71, 2.43, 2.50, 2.37, 2.59, 2.44, 3.52, 2.40, 2.63]
    ingest_text(lab, tmp_path, log(warmup), "warmup")
    ingest_text(lab, tmp_path, log(noisy), "noisy")
    assert spikes(lab) == []


def test_the_first_rows_of_an_early_log_are_never_judged(lab: Lab, tmp_path: Path) -> None:
    # in the first steps, fewer rows before it than the median needs: a high value is where the log starts
    ingest_text(lab, tmp_path, log([2.4, 2.5, 2.4, 9.9, 2.4, 2.5], step0=100))
    assert training_health.MIN_WINDOW > 3 and spikes(lab) == []


def test_the_first_row_of_a_log_is_never_judged(lab: Lab, tmp_path: Path) -> None:
    ingest_text(lab, tmp_path, log([9.9, 2.4, 2.5, 2.4]))
    assert spikes(lab) == []


def test_a_short_excerpt_of_late_training_is_judged(lab: Lab, tmp_path: Path) -> None:
    # the few lines a user pastes around a jump, far past warmup: three rows before it are enough
    ingest_text(lab, tmp_path, log([2.781, 2.780, 2.774, 7.103, 8.903, 7.812], step0=31000), "jump")
    # a climb over several rows is measured from where it began (the lower quartile, not the median)
    ingest_text(lab, tmp_path, log([6.402, 6.655, 7.281, 9.048, 10.316], step0=5900), "climb")
    got = {ev["run"]: ev["detail"] for ev in spikes(lab)}
    assert got["jump"]["step"] == 31030 and got["jump"]["outcome"] == "diverged"
    assert got["climb"]["step"] == 5940


def test_an_early_loss_that_doubles_once_is_no_spike(lab: Lab, tmp_path: Path) -> None:
    falling = [10.84, 10.13, 9.21, 8.52, 7.99, 7.61, 7.33, 7.09, 6.88, 6.65, 6.44, 6.24, 6.07, 5.90, 5.78, 5.61,
               5.49, 5.35, 5.24, 5.12, 10.30, 5.28, 5.01, 4.92, 4.83, 4.74, 4.65, 4.57, 4.50, 4.43]
    ingest_text(lab, tmp_path, log(falling, step0=1), "early")
    # the same descent far into a step count (a fine-tune resumed at step 5000): still a descent, not late training
    ingest_text(lab, tmp_path, log(falling, step0=5000), "resumed")
    assert spikes(lab) == []


def test_late_noise_of_a_few_tenths_is_no_spike(lab: Lab, tmp_path: Path) -> None:
    # a noisy late curve, pasted short: tenths of a nat up and down, one row up by 1.1
    ingest_text(lab, tmp_path, log([2.44, 2.61, 2.37, 3.52, 2.40, 2.63], step0=48000))
    assert spikes(lab) == []


def _evidence(lab: Lab) -> dict[str, list[tuple]]:
    return {t: lab.sql(f"SELECT * EXCLUDE (file_id) FROM {t} ORDER BY ALL").rows() for t in TABLE_COLUMNS}


def test_reingest_is_a_no_op_and_a_grown_log_equals_a_clean_ingest(tmp_path: Path) -> None:
    # The spike's outcome changes as the log grows (diverged while it ends there, recovered once it comes
    # back), and a second spike arrives with the appended lines: both must come out as in one clean read.
    losses = [*STEADY, 8.9, 2.5, 2.4, 2.45, 2.41, 2.43, 2.39, 2.42, 2.40, 2.44, 9.7, 2.5, 2.4]
    grown = tmp_path / "grown" / "runs" / "r" / "attempt-1" / "train.log"
    clean = tmp_path / "clean" / "runs" / "r" / "attempt-1" / "train.log"
    for p in (grown, clean):
        p.parent.mkdir(parents=True)
    grown.write_text(log(losses[:11]))
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "grown")
        assert [e["detail"]["outcome"] for e in spikes(lab)] == ["diverged"]
        with grown.open("a") as f:
            f.write(log(losses)[len(log(losses[:11])):])
        assert [f.status for f in lab.ingest(tmp_path / "grown").files] == ["appended"]
        appended = _evidence(lab)
        again = lab.ingest(tmp_path / "grown")
        assert [f.status for f in again.files] == ["unchanged"] and _evidence(lab) == appended
        assert [e["detail"]["outcome"] for e in spikes(lab)] == ["recovered", "recovered"]
        stored = lab.sql("SELECT rows FROM ingested_files")["rows"][0]
        assert stored == sum(len(v) for v in appended.values())
    clean.write_text(grown.read_text())
    with Lab(":memory:") as lab:
        lab.ingest(tmp_path / "clean")
        assert _evidence(lab) == appended


def _two_attempts(tmp_path: Path, first: str) -> Lab:
    """Run `r`: attempt 1 logs `first`, attempt 2 (a restart 10 minutes later) trains on normally."""
    root = tmp_path / "bundle"
    a1 = root / "runs" / "r" / "attempt-1" / "train.log"
    a2 = root / "runs" / "r" / "attempt-2" / "train.log"
    for p in (a1, a2):
        p.parent.mkdir(parents=True)
    a1.write_text(first)
    a2.write_text("".join(meg(i, 2.40, step0=9000).replace("[2026-11-24 08:", "[2026-11-24 09:") + "\n"
                          for i in range(12)))
    lab = Lab(":memory:")
    lab.ingest(root)
    return lab


def test_a_recovered_spike_is_never_the_root_cause_of_an_attempt_that_kept_training(tmp_path: Path) -> None:
    # 25 more rows (200 s) after the spike: root cause rejects evidence the job stepped past
    with _two_attempts(tmp_path, log([*STEADY, 8.912, 2.6, *([2.41] * 24)])) as lab:
        assert [e["detail"]["outcome"] for e in spikes(lab)] == ["recovered"]
        inc = lab.incidents("r").filter(lab.incidents("r")["attempt"] == 1).row(0, named=True)
        assert inc["failure_mode"] != "loss_divergence"
        rejected = [r for r in inc["rejected"] if r["candidate"]["kind"] == "loss_spike"]
        assert rejected and "kept stepping" in rejected[0]["reason"]


def test_a_spike_the_attempt_died_on_is_its_root_cause(tmp_path: Path) -> None:
    with _two_attempts(tmp_path, log([*STEADY, 8.912, 9.4])) as lab:
        assert [e["detail"]["outcome"] for e in spikes(lab)] == ["diverged"]
        inc = lab.incidents("r").filter(lab.incidents("r")["attempt"] == 1).row(0, named=True)
        assert inc["failure_mode"] == "loss_divergence"


def test_a_loss_that_stays_diverged_until_the_attempt_ends_is_its_root_cause(tmp_path: Path) -> None:
    # 20 rows (160 s) of a loss that never comes back: the job "kept stepping" past the spike itself, so the
    # divergence is restated at the last row, which nothing stepped past
    with _two_attempts(tmp_path, log([*STEADY, 7.9, *([9.6] * 20)])) as lab:
        kinds = lab.sql("SELECT kind, line, detail FROM events WHERE source = 'training_health' ORDER BY line").rows()
        assert [(k, ln) for k, ln, _ in kinds] == [("loss_spike", 11), ("loss_not_recovered", 31)]
        assert json.loads(kinds[1][2])["spike_step"] == 4100
        inc = lab.incidents("r").filter(lab.incidents("r")["attempt"] == 1).row(0, named=True)
        assert inc["failure_mode"] == "loss_divergence"


def test_a_person_stopping_a_diverged_job_stops_a_divergence(tmp_path: Path) -> None:
    # the loss never came back; 20 s after the last row somebody scancels the job: the stop is the divergence's
    rows = log([*STEADY, 7.9, *([9.6] * 20)]) + "".join(meg(i, None, nan=1) + "\n" for i in range(31, 34))
    stop = T0 + dt.timedelta(seconds=8 * 33 + 20)
    cancel = f"slurmstepd: error: *** JOB 4711 ON node-01 CANCELLED AT {stop:%Y-%m-%dT%H:%M:%S} ***\n"
    with _two_attempts(tmp_path, rows + cancel) as lab:
        inc = lab.incidents("r").filter(lab.incidents("r")["attempt"] == 1).row(0, named=True)
        assert inc["failure_mode"] == "loss_divergence"
