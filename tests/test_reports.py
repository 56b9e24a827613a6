"""Scorecards and incident reports: the attribution API's own figures, log text kept as text, self-contained HTML."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from nbclient import NotebookClient
from timelines import T0, Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.account import advice
from clusterlab.cli import main
from clusterlab.cli.reports import COMMANDS
from clusterlab.reports import fmt, incident_report, render, scorecard
from conftest import ROOT, SAMPLES

WEEK = "2026-W48"
CHROMIUM = "/usr/bin/chromium"
PAYLOAD = ('<script>alert(1)</script> "><img src=x onerror=alert(1)> **bold** [x](javascript:alert(1)) '
           "`tick` ```fence``` a|b &amp; <b>tag</b>")


# --- fixtures: the bundle ingested once, attributed once -------------------------------------------------

@pytest.fixture(scope="module")
def bundle_db(bundle_db_copy) -> Path:
    return bundle_db_copy


@pytest.fixture(scope="module")
def blab(bundle_db: Path):
    with Lab(bundle_db, read_only=True) as lab:
        yield lab


@pytest.fixture(scope="module")
def sc(blab: Lab):
    return scorecard(blab.con, WEEK)


@pytest.fixture(scope="module")
def atts(blab: Lab) -> dict:
    return {r: blab.attribute(r) for r in ("llama8b-pretrain", "ds1b-ablation", "mm7b-sft", "hf-eval-sweep")}


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    assert all(main.commands.get(c.name) is c for c in COMMANDS)  # `clusterlab` registers the report commands
    return CliRunner()


def _row(frame: pl.DataFrame, **eq) -> dict:
    for k, v in eq.items():
        frame = frame.filter(pl.col(k) == v)
    assert frame.height == 1, eq
    return frame.row(0, named=True)


def _close(a, b, rel: float = 1e-9) -> bool:
    """Nested JSON values equal, floats to `rel` (sums over threads may differ in the last bits)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rel) for x, y in zip(a, b, strict=True))
    return a == b


# --- one source of truth ----------------------------------------------------------------------------------

def test_run_figures_are_the_attributions(sc, atts) -> None:
    for run, a in atts.items():
        r = _row(sc.runs, run=run)
        led = dict(zip(a.ledger["category"], a.ledger["gpu_hours"], strict=True))
        lost = a.by("provider")
        assert math.isclose(r["gpu_hours"], a.gpu_hours, rel_tol=1e-9)
        assert math.isclose(r["wall_hours"], a.wall_hours, rel_tol=1e-9)
        assert math.isclose(r["ettr"], led["productive"] / a.gpu_hours, rel_tol=1e-9)
        assert math.isclose(r["steady_mfu"], a.steady_mfu, rel_tol=1e-9)
        assert math.isclose(r["effective_mfu"], a.effective_mfu, rel_tol=1e-9)
        assert math.isclose(r["lost_gpu_hours"], lost["gpu_hours_lost"].sum(), rel_tol=1e-9)
        assert math.isclose(r["usd_lost"], lost["usd_lost"].sum(), rel_tol=1e-9)
        assert math.isclose(r["hang_gpu_hours"], led["hang"], rel_tol=1e-9)
        assert math.isclose(r["checkpoint_gpu_hours"], led["checkpoint"], rel_tol=1e-9)


