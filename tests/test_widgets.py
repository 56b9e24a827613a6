"""The Explorer and RelaunchPanel: selectors drive what the views show (asserted on the frames behind them)."""

from __future__ import annotations

import datetime as dt
import shutil
import statistics
import time
import types
from pathlib import Path

import polars as pl
import pytest
from timelines import Attempt, write_run

from clusterlab import Lab
from clusterlab.ingest import attempts
from clusterlab.simulator.big_run import write_big_run
from clusterlab.widgets import Explorer, RelaunchPanel, frames, html
from conftest import ROOT

RUN = "llama8b-pretrain"
XID_INCIDENT = f"{RUN}:1:end"  # Xid 79 on east-003, then watchdog timeouts on every rank
NET_INCIDENT = f"{RUN}:2:end"  # IB link down on east-002


@pytest.fixture(scope="module")
def demo(bundle_db_copy) -> Lab:
    """The sample bundle, ingested once for the session; tests undo their annotations."""
    with Lab(bundle_db_copy) as lab:
        yield lab


@pytest.fixture
def ex(demo: Lab) -> Explorer:
    yield Explorer(demo, run=RUN)
    demo.con.execute("DELETE FROM annotations")


def test_run_selector_updates_ledger_incidents_and_timeline_together(ex: Explorer, demo: Lab) -> None:
    before = ex.timeline_image.value
    assert set(ex.incidents_frame["incident_id"].str.split(":").list.first()) == {RUN}
    ex.run.value = "mm7b-sft"
    assert set(ex.incidents_frame["incident_id"].str.split(":").list.first()) == {"mm7b-sft"}
    assert ex.attribution.run == "mm7b-sft"
    assert ex.ledger_frame["gpu_hours"].sum() == pytest.approx(demo.attribute("mm7b-sft").gpu_hours)
    assert bytes(ex.timeline_image.value) != bytes(before) and bytes(ex.timeline_image.value).startswith(b"\x89PNG")
    assert "mm7b-sft" in ex.summary.value
    assert ex.incident.value in ex.incidents_frame["incident_id"].to_list()


def test_a_run_without_a_ledger_shows_its_incidents_and_why_it_has_no_ledger(lab: Lab, tmp_path: Path) -> None:
    # a run whose only log is torchrun's failure output: incidents, and no step to price them by
    write_run(lab.con, "r1", 16, [Attempt(0, 10, [5.0] * 20, tail_s=30)])
    log = tmp_path / "runs" / "oom-only" / "attempt-1" / "train.log"
    log.parent.mkdir(parents=True)
    shutil.copy(ROOT / "data_samples" / "torch" / "legacy_1_13.log", log)
    lab.ingest(log)
    ex = Explorer(lab, run="r1")
    before = bytes(ex.timeline_image.value)
    assert bytes(ex.ledger_image.value).startswith(b"\x89PNG")
    ex.run.value = "oom-only"
    assert "no GPU-time ledger for oom-only" in ex.summary.value and "no step times" in ex.summary.value
    assert "r1" not in ex.summary.value and ex.error.value == ""
    assert ex.ledger_image.value == b"" and not ex.ledger_frame.height  # no waterfall, least of all the last run's
    timeline = bytes(ex.timeline_image.value)
    assert timeline.startswith(b"\x89PNG") and timeline != before
    ends = [i for i in ex.incidents_frame["incident_id"].to_list() if i.endswith(":end")]
    assert ends and ex.incident.value in ex.incidents_frame["incident_id"].to_list() and ex.evidence_frame.height
    assert set(ex.evidence_frame["incident_id"]) == {ex.incident.value}


