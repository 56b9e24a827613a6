"""The timeline real jobs leave (issue 28): the same campaign written as requeued jobs append it, with its iteration
lines unstamped, or with one host's clock off, gives the same attempts and the same ledger, and the ledger the
campaign's own timeline says (tests/timeline_cases.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import timeline_cases as tc

from clusterlab import Lab


def _attribute(tmp_path: Path, **kw) -> tuple[pl.DataFrame, dict[str, float], pl.DataFrame]:
    bundle = tc.write(tmp_path, **kw)
    lab = Lab(tmp_path / "c.duckdb")
    lab.ingest(bundle)
    a = lab.attribute(tc.RUN)
    ends = a.incidents.filter(pl.col("kind") == "attempt_end").select("attempt", "failure_mode", "host", "root_ts")
    return lab.attempts(tc.RUN), dict(a.ledger.select("category", "gpu_hours").iter_rows()), ends


def _close(got: dict[str, float], want: dict[str, float], rel: float, total: float) -> list[str]:
    """Categories more than `rel` off (and more than 0.1 % of the whole run off, for categories near zero)."""
    return [f"{c}: {got.get(c, 0.0):.4f} vs {v:.4f}" for c, v in want.items()
            if abs(got.get(c, 0.0) - v) > max(rel * abs(v), 0.001 * total)]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[pl.DataFrame, dict[str, float], pl.DataFrame]:
    return _attribute(tmp_path_factory.mktemp("folders"), layout="folders")


def test_a_requeued_job_gives_the_ledger_of_its_own_timeline(folders) -> None:
    att, led, ends = folders
    want = tc.expected_ledger()
    total = sum(want.values())
    assert att.height == 3
    assert ends.select("attempt", "failure_mode", "host").rows() == [(1, "gpu_fell_off_bus", "gpu-02"),
                                                                     (2, "preemption", "gpu-01")]
    assert abs(sum(led.values()) - total) < 1e-6 * total  # the sum exact
    assert not _close(led, want, 0.02, total)


def test_appending_every_instance_to_one_log_gives_the_same_attempts_and_ledger(tmp_path: Path, folders) -> None:
    att, led, ends = _attribute(tmp_path, layout="appended")
    assert att.select("attempt", "start_ts", "end_ts", "first_step", "last_step").equals(
        folders[0].select("attempt", "start_ts", "end_ts", "first_step", "last_step"))
    assert not _close(led, folders[1], 0.01, sum(folders[1].values()))
    assert ends.equals(folders[2])


def test_nine_stamps_in_ten_deleted_change_no_category_by_more_than_one_percent(tmp_path: Path, folders) -> None:
    _, led, ends = _attribute(tmp_path, layout="appended", stamp_every=10)
    assert ends.select("attempt", "failure_mode", "host").equals(folders[2].select("attempt", "failure_mode", "host"))
    assert not _close(led, folders[1], 0.01, sum(folders[1].values()))
    assert not _close(led, tc.expected_ledger(), 0.02, sum(folders[1].values()))


@pytest.mark.parametrize("minutes", [-5, 5])
def test_one_hosts_clock_five_minutes_off_changes_no_category_by_more_than_one_percent(
        tmp_path: Path, folders, minutes: int) -> None:
    # its torchrun lines start the attempt's evidence before the allocation did; its Xid and its ranks' timings
    # are minutes off the log: the scheduler bounds the attempts, the ranks' shared step ends measure the clock
    att, led, ends = _attribute(tmp_path, layout="appended", skew={"gpu-02": 60.0 * minutes})
    assert att.height == 3
    assert not _close(led, folders[1], 0.01, sum(folders[1].values()))
    assert ends.select("attempt", "failure_mode", "host").equals(folders[2].select("attempt", "failure_mode", "host"))
    late = (ends["root_ts"] - folders[2]["root_ts"]).dt.total_seconds().abs().max()
    assert late < 5, late  # the Xid on the log's clock, not five minutes off


@pytest.mark.parametrize("layout", ["folders", "appended"])
def test_a_huggingface_trainer_job_steps_by_its_progress_bar(tmp_path: Path, folders, layout: str) -> None:
    # its loss dicts carry no step and no time; tqdm's bar carries both (elapsed since it began), and a save
    # ends with the files it wrote
    att, led, ends = _attribute(tmp_path, layout=layout, trainer="hf")
    assert att.select("attempt", "first_step", "last_step").equals(
        folders[0].select("attempt", "first_step", "last_step"))
    assert not _close(led, tc.expected_ledger(), 0.02, sum(folders[1].values()))
    assert ends.select("attempt", "failure_mode", "host").equals(folders[2].select("attempt", "failure_mode", "host"))


def test_attempts_shows_what_bounds_each_attempt_and_each_hosts_clock(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from clusterlab.cli import main

    bundle = tc.write(tmp_path, layout="appended", skew={"gpu-02": 300.0})
    db = str(tmp_path / "c.duckdb")
    assert CliRunner().invoke(main, ["ingest", str(bundle), "--db", db]).exit_code == 0
    res = CliRunner().invoke(main, ["attempts", "--run", tc.RUN, "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [a["start_by"] for a in doc["attempts"]] == ["sacct 71400"] * 3  # each requeued instance its own row
    off = {(c["attempt"], c["host"]): c["offset_s"] for c in doc["host_clocks"]}
    assert all(abs(off[(k, "gpu-02")] - 300) < 2 and abs(off[(k, "gpu-01")]) < 2 for k in (1, 2, 3))
    res = CliRunner().invoke(main, ["attempts", "--run", "nope", "--db", db])
    assert res.exit_code != 0 and "no run 'nope'" in res.output


def test_an_array_task_named_by_its_own_job_id_links_to_its_sacct_row(tmp_path: Path) -> None:
    # sacct prints the task as 71400_3 (JobIDRaw 71403); slurmstepd names the raw id; the job's name is not the run's
    log = tmp_path / "runs" / "sweep-7" / "attempt-1" / "train.log"
    log.parent.mkdir(parents=True)
    t0 = tc.T0
    lines = [tc._iteration(s, t0 + tc.dt.timedelta(seconds=60 + 5 * s), True) for s in range(10, 201, 10)]
    end = t0 + tc.dt.timedelta(seconds=60 + 5 * 200 + 30)
    lines.append(f"slurmstepd: error: *** JOB 71403 ON gpu-01 CANCELLED AT {end:%Y-%m-%dT%H:%M:%S} DUE TO TIME "
                 "LIMIT ***")
    log.write_text("\n".join(lines) + "\n")
    (tmp_path / "scheduler").mkdir()
    (tmp_path / "scheduler" / "sacct.txt").write_text(
        "JobID|JobIDRaw|JobName|State|ExitCode|Start|End|NNodes|NodeList\n"
        f"71400_2|71402|lr-sweep|COMPLETED|0:0|{t0 - tc.dt.timedelta(hours=2):%Y-%m-%dT%H:%M:%S}|"
        f"{t0 - tc.dt.timedelta(hours=1):%Y-%m-%dT%H:%M:%S}|1|gpu-07\n"
        f"71400_3|71403|lr-sweep|TIMEOUT|0:0|{t0:%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|2|gpu-[01-02]\n")
    with Lab(tmp_path / "c.duckdb") as lab:
        lab.ingest(tmp_path)
        spans, _, _ = lab.spans("sweep-7")
        assert spans["job_id"].to_list() == ["71400_3"] and spans["start_ts"][0] == t0
        assert lab.attempts("sweep-7")["hosts"][0].to_list() == ["gpu-01", "gpu-02"]  # the allocation's nodes


@pytest.mark.parametrize("after", [0, 3, 9])
def test_an_unstamped_decoy_anywhere_in_its_interval_changes_no_root_cause(tmp_path: Path, folders, after: int) -> None:
    # one stamp in ten: the warning's interval spans ten records wherever it sits; the job steps on past it
    _, led, ends = _attribute(tmp_path, layout="appended", stamp_every=10, decoy_after=after)
    assert ends.select("attempt", "failure_mode", "host").equals(folders[2].select("attempt", "failure_mode", "host"))
    assert not _close(led, folders[1], 0.01, sum(folders[1].values()))
