"""The issue-29 cases the simulator plants (`adversarial.CASES`, `simulate(..., adversarial=True, cases=True)`).

Fast tests check that the bundle holds each case in the shape real clusters print it (a hung rank's records end
a step before the others', every host reporting the lost Lustre OST, the operator's drain and root's cancel (or the
node rebooted under the job), one
rank's non-finite losses among finite ones, a rollback after a diverging loss, a `latest` whose shard torch cannot
read, the job that lands on the GPU an uncorrectable ECC error left bad, a GPU's row remap left pending (or reset)
before a launch that dies on it, a gloo job's hung rank among the ranks whose receives time out). The round trip
(slow) holds the analysis to the adversarial family's bar: every incident on its mode and host, the ledger within
0.5 %, no decoy blamed, and no checkpoint reported lost that a deliberate rollback went back past.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from clusterlab import Lab
from clusterlab.simulator import simulate
from clusterlab.simulator.adversarial import CASES, LUSTRE_TARGET, MAINTENANCE_REASON, REBOOT_REASON, SDC_STEPS
from clusterlab.simulator.score import score

# as the adversarial family, over a window long enough for each run's scripted endings and the cases
FLEET = dict(providers=2, clusters_per_provider=1, nodes_per_cluster=5, gpus_per_node=2, days=0.4, step_s=8.0,
             save_every_s=600, failure_scale=200, adversarial=True, cases=True)
SEEDS = [1, 2, 3, 4, 5, 6]
LEDGER_REL = 0.005
# a seed whose two runs plant every case (a run is too short for all of them: each starts at another place in the
# order), both `remap_pending` spellings among them
FIXTURE_SEED = 4


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> tuple[Path, dict, Lab]:
    out = tmp_path_factory.mktemp("cases") / "bundle"
    simulate(out, seed=FIXTURE_SEED, **FLEET)
    lab = Lab(":memory:")
    assert lab.ingest(out).problems == []
    yield out, json.loads((out / "truth.json").read_text()), lab
    lab.close()


def _cases(truth: dict, case: str) -> list[dict]:
    return [i for i in truth["incidents"] if i.get("case") == case]


def test_every_case_is_planted(bundle) -> None:
    _, truth, _ = bundle
    planted = {i["case"] for i in truth["incidents"] if i.get("case")}
    assert set(CASES) | {"sticky_init"} <= planted
    want = {"hung_rank": "nccl_timeout", "maintenance": "preemption", "lustre": "filesystem_io",
            "sdc": "silent_data_corruption", "rollback": "loss_divergence", "sticky": "gpu_memory_ecc",
            "sticky_init": "gpu_memory_ecc", "maint_reboot": "preemption", "remap_pending": "gpu_memory_ecc",
            "remap_reset": "cuda_error", "gloo_hang": "nccl_timeout"}
    for inc in (i for i in truth["incidents"] if i.get("case")):
        assert inc["failure_mode"] == want[inc["case"]], inc


def test_hung_rank_records_end_a_step_before_the_others(bundle) -> None:
    _, truth, lab = bundle
    for inc in _cases(truth, "hung_rank"):
        last = lab.sql("SELECT rank, max(step) AS s FROM rank_steps WHERE run = ? AND attempt = ? GROUP BY rank",
                       [inc["run"], inc["attempt"]])
        mine = last.filter(pl.col("rank") == inc["rank"])["s"][0]
        others = last.filter(pl.col("rank") != inc["rank"])["s"]
        assert mine == inc["last_step"] - 1 and (others == inc["last_step"]).all()
        # the others' watchdogs fire: the symptoms; the hung rank prints none
        ev = lab.sql("SELECT rank FROM events WHERE kind = 'watchdog_timeout' AND run = ? AND attempt = ?",
                     [inc["run"], inc["attempt"]])
        n = len(next(a for a in truth["attempts"] if (a["run"], a["attempt"]) == (inc["run"], inc["attempt"]))["hosts"])
        assert set(ev["rank"]) == set(range(n * FLEET["gpus_per_node"])) - {inc["rank"]}


def test_lustre_target_is_reported_by_every_host(bundle) -> None:
    out, truth, lab = bundle
    for inc in _cases(truth, "lustre"):
        assert inc["host"] == LUSTRE_TARGET
        att = next(a for a in truth["attempts"] if (a["run"], a["attempt"]) == (inc["run"], inc["attempt"]))
        lost = lab.sql("SELECT DISTINCT host FROM events WHERE source = 'kernel' AND text LIKE ? AND text LIKE "
                       "'%was lost%'", [f"%Connection to {LUSTRE_TARGET}%"])
        seen = set(lost["host"]) & set(att["hosts"])
        assert len(seen) >= 3 and LUSTRE_TARGET not in att["hosts"]


def test_maintenance_drains_every_node_then_root_cancels(bundle) -> None:
    out, truth, lab = bundle
    sacct = (out / "scheduler" / "sacct.txt").read_text()
    for inc in _cases(truth, "maintenance"):
        att = next(a for a in truth["attempts"] if (a["run"], a["attempt"]) == (inc["run"], inc["attempt"]))
        assert f"|{att['job_id']}|" in sacct and "CANCELLED by 0" in next(
            ln for ln in sacct.splitlines() if f"|{att['job_id']}|" in ln)
        ctld = lab.sql("SELECT host, text FROM events WHERE source = 'slurmctld' AND text LIKE ?",
                       [f"%{MAINTENANCE_REASON}%"])
        assert set(att["hosts"]) <= set(ctld["host"])


def test_maintenance_reboot_drains_the_node_then_loses_it(bundle) -> None:
    _, truth, lab = bundle
    for inc in _cases(truth, "maint_reboot"):
        ctld = lab.sql("SELECT ts, host, text FROM events WHERE source = 'slurmctld' AND host = ?", [inc["host"]])
        drain = ctld.filter(pl.col("text").str.contains(REBOOT_REASON, literal=True))
        down = ctld.filter(pl.col("text").str.contains("not responding, setting DOWN", literal=True))
        root = dt.datetime.fromisoformat(inc["root_ts"].replace("Z", ""))
        assert drain.height and drain["ts"].max() < root and down.height and down["ts"].min() > root
        # its peers lost it as a node: the evidence alone says node_failure, the operator's words say maintenance
        peers = lab.sql("SELECT count(*) AS n FROM events WHERE run = ? AND attempt = ? AND failure_mode = 'network'",
                        [inc["run"], inc["attempt"]])
        assert peers["n"][0] > 0


def test_sdc_one_rank_nonfinite_while_the_others_stay_finite(bundle) -> None:
    _, truth, lab = bundle
    for inc in _cases(truth, "sdc"):
        bad = lab.sql("SELECT rank FROM events WHERE kind = 'loss_nonfinite' AND run = ? AND attempt = ?",
                      [inc["run"], inc["attempt"]])
        assert set(bad["rank"]) == {inc["rank"]} and bad.height == SDC_STEPS
        finite = lab.sql("SELECT count(*) AS n FROM rank_steps WHERE run = ? AND attempt = ? AND rank <> ? AND step "
                         "> ? AND isfinite(loss)", [inc["run"], inc["attempt"], inc["rank"],
                                                     inc["last_step"] - SDC_STEPS])
        assert finite["n"][0] > 0


def test_rollback_resumes_before_the_newest_save_and_loses_nothing(bundle) -> None:
    _, truth, lab = bundle
    atts = {(a["run"], a["attempt"]): a for a in truth["attempts"]}
    lost = lab.incidents().filter(pl.col("failure_mode") == "checkpoint_lost")
    for inc in _cases(truth, "rollback"):
        nxt = atts.get((inc["run"], inc["attempt"] + 1))
        if nxt is None:
            continue
        assert nxt["resumed_from"] < max(atts[(inc["run"], inc["attempt"])]["checkpoints"] or [0])
        assert not lost.filter(pl.col("run") == inc["run"], pl.col("attempt") == inc["attempt"] + 1).height
    # the lost checkpoint of the scenario: `latest` names a save whose shard torch cannot read
    truth_lost = [i for i in truth["incidents"] if i["failure_mode"] == "checkpoint_lost"]
    assert truth_lost
    for i in truth_lost:
        got = lab.sql("SELECT count(*) AS n FROM events WHERE run = ? AND attempt = ? AND text LIKE "
                      "'%failed finding central directory%'", [i["run"], i["attempt"]])
        assert got["n"][0] == 1


def test_sticky_fault_lands_on_the_same_gpu_host_and_dies_in_its_first_step(bundle) -> None:
    _, truth, lab = bundle
    atts = {(a["run"], a["attempt"]): a for a in truth["attempts"]}
    for inc in _cases(truth, "sticky_init"):
        before = next(i for i in truth["incidents"] if (i["run"], i["attempt"]) == (inc["run"], inc["attempt"] - 1)
                      and i["kind"] == "interruption")
        assert before.get("case") == "sticky" and before["host"] == inc["host"]
        a = atts[(inc["run"], inc["attempt"])]
        assert a["first_step"] == a["last_step"]
        xid48 = lab.sql("SELECT count(*) AS n FROM events WHERE host = ? AND xid = 48", [inc["host"]])
        oom = lab.sql("SELECT count(*) AS n FROM events WHERE run = ? AND attempt = ? AND text LIKE "
                      "'%CUDA out of memory%'", [inc["run"], inc["attempt"]])
        assert xid48["n"][0] >= 1 and oom["n"][0] >= 1


def _incident(lab: Lab, inc: dict) -> dict:
    """The analysis' attempt-end incident of a truth incident's attempt, with its evidence."""
    got = lab.incidents().filter(pl.col("run") == inc["run"], pl.col("attempt") == inc["attempt"],
                                 pl.col("kind") != "checkpoint_lost", pl.col("failure_mode") != "checkpoint_lost")
    row = got.filter(pl.col("failure_mode") == inc["failure_mode"]).row(0, named=True)
    row["evidence"] = lab.evidence(row["incident_id"])
    return row


def _attempt(truth: dict, inc: dict) -> dict:
    return next(a for a in truth["attempts"] if (a["run"], a["attempt"]) == (inc["run"], inc["attempt"]))


def _ts(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso.replace("Z", ""))


def test_a_row_remap_left_pending_before_the_launch_leads_the_evidence_of_its_death(bundle) -> None:
    _, truth, lab = bundle
    incs = _cases(truth, "remap_pending")
    spellings = set()
    for inc in incs:
        att = _attempt(truth, inc)
        start = _ts(att["start_ts"])
        marked = lab.sql("SELECT ts, pci_bus FROM events WHERE host = ? AND xid = 63 AND text LIKE '%Row Remapper: "
                         "New row (0x% marked for remapping, reset gpu to activate.'", [inc["host"]])
        assert marked.height == 1 and marked["ts"][0] < start, marked
        resets = lab.sql("SELECT count(*) AS n FROM events WHERE host = ? AND kind = 'slurm_node_resume' AND ts "
                         "BETWEEN ? AND ?", [inc["host"], marked["ts"][0], start])
        assert resets["n"][0] == 0  # nobody reset the GPU
        # its death: an Xid 48 on that GPU, or a bare CUDA error with nothing new in the kernel log
        death = lab.sql("SELECT xid, pci_bus FROM events WHERE host = ? AND xid IS NOT NULL AND ts > ? AND ts < ?",
                        [inc["host"], start, _ts(att["end_ts"])])
        assert death["xid"].to_list() in ([48], []) and set(death["pci_bus"]) <= set(marked["pci_bus"])
        spellings.add(bool(death.height))
        got = _incident(lab, inc)
        assert (got["host"], got["rank"]) == (inc["host"], inc["rank"])
        assert got["evidence"]["xid"][0] == 63, got["evidence"]
    assert spellings == {True, False}  # the fixture's seed plants both


def test_a_row_remap_reset_before_the_launch_leaves_the_users_error_the_users(bundle) -> None:
    _, truth, lab = bundle
    incs = _cases(truth, "remap_reset")
    assert incs
    for inc in incs:
        start = _ts(_attempt(truth, inc)["start_ts"])
        marked = lab.sql("SELECT ts FROM events WHERE host = ? AND xid = 63 AND source = 'kernel'", [inc["host"]])
        resumed = lab.sql("SELECT ts FROM events WHERE host = ? AND kind = 'slurm_node_resume' AND ts > ? AND ts < ?",
                          [inc["host"], marked["ts"][0], start])
        assert marked.height == 1 and marked["ts"][0] < start and resumed.height == 1
        got = _incident(lab, inc)
        assert got["host"] == inc["host"] and 63 not in got["evidence"]["xid"].to_list()


def test_gloo_hang_the_rank_that_never_began_the_step_is_blamed_not_those_that_timed_out(bundle) -> None:
    _, truth, lab = bundle
    incs = _cases(truth, "gloo_hang")
    assert incs
    for inc in incs:
        key = [inc["run"], inc["attempt"]]
        ranks = lab.sql("SELECT rank, max(step) AS s FROM rank_steps WHERE run = ? AND attempt = ? GROUP BY rank", key)
        assert ranks["s"].n_unique() == 1  # every rank's records end together: they cannot tell the hung rank
        n = ranks.height
        stalls = lab.sql("SELECT rank, detail FROM events WHERE kind = 'step_stalled' AND run = ? AND attempt = ?", key)
        assert set(stalls["rank"]) == set(range(n)) - {inc["rank"]}
        timeouts = lab.sql("SELECT rank, text FROM events WHERE kind = 'watchdog_timeout' AND run = ? AND attempt = ?",
                           key)
        assert set(timeouts["rank"]) == set(range(n)) - {inc["rank"]}
        assert timeouts["text"].str.contains("gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 600000ms "
                                             "for recv operation to complete").all()
        assert not lab.sql("SELECT count(*) AS n FROM events WHERE run = ? AND attempt = ? AND text LIKE "
                           "'%ProcessGroupNCCL%'", key)["n"][0]
        got = _incident(lab, inc)
        assert (got["host"], got["rank"]) == (inc["host"], inc["rank"])
        assert got["evidence"]["kind"][0] == "stopped_first"


def test_every_case_is_planted_by_some_seed_of_the_round_trip(tmp_path: Path) -> None:
    planted: dict[str, list[int]] = {}
    for seed in SEEDS:
        simulate(tmp_path / str(seed), seed=seed, **FLEET)
        truth = json.loads((tmp_path / str(seed) / "truth.json").read_text())
        for case in {i["case"] for i in truth["incidents"] if i.get("case")}:
            planted.setdefault(case, []).append(seed)
    assert set(CASES) <= set(planted), planted
    assert all(len(planted[c]) >= 2 for c in CASES), planted


def test_cases_off_leave_the_adversarial_family_as_it_was(tmp_path: Path) -> None:
    simulate(tmp_path / "a", seed=3, **dict(FLEET, days=0.2, cases=False))
    truth = json.loads((tmp_path / "a" / "truth.json").read_text())
    assert "cases" not in truth["config"] and not [i for i in truth["incidents"] if i.get("case")]


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_round_trip_cases(tmp_path: Path, seed: int) -> None:
    simulate(tmp_path, seed=seed, **FLEET)
    truth = json.loads((tmp_path / "truth.json").read_text())
    with Lab(":memory:") as lab:
        assert lab.ingest(tmp_path).problems == []
        result = score(lab, tmp_path, rel=LEDGER_REL)
        lost = {(r["run"], r["attempt"]) for r in lab.incidents().filter(
            pl.col("failure_mode") == "checkpoint_lost").iter_rows(named=True)}
    problems = "\n".join(result.report())
    assert not result.missed, f"recall {result.recall:.0%} of {result.incidents}:\n{problems}"
    assert not result.off, problems
    assert result.decoy_hosts_blamed == 0, problems
    want_lost = {(i["run"], i["attempt"]) for i in truth["incidents"] if i["failure_mode"] == "checkpoint_lost"}
    assert lost == want_lost  # no rollback reported as a lost checkpoint
    assert {i["case"] for i in truth["incidents"] if i.get("case")} & set(CASES)


def test_simulate_command_plants_the_cases_only_with_adversarial(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from clusterlab.cli.simulate import simulate as simulate_cmd

    runner = CliRunner()
    refused = runner.invoke(simulate_cmd, ["--out", str(tmp_path / "a"), "--cases"])
    assert refused.exit_code == 2 and "--cases needs --adversarial" in refused.output
    ok = runner.invoke(simulate_cmd, ["--out", str(tmp_path / "b"), "--adversarial", "--cases", "--seed",
                                      str(FIXTURE_SEED), "--providers", "2",
                                      "--clusters-per-provider", "1", "--nodes-per-cluster", "5", "--gpus-per-node",
                                      "2", "--days", "0.4", "--failure-scale", "200", "--step-s", "8"])
    assert ok.exit_code == 0, ok.output
    truth = json.loads((tmp_path / "b" / "truth.json").read_text())
    assert truth["config"].get("cases") is True
    assert set(CASES) <= {i["case"] for i in truth["incidents"] if i.get("case")}