def test_a_callback_error_shows_in_the_widget_and_clears_the_figures_before_it(lab: Lab) -> None:
    write_run(lab.con, "r1", 16, [Attempt(0, 10, [5.0] * 20, tail_s=30)])
    write_run(lab.con, "r2", 16, [Attempt(600, 10, [5.0] * 20, tail_s=30)])
    ex = Explorer(lab, run="r1")
    assert bytes(ex.ledger_image.value).startswith(b"\x89PNG") and ex.ledger_frame.height
    lab.con.execute("ALTER TABLE checkpoints RENAME TO checkpoints_gone")  # r2 can no longer be read
    ex.run.value = "r2"
    assert "could not show run r2" in ex.error.value and "CatalogException" in ex.error.value
    assert ex.error.value.count("\n") == 0 and isinstance(ex.last_error, Exception)
    assert ex.ledger_image.value == b"" and ex.timeline_image.value == b"" and "r1" not in ex.summary.value
    assert not ex.ledger_frame.height and not ex.incidents_frame.height and ex.attribution is None
    lab.con.execute("ALTER TABLE checkpoints_gone RENAME TO checkpoints")
    ex.run.value = "r1"  # the next view that works clears the error
    assert ex.error.value == "" and bytes(ex.ledger_image.value).startswith(b"\x89PNG")


def test_incident_detail_shows_confidence_and_rejected_candidates(ex: Explorer, demo: Lab) -> None:
    ex.incident.value = f"{RUN}:3:end"
    inc = demo.incidents(RUN).filter(pl.col("incident_id") == f"{RUN}:3:end").row(0, named=True)
    assert ex.rejected_frame["reason"].to_list() == [c["reason"] for c in inc["rejected"]]
    assert "confidence" in ex.evidence_html.value and f"{inc['confidence']:.2f}" in ex.evidence_html.value
    assert "east-004&#x27;s ranks and the job kept stepping" in ex.evidence_html.value
    assert "nodes/east-004/dmesg:3" in ex.evidence_html.value
    assert "confidence" in ex.incidents_frame.columns


def test_provider_filter_narrows_clusters_and_runs(ex: Explorer) -> None:
    ex.provider.value = "borealis"
    assert list(ex.cluster.options) == ["(all)", "bor-1"]
    assert list(ex.run.options) == ["mm7b-sft"] and ex.run.value == "mm7b-sft"
    ex.provider.value = "acme"
    ex.cluster.value = "acme-west"
    assert set(ex.run.options) == {"ds1b-ablation", "hf-eval-sweep"}
    assert ex.run.value in ex.run.options
    ex.select_run(RUN)  # widens the filters again
    assert ex.provider.value == "(all)" and ex.run.value == RUN


def test_time_range_limits_incidents_and_ledger_to_overlapping_attempts(ex: Explorer, demo: Lab) -> None:
    first = demo.attempts(RUN).row(0, named=True)
    marks = [v for _, v in ex.window.options]
    ex.window.value = (marks[0], max(m for m in marks if m <= first["end_ts"]))
    assert set(ex.incidents_frame["attempt"].to_list()) == {1}
    full = demo.attribute(RUN)
    attempt1 = full.rows.filter(pl.col("attempt") == 1)["gpu_hours"].sum()
    assert ex.ledger_frame["gpu_hours"].sum() == pytest.approx(attempt1)
    assert ex.attribution.gpu_hours < full.gpu_hours


def test_selecting_an_incident_shows_its_evidence_with_file_and_line(ex: Explorer) -> None:
    ex.incident.value = NET_INCIDENT
    assert set(ex.evidence_frame["incident_id"]) == {NET_INCIDENT}
    ex.incident.value = XID_INCIDENT
    top = ex.evidence_frame.row(0, named=True)
    assert top["xid"] == 79 and top["host"] == "east-003"
    assert f"nodes/east-003/dmesg:{top['line']}" in ex.evidence_html.value
    assert ex.host.value == "east-003"  # the incident's host is selected with it
    assert "GPU has fallen off the bus" in ex.evidence_html.value


def test_host_history_spans_runs_and_flags_a_repeat_offender(ex: Explorer) -> None:
    ex.incident.value = XID_INCIDENT
    assert ex.host_frame["incident_id"].to_list() == [XID_INCIDENT]
    assert "repeat offender" not in ex.host_html.value
    assert "gpu_fell_off_bus" in ex.host_events_frame["failure_mode"].to_list()
    # a reviewer pins the second attempt's failure on the same node: now it has failed twice
    ex.incident.value = NET_INCIDENT
    ex.review_host.value = "east-003"
    ex.save_button.click()
    ex.host.value = "east-003"
    assert set(ex.host_frame["incident_id"]) == {XID_INCIDENT, NET_INCIDENT}
    assert "repeat offender" in ex.host_html.value