def test_provider_and_cluster_figures_are_sums_of_the_attributions(sc, atts) -> None:
    by_provider = pl.concat([a.by("provider") for a in atts.values()]).group_by("provider").agg(
        pl.col("gpu_hours_lost", "usd_lost").sum())
    for p in by_provider.iter_rows(named=True):
        row = _row(sc.providers, provider=p["provider"])
        assert math.isclose(row["lost_gpu_hours"], p["gpu_hours_lost"], rel_tol=1e-9)
        assert math.isclose(row["usd_lost"], p["usd_lost"], rel_tol=1e-9)
    for cluster in ("acme-east", "acme-west", "bor-1"):
        runs = [a for a in atts.values() if a.cluster == cluster]
        row = _row(sc.clusters, cluster=cluster)
        assert math.isclose(row["gpu_hours"], sum(a.gpu_hours for a in runs), rel_tol=1e-9)
        eff = sum(a.effective_mfu * a.gpu_hours for a in runs) / sum(a.gpu_hours for a in runs)
        assert math.isclose(row["effective_mfu"], eff, rel_tol=1e-9)
    modes = pl.concat([a.by("failure_mode") for a in atts.values()]).group_by("failure_mode").agg(
        pl.col("gpu_hours_lost").sum())
    got = sc.failure_modes.group_by("failure_mode").agg(pl.col("gpu_hours_lost").sum())
    for m in modes.iter_rows(named=True):
        assert math.isclose(_row(got, failure_mode=m["failure_mode"])["gpu_hours_lost"], m["gpu_hours_lost"],
                            rel_tol=1e-9)
    hosts = pl.concat([a.by("host") for a in atts.values()]).group_by("host").agg(pl.col("gpu_hours_lost").sum())
    for h in sc.worst_hosts.iter_rows(named=True):
        assert math.isclose(h["gpu_hours_lost"], _row(hosts, host=h["host"])["gpu_hours_lost"], rel_tol=1e-9)


def test_incidents_and_advice_are_the_apis(sc, atts, blab: Lab) -> None:
    api = blab.incidents()
    assert sorted(sc.incidents["incident_id"]) == sorted(api["incident_id"])
    for r in api.filter(pl.col("gpu_hours_lost").is_not_null()).iter_rows(named=True):
        assert math.isclose(_row(sc.incidents, incident_id=r["incident_id"])["gpu_hours_lost"], r["gpu_hours_lost"],
                            rel_tol=1e-9)
    for run in sc.runs["run"]:
        ends = api.filter(pl.col("run") == run, pl.col("kind") == "attempt_end")
        fails = ends.filter(advice.is_failure())
        row = _row(sc.runs, run=run)
        assert (row["interruptions"], row["failures"]) == (ends.height, fails.height)
    for run, a in atts.items():
        got = _row(sc.checkpoint_advice, run=run)
        # the saving is the what-if's (the ledger re-priced), the one figure both tables print
        assert all(got[k] == v or math.isclose(got[k], v, rel_tol=1e-9)
                   for k, v in a.checkpoint_advice.to_dict().items() if k != "gpu_hours_saved")


def test_bundle_week_48_golden_figures(sc) -> None:
    # acme delivered 93% (two drained nodes) and lost 26 GPU-h to its faults; borealis is 2 nodes short of 10
    assert sc.ranking["provider"].to_list() == ["acme", "borealis"]
    assert sc.ranking["verdict"][0].startswith("keep: score 0.932")
    assert sc.ranking["verdict"][1].startswith("keep, claim credits: score 0.786")
    acme, bor = _row(sc.providers, provider="acme"), _row(sc.providers, provider="borealis")
    assert (acme["failures"], acme["provider_failures"], acme["interruptions"]) == (3, 3, 5)  # Xid 79, IB, preemption
    assert (bor["failures"], bor["provider_failures"]) == (0, 0)  # rank 5's CUDA OOM is the user's: no failure
    # (each attempt's span is its sacct record: the ledger covers the allocation, to its End's whole second; the
    # 50 steps before DeepSpeed's first timed record ran at the attempt's pace, they are not startup; hf-eval-sweep,
    # a stock HF Trainer log, is priced by its progress bar: its eval pause and the steps its cancel threw away)
    assert math.isclose(acme["usd_lost"], 75.620, abs_tol=0.01) and math.isclose(bor["usd_lost"], 19.896, abs_tol=0.01)
    # 10 contracted, 8 delivered, one of them (bor-008) a day late: (8 * 168 - 24) * 8 of 10 * 168 * 8 GPU-hours
    assert (bor["missing_nodes"], bor["contracted_nodes"], bor["late_nodes"]) == (2, 10, 1)
    assert bor["late_gpu_hours"] == 192 and math.isclose(bor["delivered_share"], (8 * 168 - 24) / (10 * 168))
    assert _row(sc.delivery, cluster="bor-1")["late_hosts"] == ["bor-008"]
    assert "1 node(s) late (192 GPU-h)" in _row(sc.ranking, provider="borealis")["verdict"]
    assert set(sc.drained["host"]) == {"east-003", "east-002"}
    assert "RMA ACME-77812" in _row(sc.drained, host="east-003")["reason"]
    assert _row(sc.stragglers, host="east-005")["slow_steps"] == 60
    assert sc.worst_hosts["host"][0] == "east-003"
    assert sc.change["last_week"].is_null().all()  # nothing in W47
    # a stock HF Trainer log is priced by its progress bar (it had no step times before tqdm's were read)
    assert not any("hf-eval-sweep" in n for n in sc.notes) and _row(sc.runs, run="hf-eval-sweep")["ettr"] > 0.5


