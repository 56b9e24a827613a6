"""What-if re-pricing: the policy the run had gives back its ledger; other policies say what they save or cost."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.cli import main
from clusterlab.whatif.what_if import POLICIES, Policy, PolicyError

GPUS = 16


def _three_attempts(lab: Lab, run: str = "r", cluster: str = "c1", host_2: str = "h-001") -> None:
    """Saves every 10 steps; attempt 1 dies of an Xid 79 and hangs 900 s, attempt 2 of another on `host_2`,
    attempt 3 reaches its time limit 25 steps after its last save."""
    write_run(lab.con, run, GPUS, [
        Attempt(0, 60, [5.0] * 55, saves={s: 20.0 for s in range(10, 56, 10)}, tail_s=900),
        Attempt(2000, 60, [5.0] * 50, first_step=51, load_step=50, saves={s: 20.0 for s in range(60, 101, 10)},
                tail_s=10),
        Attempt(3000, 60, [5.0] * 25, first_step=101, load_step=100, tail_s=5)], cluster=cluster)
    write_events(lab.con, [{"t": 60 + 55 * 5 + 100 + 2, "host": "h-001", "kind": "xid", "xid": 79,
                            "failure_mode": "gpu_fell_off_bus"},
                           {"t": 2000 + 60 + 50 * 5 + 100 + 2, "host": host_2, "kind": "xid", "xid": 79,
                            "failure_mode": "gpu_fell_off_bus"}], name=f"dmesg-{run}")
    write_events(lab.con, [{"t": 3000 + 60 + 125 + 1, "source": "slurm", "kind": "time_limit",
                            "failure_mode": "time_limit", "host": "h-001"}], run=run, attempt=3, name="slurm")


SWEEP = {"hang_timeout": [1, 10, 60, 600, 5000], "checkpoint_interval": [1, 10, 35, 70, 140, 5000],
         "in_job_restart": [1e-9, 30, 600, 5000]}
SPECS = ["actual", "hang_timeout=60", "checkpoint_interval=100", "checkpoint_interval=25", "checkpoint_interval=10",
         "save_on_signal", "exclude_repeat_hosts", "in_job_restart=30", "checkpoint_interval", "hang_timeout",
         "in_job_restart", "provider",
         *(f"{name}={v}" for name, values in SWEEP.items() for v in values)]


@pytest.fixture(scope="module")
def priced(tmp_path_factory) -> dict:
    """The three-attempt run: its attribution, and every policy of SPECS priced once (one attribution)."""
    with Lab(tmp_path_factory.mktemp("what-if") / "w.duckdb") as lab:
        _three_attempts(lab)
        w = lab.what_if("r", SPECS)
        return {"attribution": lab.attribute("r"), "incidents": lab.incidents("r"), "db": lab.path,
                **dict(zip(SPECS, w.pricings, strict=True))}


def _by_category(pricing, column: str) -> dict[str, float]:
    return dict(zip(pricing.ledger["category"], pricing.ledger[column], strict=True))


def test_the_policy_the_run_had_reproduces_the_ledger_exactly(priced: dict) -> None:
    actual, p = priced["attribution"].ledger, priced["actual"]
    assert p.ledger["category"].to_list() == actual["category"].to_list()
    assert p.ledger["gpu_hours_what_if"].to_list() == actual["gpu_hours"].to_list()  # to the last bit
    assert (p.gpu_hours_saved, p.gpu_hours_extra, p.categories) == (0.0, 0.0, [])


def test_hang_detector_cuts_only_the_failed_attempts_hang(priced: dict) -> None:
    p = priced["hang_timeout=60"]
    got, had = _by_category(p, "gpu_hours_what_if"), _by_category(p, "gpu_hours_actual")
    rows = priced["attribution"].rows
    long_hang = rows.filter(rows["category"] == "hang", rows["attempt"] == 1)["seconds"].sum()
    assert long_hang > 800
    assert math.isclose(had["hang"] - got["hang"], (long_hang - 60) * GPUS / 3600, rel_tol=1e-9)
    assert p.categories == ["hang"] and p.gpu_hours_extra == 0.0


def test_checkpoint_interval_trades_save_time_for_recompute(priced: dict) -> None:
    longer, shorter = priced["checkpoint_interval=100"], priced["checkpoint_interval=25"]
    had = _by_category(longer, "gpu_hours_actual")
    # the run saved after every 50 s of training (10 steps of 5 s, then a 20 s save): twice that, half the saves
    assert math.isclose(_by_category(longer, "gpu_hours_what_if")["checkpoint"], had["checkpoint"] / 2)
    assert math.isclose(_by_category(longer, "gpu_hours_what_if")["recompute"], had["recompute"] * 2)
    assert math.isclose(_by_category(shorter, "gpu_hours_what_if")["checkpoint"], had["checkpoint"] * 2)
    assert set(longer.categories) == {"checkpoint", "recompute"}


def test_a_policy_that_costs_more_says_so_instead_of_a_negative_saving(priced: dict) -> None:
    p = priced["checkpoint_interval=10"]  # a 20 s save after every 10 s of training
    assert p.gpu_hours_saved == 0.0 and p.gpu_hours_extra > 0
    assert "cost" in p.verdict and "more" in p.verdict
    assert p.to_dict()["usd_saved"] == 0.0


def test_save_on_signal_keeps_the_time_limited_attempts_work(priced: dict) -> None:
    p = priced["save_on_signal"]
    got, had = _by_category(p, "gpu_hours_what_if"), _by_category(p, "gpu_hours_actual")
    # attempt 3 lost the 25 steps after step 100 and the part of the next the kill cut short (the limit 1 s after
    # the last step's end on the slurm log's clock); one 20 s save replaces them all
    saved = (had["recompute"] - got["recompute"]) * 3600 / GPUS
    assert 25 * 5.0 < saved <= 25 * 5.0 + 1.0 + 1e-6, saved
    assert math.isclose(got["checkpoint"] - had["checkpoint"], 20.0 * GPUS / 3600, rel_tol=1e-6)
    assert any("--signal" in a for a in p.assumptions)


def test_excluding_a_repeat_offender_removes_its_second_incident(priced: dict) -> None:
    inc = priced["incidents"]
    second = inc.filter(inc["incident_id"] == "r:2:end").row(0, named=True)
    assert second["host"] == "h-001"
    p = priced["exclude_repeat_hosts"]
    assert math.isclose(p.gpu_hours_saved, second["gpu_hours_lost"], rel_tol=1e-9)
    assert "h-001" in p.setting


def test_no_repeat_offender_no_saving(lab: Lab) -> None:
    _three_attempts(lab, host_2="h-002")  # not on the attempt's hosts: attempt 2's end has no host
    (p,) = lab.what_if("r", ["exclude_repeat_hosts"]).pricings
    assert p.gpu_hours_saved == 0.0 and p.verdict == "no change on this run"


def test_in_job_restart_removes_the_requeue_gaps_of_failures_only(priced: dict) -> None:
    p = priced["in_job_restart=30"]
    rows = priced["attribution"].rows
    gaps = rows.filter(rows["category"] == "restart")["seconds"]
    assert len(gaps) == 2
    assert math.isclose(p.gpu_hours_saved, sum(g - 30 for g in gaps) * GPUS / 3600, rel_tol=1e-9)
    assert p.categories == ["restart"]


def test_every_policy_states_its_assumptions_or_why_it_is_not_priced(priced: dict) -> None:
    assert set(POLICIES) <= set(SPECS)
    for p in (priced[name] for name in POLICIES):
        assert p.policy == "actual" or p.assumptions or not p.priced
        assert p.priced or p.verdict.startswith("not priced")


def test_a_bad_policy_is_refused_with_the_list() -> None:
    with pytest.raises(PolicyError, match="hang_timeout"):
        Policy.parse("hang_timout=60")
    with pytest.raises(PolicyError, match="positive"):
        Policy.parse("hang_timeout=-5")
    assert Policy.parse("hang-timeout=90") == Policy("hang_timeout", 90.0)


def test_one_policy_may_be_given_bare(priced: dict) -> None:
    with Lab(priced["db"], read_only=True) as lab:
        (p,) = lab.what_if("r", "hang_timeout=60").pricings
    assert p.gpu_hours_saved == priced["hang_timeout=60"].gpu_hours_saved


def test_savings_and_extra_are_never_negative(priced: dict) -> None:
    for spec in SPECS:
        p = priced[spec]
        assert p.gpu_hours_saved >= 0 and p.gpu_hours_extra >= 0
        assert p.gpu_hours_saved == 0 or p.gpu_hours_extra == 0
        assert math.isclose(p.gpu_hours_saved - p.gpu_hours_extra, p.gpu_hours_actual - p.gpu_hours_what_if,
                            abs_tol=1e-12)
    # the sweep crosses from saving to costing more: both sides are reported, neither as a negative number
    assert any(priced[s].gpu_hours_extra > 0 for s in SPECS) and any(priced[s].gpu_hours_saved > 0 for s in SPECS)


def _provider_run(lab: Lab, run: str, cluster: str, provider: str, price: float, step_s: float,
                  fail: bool) -> None:
    lab.con.execute("INSERT OR REPLACE INTO providers VALUES (?, ?, NULL)", [provider, price])
    lab.con.execute("INSERT OR REPLACE INTO clusters (cluster, provider, gpu) VALUES (?, ?, 'H100 SXM')",
                    [cluster, provider])
    if fail:
        _three_attempts(lab, run, cluster)
    else:
        write_run(lab.con, run, GPUS, [Attempt(0, 60, [step_s] * 100, saves={50: 20.0, 60: 20.0})], cluster=cluster)
    lab.con.execute("UPDATE runs SET tokens_per_step = 1000000, flops_per_token = 6e10 WHERE run = ?", [run])


def test_moving_to_a_faster_provider_without_failures(lab: Lab) -> None:
    _provider_run(lab, "here", "c1", "slowco", 2.0, 5.0, fail=True)
    _provider_run(lab, "there", "c2", "fastco", 3.0, 4.0, fail=False)
    (p,) = lab.what_if("here", ["provider=fastco"]).pricings
    got, had = _by_category(p, "gpu_hours_what_if"), _by_category(p, "gpu_hours_actual")
    assert math.isclose(got["productive"], had["productive"] * 4.0 / 5.0, rel_tol=1e-6)
    assert got["restart"] == 0.0  # no failures measured there: the failures' cost goes
    assert math.isclose(p.to_dict()["usd_saved"] - p.to_dict()["usd_extra"],
                        p.gpu_hours_actual * 2.0 - p.gpu_hours_what_if * 3.0, rel_tol=1e-9)


def test_what_if_command_json_and_bad_policy(priced: dict) -> None:
    db = priced["db"]
    res = CliRunner().invoke(main, ["--db", str(db), "what-if", "--run", "r", "--policy", "hang_timeout=60",
                                    "--policy", "actual", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [p["policy"] for p in doc["policies"]] == ["hang_timeout", "actual"]
    assert doc["policies"][0]["gpu_hours_saved"] > 0 and doc["policies"][1]["gpu_hours_saved"] == 0
    res = CliRunner().invoke(main, ["--db", str(db), "what-if", "--run", "r", "--policy", "nope"])
    assert res.exit_code == 2 and "unknown policy" in res.stderr and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["--db", str(db), "what-if", "--run", "r"])
    assert res.exit_code == 0 and "assumes (hang_timeout)" in res.stdout