def test_correction_through_the_widget_lands_in_lab_incidents(ex: Explorer, demo: Lab) -> None:
    ex.incident.value = NET_INCIDENT
    ex.review_mode.value = "pcie_error"
    ex.review_note.value = "AER storm before the link flap"
    ex.review_ticket.value = "ACME-4821"
    ex.review_status.value = "with_provider"
    ex.save_button.click()
    row = demo.incidents(RUN).filter(pl.col("incident_id") == NET_INCIDENT).row(0, named=True)
    assert (row["failure_mode"], row["ticket"], row["status"]) == ("pcie_error", "ACME-4821", "with_provider")
    assert row["overridden"] and row["detected_failure_mode"] == "network"
    shown = ex.incidents_frame.filter(pl.col("incident_id") == NET_INCIDENT).row(0, named=True)
    assert shown["failure_mode"] == "pcie_error" and ex.incident.value == NET_INCIDENT
    assert "pcie_error" in ex.attribution.by("failure_mode")["failure_mode"].to_list()


def test_confirming_keeps_the_detected_answer_and_records_the_review(ex: Explorer, demo: Lab) -> None:
    ex.incident.value = XID_INCIDENT
    ex.review_mode.value = "unknown"  # ignored: confirm records what was detected
    ex.confirm_button.click()
    row = demo.incidents(RUN).filter(pl.col("incident_id") == XID_INCIDENT).row(0, named=True)
    assert row["failure_mode"] == "gpu_fell_off_bus" and not row["overridden"] and row["note"] == "confirmed"


def test_an_invalid_annotation_is_reported_not_raised(ex: Explorer) -> None:
    ex.incident.value = XID_INCIDENT
    ex.review_status.options = [*ex.review_status.options, "bogus"]
    ex.review_status.value = "bogus"
    ex.save_button.click()
    assert "status must be one of" in ex.review_message.value


def test_evidence_text_is_html_escaped(ex: Explorer, demo: Lab) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    demo.con.execute("UPDATE events SET text = ? || text WHERE kind = 'xid'", [hostile])
    try:
        fresh = Explorer(demo, run=RUN)
        fresh.incident.value = XID_INCIDENT
        assert fresh.evidence_frame["text"][0].startswith(hostile)  # the frame keeps the raw line
        assert hostile not in fresh.evidence_html.value
        assert "&lt;img src=x onerror=alert(1)&gt;" in fresh.evidence_html.value
    finally:
        demo.con.execute("UPDATE events SET text = replace(text, ?, '') WHERE kind = 'xid'", [hostile])
    page = html.evidence(pl.DataFrame({"rank_in_incident": [1], "ts": [None], "host": ["<h>"], "source": ["k"],
                                       "kind": ["x"], "file": ['/a/"b"&c'], "line": [3], "text": ["</td>"]}))
    assert "&lt;h&gt;" in page and "&lt;/td&gt;" in page and 'title="/a/&quot;b&quot;&amp;c:3"' in page


def test_lazy_tabs_show_stragglers_losses_and_provider_mix(ex: Explorer) -> None:
    assert not ex.step_stats_frame.height  # not drawn until its tab is opened
    ex.tabs.selected_index = ex.tabs.titles.index("Step times")
    top = ex.step_stats_frame.row(0, named=True)
    assert top["host"] == "east-005" and top["straggler"] and top["p99"] > 1.2 * top["fleet_median_s"]
    # the slow stretch itself, over time: east-005's line stands above the median for its stretch only
    series = ex.step_series_frame.pivot(on="series", index="ts", values="value").drop_nulls("host:east-005")
    slow = series.filter(pl.col("host:east-005") > 1.2 * pl.col("median"))
    inc = ex.data(RUN).incidents.filter(pl.col("kind") == "straggler").row(0, named=True)
    assert slow.height >= 10 and slow.height < series.height / 4
    assert slow["ts"].min() >= inc["root_ts"] - dt.timedelta(minutes=2)
    assert slow["ts"].max() <= inc["exit_ts"] + dt.timedelta(minutes=2)
    assert bytes(ex.steps_series_image.value).startswith(b"\x89PNG")
    ex.tabs.selected_index = ex.tabs.titles.index("Loss heatmap")
    heat = ex.heatmap_frame
    assert heat["host"][0] == "east-003"
    assert heat.select(pl.exclude("host")).sum_horizontal().sum() == pytest.approx(
        ex.ledger_frame.filter(pl.col("category") != "productive")["gpu_hours"].sum())
    ex.tabs.selected_index = ex.tabs.titles.index("Providers")
    assert {"acme", "borealis"} <= set(ex.mix_frame["provider"])
    ex.provider.value = "borealis"
    assert set(ex.mix_frame["provider"]) == {"borealis"}