def test_rendered_documents_show_the_scorecards_own_numbers(sc) -> None:
    html, md = render.render_scorecard(sc, "html"), render.render_scorecard(sc, "md")
    for p in sc.providers.iter_rows(named=True):
        for text in (fmt.pct(p["ettr"]), fmt.num(p["lost_gpu_hours"]), fmt.pct(p["effective_mfu"])):
            assert text in html and text in md
        assert fmt.usd(p["usd_lost"]) in html and render.md_text(fmt.usd(p["usd_lost"])) in md
    # the ledger, the failure-mode mix and the fleet's hosts, then one waterfall a run
    assert html.count("data:image/png;base64,") == 3 + len(sc.attributions)
    assert "://" not in html, "self-contained: no URL of any scheme, not even in a PNG's metadata"
    pngs = [base64.b64decode(m) for m in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)]
    # in the PNGs' text chunks, where a tool writes its URL (the compressed pixels may hold any three bytes)
    assert all(b"://" not in text for png in pngs for text in _png_texts(png))


def _png_texts(png: bytes) -> list[bytes]:
    """The payloads of a PNG's text chunks (tEXt, zTXt, iTXt)."""
    out, pos = [], 8
    while pos + 8 <= len(png):
        size, kind = int.from_bytes(png[pos:pos + 4], "big"), png[pos + 4:pos + 8]
        if kind in (b"tEXt", b"zTXt", b"iTXt"):
            out.append(png[pos + 8:pos + 8 + size])
        pos += 12 + size
    return out


def test_scorecard_week_and_provider_filter(blab: Lab) -> None:
    assert scorecard(blab.con, "2026-W47").runs.height == 0
    only = scorecard(blab.con, WEEK, ["acme"])
    assert set(only.providers["provider"]) == {"acme"} and only.ranking["rank"].to_list() == [1]
    assert set(only.runs["run"]) == {"llama8b-pretrain", "ds1b-ablation", "hf-eval-sweep"}
    with pytest.raises(ValueError, match="2026-W48"):
        scorecard(blab.con, "48/2026")


def test_repeat_offender_week_over_week_and_ticket_times(lab: Lab) -> None:
    lab.con.execute("INSERT INTO providers VALUES ('p1', 2.0, 'support@p1')")
    lab.con.execute("INSERT INTO clusters (cluster, provider, gpu, gpus_per_node, contracted_nodes) "
                    "VALUES ('c1', 'p1', 'H100-SXM', 8, 4)")
    lab.con.execute("INSERT INTO nodes (host, cluster) VALUES ('h-001', 'c1'), ('h-002', 'c1')")
    week = 7 * 86400
    for name, t0 in (("r48", 0.0), ("r49", week)):
        write_run(lab.con, name, 16, [Attempt(t0, 10, [5.0] * 20, tail_s=30),
                                      Attempt(t0 + 300, 10, [5.0] * 10, first_step=11)])
        write_events(lab.con, [{"t": t0 + 120, "host": "h-001", "kind": "xid", "xid": 79,
                                "failure_mode": "gpu_fell_off_bus"}], name=f"dmesg-{name}")
    lab.annotate("r48:1:end", ticket="P1-1", status="with_provider")
    lab.annotate("r48:1:end", status="resolved")
    w48, w49 = scorecard(lab.con, "2026-W48"), scorecard(lab.con, "2026-W49")
    assert T0.isocalendar()[1] == 48
    host = _row(w49.worst_hosts, host="h-001")
    assert (host["incidents"], host["incidents_to_date"], host["weeks_with_incidents"], host["repeat_offender"]) == (
        1, 2, 2, True)
    change = _row(w49.change, provider="p1", metric="gpu_hours")
    assert math.isclose(change["last_week"], _row(w48.providers, provider="p1")["gpu_hours"], rel_tol=1e-9)
    tickets = _row(w49.responsiveness, provider="p1")
    assert (tickets["tickets"], tickets["resolved"], tickets["open"]) == (1, 1, 0)
    assert tickets["median_hours_to_resolve"] >= 0
    assert "Last week" in render.render_scorecard(w49, "html", images={})


