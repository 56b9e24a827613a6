"""A scorecard whose numbers agree: each figure printed in more than one place is the same everywhere.

Issue 31, item 5, tried on the demo bundle (week 2026-W48): the checkpoint table said saves every 9 min 3 s
and 1.06 GPU-h to gain while the what-if said 523 s and 0.687; acme's exposure was 57.5, 49.3 and 44.0
GPU-h in three tables; a what-if row netted one run's extra cost into another's saving; a run's wall time
was 0.2023 h in `runs` and 0.22 h in `attribute`; "move to borealis would save 20.3 GPU-hours" rested on
13.3 GPU-h without a failure. Each figure now has one definition, computed once, and these tests read it
back from every table, document and command that prints it.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from clusterlab import Lab
from clusterlab.account import advice, fleet
from clusterlab.cli import main
from clusterlab.reports import render, scorecard, what_if_week
from clusterlab.whatif import provider as provider_whatif
from clusterlab.whatif.what_if import Pricing, WhatIf, training_interval_s
from clusterlab.widgets import Explorer

WEEK = "2026-W48"
SCORECARD = importlib.import_module("clusterlab.reports.scorecard")  # the module, not the function of its name
RUNS = ("llama8b-pretrain", "ds1b-ablation", "mm7b-sft", "hf-eval-sweep")


@pytest.fixture(scope="module")
def blab(bundle_db_copy: Path):
    with Lab(bundle_db_copy, read_only=True) as lab:
        yield lab


@pytest.fixture(scope="module")
def sc(blab: Lab):
    return scorecard(blab.con, WEEK)


@pytest.fixture(scope="module")
def md(sc) -> str:
    return render.render_scorecard(sc, "md", images={})


@pytest.fixture(scope="module")
def html(sc) -> str:
    return render.render_scorecard(sc, "html", images={})


@pytest.fixture(scope="module")
def what_ifs(blab: Lab) -> dict[str, WhatIf]:
    """`clusterlab what-if` of each run, every policy (the move to the other provider included)."""
    return {r: blab.what_if(r) for r in RUNS}


def _row(frame: pl.DataFrame, **eq) -> dict:
    for k, v in eq.items():
        frame = frame.filter(pl.col(k) == v)
    assert frame.height == 1, eq
    return frame.row(0, named=True)


def _pricing(w: WhatIf, policy: str) -> Pricing:
    (p,) = [p for p in w.pricings if p.policy == policy]
    return p


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _md_row(doc: str, first: str, header: str) -> list[str]:
    """The cells of the Markdown table row that starts with `first`, in the table whose header holds `header`."""
    table = doc[doc.index(header):]
    line = next(ln for ln in table.splitlines() if ln.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip("|").split("|")]


# --- exposure: one definition (the attempts' GPU-hours, requeue gaps out), the same in every table ---------

def test_exposure_is_one_figure_per_provider_and_cluster(sc, blab: Lab, what_ifs: dict, md: str) -> None:
    for prov in sc.providers.iter_rows(named=True):
        p = prov["provider"]
        runs = sc.runs.filter(pl.col("provider") == p)
        # the provider's, its runs' sum, the ranking's and the what-if's provider record (all its runs are this week's)
        assert _same(prov["exposure_gpu_hours"], runs["exposure_gpu_hours"].sum())
        assert _same(prov["exposure_gpu_hours"], _row(sc.ranking, provider=p)["exposure_gpu_hours"])
        assert _same(prov["exposure_gpu_hours"], provider_whatif.provider_record(blab.con, p).gpu_hours)
        shown = f"{prov['exposure_gpu_hours']:,.1f}"
        assert _md_row(md, p, "## Reliability")[1] == shown  # the Reliability table's first figure
        assert f"{shown} GPU-hours" in _row(sc.ranking, provider=p)["reliability_verdict"]
        assert prov["reliability_note"] == f"too little exposure to tell: {shown} GPU-hours, {prov['failures']} " \
                                           f"failure{'' if prov['failures'] == 1 else 's'}"
    for c in sc.clusters.filter(pl.col("exposure_gpu_hours").is_not_null()).iter_rows(named=True):
        # the checkpoint table's exposure is its run's cluster's (every run of it in the store: this week's here)
        for adv in sc.checkpoint_advice.filter(pl.col("cluster") == c["cluster"]).iter_rows(named=True):
            assert _same(adv["cluster_gpu_hours"], c["exposure_gpu_hours"])
            assert _same(adv["cluster_gpu_hours"], float(advice._exposure(blab.con, c["cluster"])["gpu_hours"].sum()))
    # the move to borealis names both providers' exposure as the Reliability table prints it
    move = _pricing(what_ifs["llama8b-pretrain"], "provider")
    for prov in sc.providers.iter_rows(named=True):
        assert f"{prov['provider']}: {prov['exposure_gpu_hours']:,.1f} GPU-hours" in move.exposure_note


def test_exposure_is_the_ledger_less_its_requeue_gaps(sc, blab: Lab) -> None:
    for r in sc.runs.iter_rows(named=True):
        a = blab.attribute(r["run"])
        gaps = float(a.ledger.filter(pl.col("category") == "restart")["gpu_hours"].sum())
        assert _same(r["exposure_gpu_hours"], a.gpu_hours - gaps) and _same(r["gpu_hours"], a.gpu_hours)


# --- the checkpoint interval: the what-if's τ, optimum, saving and verdict in both tables and the command ----

def test_checkpoint_interval_agrees_with_the_what_if(sc, blab: Lab, what_ifs: dict) -> None:
    for adv in sc.checkpoint_advice.iter_rows(named=True):
        a = blab.attribute(adv["run"])
        tau0 = training_interval_s(a.checkpoint_advice)
        assert _same(adv["train_interval_s"], tau0)
        p = _pricing(what_ifs[adv["run"]], "checkpoint_interval")
        if not p.priced:
            assert adv["gpu_hours_saved"] is None
            continue
        assert f"save after every {adv['optimal_interval_s']:.0f} s of training" in p.setting
        assert f"instead of every {tau0:.0f} s" in p.setting
        if p.stands:
            assert _same(adv["gpu_hours_saved"], p.gpu_hours_saved - p.gpu_hours_extra)
        else:  # the saving does not stand: neither table prints it, both say so in the same words
            assert adv["gpu_hours_saved"] is None and adv["advice"] == p.verdict
            assert p.verdict.startswith("too little exposure to tell: ")
    # the run's own MTBF counts the same hours as the advice's (its attempts, no requeue gaps): llama8b-pretrain
    # is alone on acme-east, so both intervals are one
    run = _row(sc.runs, run="llama8b-pretrain")
    llama = _row(sc.checkpoint_advice, run="llama8b-pretrain")
    assert _same(run["mtbf_hours_lo"], llama["mtbf_job_hours_lo"])
    assert _same(run["mtbf_hours_hi"], llama["mtbf_job_hours_hi"])
    assert llama["advice"].startswith("too little exposure to tell: across the MTBF's 95% interval")


def test_attribute_json_advice_is_the_what_ifs_saving(blab: Lab, what_ifs: dict, bundle_db_copy: Path) -> None:
    """`attribute --json`'s checkpoint_advice.gpu_hours_saved was a first-order estimate (1.06 on llama8b-pretrain)
    where `what-if` said 0.687: both are now the ledger re-priced at the optimum, and agree on whether it stands."""
    for run in RUNS:
        res = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "attribute", "--run", run, "--json"])
        assert res.exit_code == 0, res.output
        adv = json.loads(res.output)["checkpoint_advice"]
        p = _pricing(what_ifs[run], "checkpoint_interval")
        if adv is None or not p.priced:
            assert adv is None or adv["gpu_hours_saved"] is None
            continue
        assert _same(adv["gpu_hours_saved"], p.gpu_hours_saved - p.gpu_hours_extra), run
        assert adv["saving_stands"] == p.stands, run
        said = " ".join([p.verdict, *map(str, p.assumptions)])  # the span is the verdict, or an assumption
        assert f"net saving runs from {adv['gpu_hours_saved_lo']:.3g} to {adv['gpu_hours_saved_hi']:.3g}" in said
        assert _same(adv["gpu_hours_saved"], blab.attribute(run).checkpoint_advice.gpu_hours_saved)
    llama = json.loads(CliRunner().invoke(main, ["--db", str(bundle_db_copy), "attribute", "--run",
                                                 "llama8b-pretrain", "--json"]).output)["checkpoint_advice"]
    # the re-priced ledger's figure, not the first-order 1.06: 0.687 before step-time noise was work, 0.690 before
    # the steps a log never printed after a save were recompute rather than hang (eac902d, ab75e08), 0.689 after;
    # the ledger it re-prices moves by thousandths as its dating is refined
    assert abs(llama["gpu_hours_saved"] - 0.69) < 0.02 and llama["saving_stands"] is False


def test_week_what_if_sums_each_runs_own_pricing(sc, what_ifs: dict, md: str) -> None:
    providers = dict(sc.runs.select("run", "provider").iter_rows())
    for row in sc.what_if.iter_rows(named=True):
        ps = [_pricing(w, row["policy"]) for r, w in what_ifs.items() if providers.get(r) == row["provider"]]
        priced = [p for p in ps if p.priced]
        assert row["runs_priced"] == len(priced)
        if any(not p.stands for p in priced):  # the table itself says it, with no figure to act on
            assert row["verdict"].startswith("too little exposure to tell")
            assert row["gpu_hours_saved"] is None and row["gpu_hours_extra"] is None
            assert _md_row(md, row["provider"], "## What this week")[3] == "—"
            continue
        assert _same(row["gpu_hours_saved"], sum(p.gpu_hours_saved for p in priced))
        assert _same(row["gpu_hours_extra"], sum(p.gpu_hours_extra for p in priced))
        if row["gpu_hours_saved"]:
            assert f"{row['gpu_hours_saved']:.3g} GPU-hours" in row["verdict"]
    # README's figures: the what-if command and the week's table say the same
    restart = _row(sc.what_if, provider="acme", policy="in_job_restart")
    assert _same(restart["gpu_hours_saved"], _pricing(what_ifs["llama8b-pretrain"], "in_job_restart").gpu_hours_saved)


def _priced(policy: str, saved: float) -> Pricing:
    ledger = pl.DataFrame({"category": ["recompute"], "gpu_hours_actual": [1.0], "gpu_hours_what_if": [1.0 - saved]})
    return Pricing(policy, "a test setting", ledger, 2.0)


def test_one_runs_extra_cost_is_never_netted_into_anothers_saving(blab: Lab) -> None:
    """llama8b-pretrain saves 0.687, ds1b-ablation costs 0.026 more (both acme): 0.687 saved, 0.026 extra."""
    priced = {"llama8b-pretrain": WhatIf("llama8b-pretrain", [_priced("hang_timeout", 0.687)]),
              "ds1b-ablation": WhatIf("ds1b-ablation", [_priced("hang_timeout", -0.026)])}
    row = _row(what_if_week.week_what_if(blab.con, {}, priced), provider="acme", policy="hang_timeout")
    assert _same(row["gpu_hours_saved"], 0.687) and _same(row["gpu_hours_extra"], 0.026)
    assert _same(row["usd_saved"], 0.687 * 2.0) and _same(row["usd_extra"], 0.026 * 2.0)
    assert row["verdict"] == "would have saved 0.687 GPU-hours on some runs and cost 0.026 more on others"


# --- wall time: the ledger's (the scheduler's allocation) in the scorecard and `attribute` alike -------------

def test_wall_time_is_the_ledgers_in_the_scorecard_and_attribute(sc, blab: Lab, bundle_db_copy: Path,
                                                                  md: str) -> None:
    cli = CliRunner()
    for r in sc.runs.iter_rows(named=True):
        a = blab.attribute(r["run"])
        assert _same(r["wall_hours"], a.wall_hours)
        res = cli.invoke(main, ["--db", str(bundle_db_copy), "attribute", "--run", r["run"]])
        assert res.exit_code == 0, res.output
        assert f"x {a.wall_hours:.2f} h allocated" in res.output.splitlines()[0]
        assert _md_row(md, r["run"], "## Runs")[3] == f"{a.wall_hours:.2f}"
    # `clusterlab runs` counts the first to the last log line, a different span: the scorecard names its own
    assert "Allocated h (scheduler; requeue gaps in)" in md and "Wall h" not in md


# --- the verdict: delivery and reliability apart, a figure only where its interval tells -------------------

def test_ranking_gives_delivery_and_reliability_apart(sc, md: str, html: str) -> None:
    for r in sc.ranking.iter_rows(named=True):
        prov = _row(sc.providers, provider=r["provider"])
        assert f"delivery: {r['delivery_verdict']}; reliability: {r['reliability_verdict']}" in r["verdict"]
        assert f"{prov['delivered_share'] * 100:.1f}% of contracted GPU-time delivered" in r["delivery_verdict"]
        assert r["reliability_verdict"].startswith("too little exposure to tell: ")  # 49.3 and 13.3 GPU-hours
        assert f"{prov['provider_failures']} provider-caused failure(s)" in r["reliability_verdict"]
        assert _same(r["undelivered_gpu_hours"], prov["contracted_gpu_hours"] - prov["available_gpu_hours"])
        assert f"undelivered {r['undelivered_gpu_hours']:,.0f} GPU-h" in r["verdict"]
        assert r["delivery_verdict"] in md and r["delivery_verdict"] in html
        head = r["reliability_verdict"].split(" (95% CI")[0]
        assert head in md and head in html


def test_a_move_resting_on_too_little_exposure_does_not_stand(what_ifs: dict, bundle_db_copy: Path) -> None:
    move = _pricing(what_ifs["llama8b-pretrain"], "provider")
    assert move.priced and not move.stands and move.verdict.startswith("too little exposure to tell: ")
    assert "would save" not in move.verdict
    res = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "what-if", "--run", "llama8b-pretrain", "--json"])
    assert res.exit_code == 0, res.output
    doc = {p["policy"]: p for p in json.loads(res.output)["policies"]}
    assert doc["provider"]["stands"] is False and doc["provider"]["verdict"] == move.verdict
    table = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "what-if", "--run", "llama8b-pretrain"]).output
    line = next(ln for ln in table.splitlines() if ln.startswith("provider "))
    assert not re.search(r"\b20\.29", line)  # the bare saving is not printed beside its verdict


def test_scorecard_json_carries_the_same_figures(sc, bundle_db_copy: Path) -> None:
    res = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "scorecard", "--week", WEEK, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    for name in ("providers", "ranking", "checkpoint_advice", "what_if", "runs", "fleet_hosts"):
        assert doc[name] == json.loads(json.dumps(SCORECARD.records(getattr(sc, name)), default=str))


# --- the totals every table re-adds: used, lost, lost to provider faults, failures -----------------------------

def test_totals_are_the_same_in_every_table(sc) -> None:
    for prov in sc.providers.iter_rows(named=True):
        p = prov["provider"]
        runs, clusters = sc.runs.filter(pl.col("provider") == p), sc.clusters.filter(pl.col("provider") == p)
        for col in ("gpu_hours", "lost_gpu_hours", "usd_lost", "provider_usd_lost", "exposure_gpu_hours"):
            assert _same(prov[col], runs[col].sum()) and _same(prov[col], clusters[col].sum()), (p, col)
        for col in ("failures", "provider_failures", "interruptions"):
            assert prov[col] == runs[col].sum() == clusters[col].sum(), (p, col)
        modes = sc.failure_modes.filter(pl.col("provider") == p)
        blame = sc.blame.filter(pl.col("provider") == p)
        assert _same(prov["lost_gpu_hours"], modes["gpu_hours_lost"].sum())
        assert _same(prov["lost_gpu_hours"], blame["gpu_hours_lost"].sum())
        assert _same(prov["provider_usd_lost"], blame.filter(pl.col("blame") == "provider")["usd_lost"].sum())
        assert _same(prov["gpu_hours"], sc.ledger.filter(pl.col("provider") == p)["gpu_hours"].sum())
        assert f"${prov['provider_usd_lost']:,.2f} lost to provider faults" in _row(sc.ranking, provider=p)["verdict"]
    for h in sc.worst_hosts.iter_rows(named=True):
        inc = sc.incidents.filter(pl.col("host") == h["host"])
        assert _same(h["gpu_hours_lost"], inc["gpu_hours_lost"].sum()) and h["incidents"] == inc.height


# --- fleet memory: one host's incidents, GPU-hours lost and episodes, wherever they are printed ---------------

def test_fleet_memory_is_one_figure_per_host(sc, blab: Lab, bundle_db_copy: Path, md: str) -> None:
    """The scorecard's fleet table, its worst hosts, `clusterlab hosts --week` and the Explorer's host history give a
    host the same incidents, GPU-hours lost and episodes (every record of the demo is in week 48)."""
    week = blab.hosts(WEEK)
    res = CliRunner().invoke(main, ["--db", str(bundle_db_copy), "hosts", "--week", WEEK, "--json"])
    assert res.exit_code == 0, res.output
    cli = {r["host"]: r for r in json.loads(res.output)}
    assert set(cli) == set(week["host"]) == set(sc.fleet_hosts["host"])
    ex, shown = Explorer(blab, run="llama8b-pretrain"), []
    for h in sc.fleet_hosts.iter_rows(named=True):
        want = _row(week, host=h["host"])
        assert {c: h[c] for c in fleet.FLEET_COLUMNS} == want
        for col in ("incidents", "episodes", "open_episodes", "jobs_killed"):
            assert cli[h["host"]][col] == h[col], (h["host"], col)
        for col in ("gpu_hours_lost", "repair_hours"):
            assert _same(cli[h["host"]][col], h[col]), (h["host"], col)
        worst = _row(sc.worst_hosts, host=h["host"])
        assert worst["incidents"] == h["incidents"] and _same(worst["gpu_hours_lost"], h["gpu_hours_lost"])
        assert _md_row(md, h["host"], "### Fleet memory")[4] == _md_row(md, h["host"], "## Worst hosts")[5] \
            == f"{h['gpu_hours_lost']:.2f}"
        if h["host"] in ex.host.options:  # the Explorer lists the hosts of its run (llama8b-pretrain's here)
            ex.host.value = h["host"]
            shown.append(h["host"])
            assert ex.host_memory_frame.to_dicts() == [want]
            assert ex.host_history_frame.filter(pl.col("record") == "incident").height == h["incidents"]
            assert ex.host_history_frame.filter(pl.col("record") == "episode").height == h["episodes"]
            assert _same(ex.host_history_frame["gpu_hours_lost"].sum(), h["gpu_hours_lost"])
    assert {"east-002", "east-003"} <= set(shown)
    # the week's GPU-hours lost on hosts are the week's incidents' on them
    on_hosts = sc.incidents.filter(pl.col("host").is_not_null())
    assert _same(sc.fleet_hosts["gpu_hours_lost"].sum(), on_hosts["gpu_hours_lost"].sum())