def test_relaunch_panel_shows_the_real_plan_of_the_sample_run(demo: Lab) -> None:
    panel = RelaunchPanel(demo, RUN)
    assert panel.message is None and not panel.dry_run_button.disabled
    assert set(panel.exclude_frame["host"]) == {"east-002", "east-003"}
    assert panel.plan == demo.relaunch_plan(RUN).to_dict()
    assert "--exclude=east-[002-003]" in panel.view.value
    panel.dry_run_button.click()
    assert "nothing was executed" in panel.status.value
    assert demo.sql("SELECT count(*) AS n FROM relaunches")["n"][0] == 0


def test_relaunch_panel_says_when_it_cannot_plan(demo: Lab) -> None:
    panel = RelaunchPanel(demo, "no-such-run")
    assert panel.plan is None and "could not plan" in panel.message
    assert panel.dry_run_button.disabled


def test_relaunch_panel_shows_the_plan_escaped_and_dry_runs(demo: Lab, monkeypatch) -> None:
    plan = {"run": RUN, "exclude": [{"host": "east-003", "reason": "Xid 79 <fell off bus>",
                                     "failure_mode": "gpu_fell_off_bus", "incident": XID_INCIDENT}],
            "drain": [{"host": "east-003", "reason": "clusterlab: Xid 79"}],
            "checkpoint": {"step": 500, "path": "/ckpt/step-500", "verified": True, "skipped": [600]},
            "nodes_needed": 4, "nodes_available": 5, "recompute_gpu_hours": 3.3, "backend": "slurm",
            "command": ["sbatch", "--exclude=east-003", "train.sh"], "executed": False}
    calls = []

    def planner(run):
        calls.append(run)
        return types.SimpleNamespace(to_dict=lambda: plan)

    monkeypatch.setattr(demo, "relaunch_plan", planner)
    panel = RelaunchPanel(demo, RUN)
    assert panel.exclude_frame["host"].to_list() == ["east-003"]
    assert "Xid 79 &lt;fell off bus&gt;" in panel.view.value
    assert "sbatch --exclude=east-003 train.sh" in panel.view.value
    panel.dry_run_button.click()
    assert calls == [RUN, RUN] and "nothing was executed" in panel.status.value


@pytest.fixture(scope="module")
def big() -> Lab:
    """A 1,024-node (8,192-GPU) run of 800 steps in 4 attempts (6.6M rank rows), and a small one to switch from."""
    with Lab(":memory:") as lab:
        lab.con.execute("INSERT INTO providers VALUES ('p', 2.0, NULL)")
        lab.con.execute("INSERT INTO clusters (cluster, provider, gpu, gpus_per_node) VALUES ('c', 'p', 'H100-SXM', 8)")
        write_big_run(lab, "big", 8192, 800, 4, "c")
        write_big_run(lab, "small", 16, 400, 2, "c")
        attempts.refresh(lab.con)
        yield lab


def _timed(action) -> float:
    t = time.perf_counter()
    action()
    return time.perf_counter() - t