def test_late_nodes_owe_the_hours_between_contract_start_and_hand_over(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.toml"
    inv.write_text('[providers.p]\nusd_per_gpu_hour = 2.0\n\n[clusters.c]\nprovider = "p"\ngpus_per_node = 8\n'
                   'nodes = "n[1-4]"\ncontracted_nodes = 4\ncontract_start = 2026-11-25\n'
                   'delivered = { "n[3-4]" = 2026-11-27, "n1" = 2026-11-20 }\n')
    with Lab(":memory:") as lab:
        lab.ingest(inv)
        c = _row(scorecard(lab.con, WEEK).delivery, cluster="c")
    # the week counts from the contract's start (Wed 25th, 5 days); n3, n4 came 2 days into it, n1 before it
    assert (c["contracted_gpu_hours"], c["late_nodes"], c["late_gpu_hours"]) == (4 * 8 * 120, 2, 2 * 8 * 48)
    assert c["late_hosts"] == ["n3", "n4"]
    assert c["available_gpu_hours"] == 4 * 8 * 120 - 2 * 8 * 48


@pytest.mark.parametrize(("delivered", "error"), [('{ "n9" = 2026-11-27 }', "outside the cluster's nodes: n9"),
                                                   ('{ "n1" = "soon" }', "must be a date"),
                                                   ('"2026-11-27"', "table of hostlist = date")])
def test_bad_delivered_entries_name_the_file(tmp_path: Path, delivered: str, error: str) -> None:
    inv = tmp_path / "inventory.toml"
    inv.write_text(f'[clusters.c]\nprovider = "p"\nnodes = "n[1-2]"\ndelivered = {delivered}\n')
    res = CliRunner().invoke(main, ["--db", str(tmp_path / "db.duckdb"), "ingest", str(inv)])
    assert res.exit_code == 2 and "inventory.toml" in res.output and error in res.output, res.output


# --- incident reports -------------------------------------------------------------------------------------

def test_incident_report_of_the_xid_79(blab: Lab, atts) -> None:
    rep = incident_report(blab.con, "llama8b-pretrain:1:end")
    root = rep.root_evidence.row(0, named=True)
    assert (root["host"], root["file"], root["line"], root["xid"]) == ("east-003", "nodes/east-003/dmesg", 8, 79)
    assert rep.summary.startswith("Xid 79 (GPU has fallen off the bus) on east-003 (acme-east, acme)")
    assert rep.action_line == "drain node: east-003"
    assert rep.guidance[0].startswith("Why: NVIDIA's guidance for Xid 79 (GPU has fallen off the bus)")
    inc = _row(atts["llama8b-pretrain"].incidents, incident_id="llama8b-pretrain:1:end")
    assert math.isclose(rep.ledger["gpu_hours"].sum(), inc["gpu_hours_lost"], rel_tol=1e-9)
    assert math.isclose(rep.usd_lost, inc["usd_lost"], rel_tol=1e-9)
    assert rep.relaunch["excluded_hosts"] == ["east-003"] and rep.relaunch["resumed_from_step"] == 200
    assert rep.timeline["event"][-1] == "first step after the restart (step 201)"
    watchdogs = rep.symptoms.filter(pl.col("kind") == "watchdog_timeout")
    assert watchdogs["lines"].sum() == 31 and watchdogs.height == 4  # the 31 surviving ranks, on their 4 hosts
    assert "RMA ACME-77812" in " ".join(rep.timeline["detail"].drop_nulls())


@pytest.mark.parametrize("format", ["html", "md"])
def test_recommended_action_is_said_once_with_its_reasons(blab: Lab, format: str) -> None:
    doc = render.render_incident(incident_report(blab.con, "llama8b-pretrain:1:end"), format)
    heads = r"<h2>|\n## " if format == "html" else r"\n## "
    section = re.split(heads, doc.split("Recommended action", 1)[1], maxsplit=1)[0]
    assert section.count("drain node") == 1 and "east-003" in section
    assert "NVIDIA" in section and "excluded east-003" in section


def test_incident_report_shows_confidence_and_rejected_candidates(blab: Lab) -> None:
    # the time limit whose Lustre lines on east-004 the job stepped past (attempt 1's Xid 79 rejects three too: the
    # cancel the train log, jobcomp and the controller's request report after the job had stopped stepping)
    inc = blab.incidents().filter(pl.col("incident_id") == "llama8b-pretrain:3:end").row(0, named=True)
    assert inc["failure_mode"] == "time_limit" and len(inc["rejected"]) == 3
    rep = incident_report(blab.con, inc["incident_id"])
    reasons = [c["reason"] for c in inc["rejected"]]
    assert rep.confidence == inc["confidence"] and rep.rejected["reason"].to_list() == reasons
    assert rep.rejected["file"].to_list() == ["nodes/east-004/dmesg"] * 3
    assert rep.rejected["line"].to_list() == [2, 3, 4]
    for doc in (render.render_incident(rep, "html"), _markdown_html(render.render_incident(rep, "md"))):
        text = " ".join(" ".join(_Doc(doc).text).split())
        assert "Candidates considered and rejected" in text and f"Confidence {inc['confidence']:.2f}" in text
        assert all(r in text for r in reasons) and "lustre_connection_lost" in text
    assert rep.to_dict()["rejected"][0]["reason"] == reasons[0]


def test_incident_without_ledger_still_reports(blab: Lab, tmp_path: Path) -> None:
    # a run whose only log is torchrun's failure output: its incident, and no step to price it by
    log = tmp_path / "runs" / "oom-only" / "attempt-1" / "train.log"
    log.parent.mkdir(parents=True)
    shutil.copy(ROOT / "data_samples" / "torch" / "legacy_1_13.log", log)
    with Lab(tmp_path / "x.duckdb") as lab:
        lab.ingest(log)
        end = [i for i in lab.incidents("oom-only")["incident_id"] if i.endswith(":end")][0]
        rep = incident_report(lab.con, end)
    assert rep.gpu_hours_lost is None and "no GPU-time ledger" in rep.notes[0]
    assert "cost unknown" in rep.summary
    assert "Unknown: the run has no GPU-time ledger." in render.render_incident(rep, "html")
    with pytest.raises(KeyError, match="no incident"):
        incident_report(blab.con, "llama8b-pretrain:9:end")


# --- untrusted log text -----------------------------------------------------------------------------------

class _Doc(HTMLParser):
    """Elements, attributes and text of an HTML document."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.code_text: list[str] = []
        self.emphasis: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:
            del self.stack[len(self.stack) - 1 - self.stack[::-1].index(tag):]

    def handle_data(self, data):
        self.text.append(data)
        if "code" in self.stack or "pre" in self.stack:
            self.code_text.append(data)
        if "strong" in self.stack or "em" in self.stack:
            self.emphasis.append(data)

    def assert_inert(self) -> None:
        names = [t for t, _ in self.tags]
        assert "script" not in names and "b" not in names and "a" not in names and "iframe" not in names
        for tag, attrs in self.tags:
            assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
            if tag == "img":  # only the plots we inline ourselves
                assert attrs["src"].startswith("data:image/png;base64,"), attrs
            for v in attrs.values():
                assert "javascript:" not in (v or "")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The bundle with markup in an Xid line (now the root cause), a drain reason and a reviewer's note."""
    root = tmp_path_factory.mktemp("hostile") / "bundle"
    shutil.copytree(SAMPLES / "bundle", root)
    dmesg = root / "nodes/east-003/dmesg"
    lines = dmesg.read_text().splitlines(keepends=True)
    lines.insert(7, f"[410298.556000] NVRM: Xid (PCI:0000:5d:00): 79, pid=79892, name={PAYLOAD}, GPU has fallen off "
                    "the bus.\n")
    dmesg.write_text("".join(lines))
    ctld = root / "scheduler/acme-east/slurmctld.log"
    ctld.write_text(ctld.read_text().replace("reason set to: Xid 79 GPU 0000:5d:00.0 fell off the bus - RMA ACME-77812",
                                             f"reason set to: {PAYLOAD}"))
    with Lab(":memory:") as lab:
        lab.ingest(root)
        lab.annotate("llama8b-pretrain:1:end", note=PAYLOAD, ticket="T|1 **x**", status="with_provider")
        rep, card = incident_report(lab.con, "llama8b-pretrain:1:end"), scorecard(lab.con, WEEK)
    out = root.parent / "out"
    files = render.write_scorecard(card, out, ["html", "md"]) + render.write_incident(rep, out, ["html", "md"])
    return {"rep": rep, "sc": card, "out": out, "files": files}


def test_hostile_line_is_the_root_cause(hostile) -> None:
    assert PAYLOAD in hostile["rep"].root_evidence["text"][0]
    assert PAYLOAD in _row(hostile["sc"].drained, host="east-003")["reason"]


def test_log_text_stays_text_in_html(hostile) -> None:
    for doc in (render.render_incident(hostile["rep"], "html"), render.render_scorecard(hostile["sc"], "html")):
        parsed = _Doc(doc)
        parsed.assert_inert()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in doc
        assert any(PAYLOAD in t for t in parsed.code_text)


def _markdown_html(md: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(md)


def test_log_text_stays_text_in_markdown(hostile) -> None:
    for md in (render.render_incident(hostile["rep"], "md"), render.render_scorecard(hostile["sc"], "md")):
        parsed = _Doc(_markdown_html(md))
        parsed.assert_inert()
        assert any(PAYLOAD in t for t in parsed.code_text), "the raw line survives, verbatim, as code"
        assert "bold" not in parsed.emphasis and "x" not in parsed.emphasis
    note_html = _markdown_html(render.render_incident(hostile["rep"], "md"))
    assert "T|1 **x**" in " ".join(_Doc(note_html).text)  # a pipe in a cell does not split it


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_characters="\x7f"), min_size=1,
               max_size=40))