def test_a_1024_node_run_re_renders_within_a_sanity_bound(big: Lab, record_property) -> None:
    # NOTE: the speed goal (under 0.3 s) is measured by benchmarks/widgets.py; a test on a shared
    # machine can only catch a re-render that got an order of magnitude slower.
    ex = Explorer(big, run="big")  # first view computes and caches the run's attribution
    assert ex.attribution.gpus == 8192 and len(ex.host.options) >= 1024
    ex.run.value = "small"
    assert ex.incidents_frame.height
    marks = [v for _, v in ex.window.options]
    switch, window, incident = [], [], []
    for _ in range(3):
        ex.run.value = "small"
        switch.append(_timed(lambda: setattr(ex.run, "value", "big")))
        marks = [v for _, v in ex.window.options]
        window.append(_timed(lambda m=marks: setattr(ex.window, "value", (m[0], m[len(m) // 2]))))
        others = [i for i in ex.incidents_frame["incident_id"] if i != ex.incident.value]
        incident.append(_timed(lambda o=others: setattr(ex.incident, "value", o[0])))
    assert ex.attribution.run == "big" and ex.incidents_frame["incident_id"].str.starts_with("big:").all()
    figures = {"run switch": statistics.median(switch), "time range": statistics.median(window),
               "incident": statistics.median(incident)}
    for name, seconds in figures.items():
        record_property(name, round(seconds, 3))
    print("re-render seconds (median of 3):", {k: round(v, 3) for k, v in figures.items()})
    assert max(figures.values()) < 10, figures
    ex.tabs.selected_index = ex.tabs.titles.index("Step times")
    assert ex.step_stats_frame["host"][0] == "big-0007" and ex.step_stats_frame["hosts_total"][0] == 1024


def test_frames_time_marks_and_overlap() -> None:
    import datetime as dt

    a, b = dt.datetime(2026, 11, 24, 8), dt.datetime(2026, 11, 24, 10)
    marks = frames.time_marks(a, b, 4)
    assert marks[0] == a and marks[-1] == b and len(marks) == 5
    f = pl.DataFrame({"s": [a, b], "e": [a + dt.timedelta(minutes=5), None]})
    assert frames.overlapping(f, "s", "e", a + dt.timedelta(minutes=10), None)["s"].to_list() == [b]


def test_tab_titles_fit_a_jupyterlab_tab(ex: Explorer) -> None:
    from clusterlab.widgets import explorer

    assert ex.tabs.titles == explorer.TABS
    assert max(map(len, explorer.TABS)) <= 14  # a tab is 144 px: "Lost by host × day" read "Lost by host × da"


def test_the_provider_mix_draws_no_empty_provider(ex: Explorer) -> None:
    from matplotlib.figure import Figure

    from clusterlab.plots import charts

    ex.tabs.selected_index = ex.tabs.titles.index("Providers")
    assert set(ex.mix_frame["provider"]) == {"acme", "borealis"}  # hf-eval-sweep's incident: its cluster's provider
    assert ex.mix_frame.filter(pl.col("failure_mode") == "manual_stop")["provider"].to_list() == ["acme"]
    ax = charts.failure_mix(ex.mix_frame, ax=Figure().subplots())
    assert [t.get_text() for t in ax.get_yticklabels()] == ["acme", "borealis"]
    # a zero-cost incident (a run without a ledger) draws no bar and no legend entry, under no empty provider
    unknown = pl.DataFrame({"provider": ["acme", "none"], "failure_mode": ["network", "manual_stop"],
                            "incidents": [1, 1], "gpu_hours_lost": [2.0, 0.0]})
    ax = charts.failure_mix(unknown, ax=Figure().subplots())
    assert [t.get_text() for t in ax.get_yticklabels()] == ["acme"]
    assert "manual_stop" not in [t.get_text() for t in ax.get_legend().get_texts()]


def test_tables_scroll_in_their_box_instead_of_running_past_the_explorer(ex: Explorer) -> None:
    for view in (ex.incidents_html, ex.evidence_html, ex.host_html):
        assert "cl-html" in view._dom_classes
    # the HTML widget's content may shrink below its table's width, so the table's box scrolls sideways
    assert ".cl-html>.widget-html-content,.cl-html>.jupyter-widget-html-content{min-width:0}" in ex.incidents_html.value
    assert "max-width:100%" in ex.incidents_html.value