def test_md_text_round_trips_any_text(text: str) -> None:
    para = _Doc(_markdown_html(f"x {render.md_text(text)} x"))
    assert "".join(para.text).strip() == f"x {text} x".strip()
    assert [t for t, _ in para.tags] == ["p"]
    if text.strip():
        code = _Doc(_markdown_html(f"x {render.md_code(text)} x"))
        assert "".join(code.code_text) == text
        block = _Doc(_markdown_html(render.md_block([text, "```", "~~~"])))
        assert "".join(block.code_text) == f"{text}\n```\n~~~\n"


# --- self-contained HTML in a real browser ----------------------------------------------------------------

@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium (installed with apt-get when root) and the playwright client to drive it."""
    if not Path(CHROMIUM).exists():
        if os.geteuid() != 0:
            pytest.skip("headless Chromium is missing and installing it (apt-get install chromium) needs root")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], check=True, capture_output=True, env=env, timeout=900)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"], check=True,
                       capture_output=True, env=env, timeout=900)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:  # NOTE: only the client: the browser is Debian's, never `playwright install`
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "playwright"], check=True)
    return CHROMIUM


@pytest.mark.slow
def test_html_opens_in_chromium_without_errors_or_requests(chromium: str, hostile, sc, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    files = [p for p in hostile["files"] if p.suffix == ".html"]
    files += [p for p in render.write_scorecard(sc, tmp_path, ["html"]) if p.suffix == ".html"]
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            tempfile.mkdtemp(dir=tmp_path), executable_path=chromium, headless=True, chromium_sandbox=False,
            args=["--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-first-run"])
        try:
            for path in files:
                page = ctx.new_page()
                console, errors, requests = [], [], []
                page.on("console", lambda m, c=console: c.append(f"{m.type}: {m.text}"))
                page.on("pageerror", lambda e, c=errors: c.append(str(e)))
                page.on("request", lambda r, c=requests: c.append(r.url))
                page.goto(path.as_uri(), wait_until="load")
                assert page.evaluate("document.scripts.length") == 0
                page.emulate_media(media="print")
                assert page.pdf(format="A4")[:4] == b"%PDF"
                assert not [m for m in console if m.startswith(("error", "warning"))], (path.name, console)
                assert not errors, (path.name, errors)
                assert all(u.startswith(("file://", "data:")) for u in requests), (path.name, requests)
                page.close()
        finally:
            ctx.close()


# --- the command line and the notebook ----------------------------------------------------------------------

def test_cli_scorecard_json_is_the_apis(cli: CliRunner, bundle_db: Path, sc) -> None:
    res = cli.invoke(main, ["--db", str(bundle_db), "scorecard", "--week", WEEK, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc.pop("files") == []
    assert _close(doc, json.loads(json.dumps(sc.to_dict(), default=str)))


def test_cli_writes_html_and_markdown(cli: CliRunner, bundle_db: Path, tmp_path: Path) -> None:
    res = cli.invoke(main, ["--db", str(bundle_db), "scorecard", "--week", WEEK, "--out", str(tmp_path),
                            "--format", "both", "--provider", "borealis"])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "scorecard-2026-W48.html").read_text()
    assert "borealis" in html and "acme-east" not in html
    assert (tmp_path / "scorecard-2026-W48.md").exists() and list(tmp_path.glob("scorecard-2026-W48-*.png"))
    res = cli.invoke(main, ["--db", str(bundle_db), "report", "mm7b-sft:1:end", "--out", str(tmp_path / "oom.md")])
    assert res.exit_code == 0 and (tmp_path / "oom.md").read_text().startswith("# Incident mm7b-sft:1:end")
    res = cli.invoke(main, ["--db", str(bundle_db), "report", "mm7b-sft:1:end", "--out", str(tmp_path / "oom"),
                            "--format", "both"])
    assert sorted(p.name for p in (tmp_path / "oom").iterdir()) == ["incident-mm7b-sft-1-end.html",
                                                                   "incident-mm7b-sft-1-end.md"]
    res = cli.invoke(main, ["--db", str(bundle_db), "report", "mm7b-sft:1:end"])
    assert res.stdout.startswith("<!DOCTYPE html>")


def test_cli_report_json_and_errors(cli: CliRunner, bundle_db: Path, blab: Lab) -> None:
    res = cli.invoke(main, ["--db", str(bundle_db), "report", "llama8b-pretrain:2:end", "--json"])
    doc = json.loads(res.stdout)
    assert doc["summary"] == incident_report(blab.con, "llama8b-pretrain:2:end").summary
    assert doc["root_evidence"][0]["file"] == "nodes/east-002/kern.log"
    res = cli.invoke(main, ["--db", str(bundle_db), "report", "no-such-run:1:end"])
    assert res.exit_code == 2 and "no incident" in res.stderr
    res = cli.invoke(main, ["--db", str(bundle_db), "scorecard", "--week", "2026-W60"])
    assert res.exit_code == 2 and "2026-W60" in res.stderr
    missing = bundle_db.with_name("missing.duckdb")
    res = cli.invoke(main, ["--db", str(missing), "scorecard", "--week", WEEK])
    assert res.exit_code != 0 and "no such database" in res.output + res.stderr and not missing.exists()
    for name in ("scorecard", "report"):
        res = cli.invoke(main, [name, "--help"])
        assert res.exit_code == 0 and len(main.commands[name].help) > 20


@pytest.mark.slow
def test_notebook_and_cli_give_the_same_scorecard(cli: CliRunner, bundle_db: Path, tmp_path: Path) -> None:
    nb = nbformat.read(ROOT / "notebooks/02_weekly_provider_scorecard.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source += f"\nweek = {WEEK!r}\nout_dir = {str(tmp_path)!r}"  # what papermill injects
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    from_notebook = json.loads((tmp_path / f"scorecard-{WEEK}.json").read_text())
    res = cli.invoke(main, ["--db", str(bundle_db), "scorecard", "--week", WEEK, "--json"])
    from_cli = json.loads(res.stdout)
    from_cli.pop("files")
    assert _close(from_notebook, from_cli)
