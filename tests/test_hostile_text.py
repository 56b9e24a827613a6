"""Hostile text in every field that reaches a report (run, host, provider, cluster, ticket, note, log line).

The reports must render, stay inert (no script, link or image from data, in HTML or in rendered
Markdown), write under short file names, and draw their figures; a run whose name holds `:` keeps
its incident reports.
"""

from __future__ import annotations

import dataclasses
import re
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
import timelines
from markdown_it import MarkdownIt
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.plots import charts as plots
from clusterlab.reports import figures, incident_report, render, scorecard

WEEK = "2026-W48"
HOSTILE = [
    "<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "[click](javascript:alert(1))",
    "![pixel](http://evil.example/p.png)", "http://evil.example/phish", "see https://evil.example/x now",
    "www.evil.example", "support@evil.example", "mailto:a@evil.example", "<http://evil.example>",
    "`tick` and ```fence```", "$x^2$ and $$", "a$b", "back\\slash\\", "**bold** _em_ ~~strike~~", "a|b|c",
    "# heading", "line1\nline2\r\nline3", "nul\x00ctl\x01\x1b[31mred\x7f", "\u202eevil.exe\u202c",
    "{{ 7*7 }}", "{% if true %}x{% endif %}", "x" * 20_000, "a:b:c", "../../etc/passwd", "&amp; &#x41; &lt;",
    "&#106;avascript:alert(1)", "<!-- hidden -->", "[ref]: http://evil.example", "evil.example.io",
    "//evil.example/path", "data:text/html,<b>x</b>", "é中文🙂 ${HOME} %s {0}",
]
pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
OURS = re.compile(r"^(data:image/png;base64,|scorecard-[A-Za-z0-9._-]+\.png$)")


class _Tags(HTMLParser):
    """Every element and attribute of an HTML document."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _assert_inert(html: str) -> None:
    """No script, link, frame, form or event handler; images only the plots we made ourselves."""
    for tag, attrs in _Tags(html).tags:
        assert tag not in ("script", "a", "iframe", "object", "embed", "form", "b"), (tag, attrs)
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        if tag == "img":
            assert OURS.match(attrs.get("src") or ""), attrs
        assert not any("javascript:" in (attrs.get(a) or "") for a in ("href", "src", "action")), (tag, attrs)


# What GFM autolinks in a text node (cmark-gfm's extension; a backslash escape is a node of its own).
_GFM_AUTOLINK = re.compile(r"(?i)(https?://|ftp://|www\.|mailto:|xmpp:|[\w.+-]@[\w-]+\.\w)")


def _markdown_html(md: str) -> str:
    """Markdown rendered the GFM way (tables, autolinks with linkify where installed, raw HTML allowed)."""
    try:
        import linkify_it  # noqa: F401
        parser = MarkdownIt("gfm-like", {"html": True})
    except ImportError:
        parser = MarkdownIt("commonmark", {"html": True}).enable("table")
    text_nodes = MarkdownIt("commonmark").enable("table").disable("text_join")
    for token in text_nodes.parse(md):
        for child in token.children or []:
            if child.type == "text":
                assert not _GFM_AUTOLINK.search(child.content), child.content
    return parser.render(md)


def _hostile_lab(strings: list[str]) -> Lab:
    """One provider, cluster, two hosts and a run per string, named by it; an Xid line, a note and a ticket of it."""
    lab = Lab(":memory:")
    with _one_refresh(lab):
        _write_hostile(lab, strings)
    for s in strings:
        lab.annotate(f"{s}:1:end", note=s, ticket=s, status="with_provider")
    return lab


@contextmanager
def _one_refresh(lab: Lab):
    """Derive the attempts once, after every run is written (not once per run: the fixture stays quick)."""
    refresh, timelines.attempts.refresh = timelines.attempts.refresh, lambda con: None
    try:
        yield
    finally:
        timelines.attempts.refresh = refresh
    refresh(lab.con)


def _write_hostile(lab: Lab, strings: list[str]) -> None:
    for i, s in enumerate(strings):
        hosts = [s, f"{s}-b"]
        lab.con.execute("INSERT INTO providers VALUES (?, 2.0, ?)", [s, f"support {s}"])
        lab.con.execute("INSERT INTO clusters (cluster, provider, gpu, gpus_per_node, contracted_nodes) "
                        "VALUES (?, ?, 'H100-SXM', 8, 2)", [s, s])
        lab.con.executemany("INSERT INTO nodes (host, cluster) VALUES (?, ?)", [[h, s] for h in hosts])
        t0 = 600.0 * i
        write_run(lab.con, s, 16, [Attempt(t0, 10, [5.0] * 20, tail_s=30, hosts=hosts),
                                   Attempt(t0 + 300, 10, [5.0] * 10, first_step=11, hosts=hosts)], cluster=s)
        write_events(lab.con, [{"t": t0 + 60, "host": s, "kind": "xid", "xid": 79, "failure_mode": "gpu_fell_off_bus",
                                "text": f"NVRM: Xid (PCI:0000:5d:00): 79, name={s}, GPU has fallen off the bus."}],
                     name=f"dmesg-{i}")


@pytest.fixture(scope="module")
def hostile():
    """The hostile store, its scorecard and every incident's report."""
    with _hostile_lab(HOSTILE) as lab:
        sc = scorecard(lab.con, WEEK)
        reports = [incident_report(lab.con, iid, attributed=sc.attributions.get(run))
                   for iid, run in sc.incidents.select("incident_id", "run").iter_rows()]
        yield {"lab": lab, "sc": sc, "reports": reports}


def test_every_hostile_run_has_its_attempt_end_incident(hostile) -> None:
    ends = {r.incident["run"] for r in hostile["reports"] if r.incident["kind"] == "attempt_end"}
    assert ends == set(HOSTILE)


def test_incident_reports_of_hostile_text_are_inert_in_html_and_markdown(hostile) -> None:
    for rep in hostile["reports"]:
        _assert_inert(render.render_incident(rep, "html"))
        md = render.render_incident(rep, "md")
        rendered = _markdown_html(md)
        _assert_inert(rendered)
        assert "<img" not in rendered and "<a " not in rendered, rep.incident_id[:80]


def test_scorecard_of_hostile_text_is_inert(hostile) -> None:
    html = render.render_scorecard(hostile["sc"], "html", images={})
    _assert_inert(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    rendered = _markdown_html(render.render_scorecard(hostile["sc"], "md", images={}))
    _assert_inert(rendered)
    assert "<img" not in rendered and "<a " not in rendered


def test_scorecard_figures_draw_hostile_labels(hostile) -> None:
    drawn = [s for s in HOSTILE if "$" in s or len(s) > 1_000 or "\x00" in s or "\n" in s]
    sc = dataclasses.replace(hostile["sc"], attributions={r: hostile["sc"].attributions[r] for r in drawn})
    html = render.render_scorecard(sc, "html")
    _assert_inert(html)
    assert html.count("<img") == 3 + len(drawn)  # the ledger, the failure modes, the fleet's hosts, a waterfall a run


def test_markdown_keeps_hostile_text_readable(hostile) -> None:
    rep = next(r for r in hostile["reports"] if r.incident_id == "http://evil.example/phish:1:end")
    rendered = _markdown_html(render.render_incident(rep, "md"))
    assert "http://evil.example/phish" in rendered and "<a " not in rendered


# Addresses that only some matchers take for links: linkify's `//host`, IPs, IDN names, odd local parts.
LINK_LOOKALIKES = ["http://localhost:8080/x", "file:///etc/passwd", "a=b@x.io", "_@127.0.0.1", "é.py", "©.io",
                   "HTTP://EVIL.COM", "WWW.EVIL.COM", "evil.com/x", "x (evil.io)", "ssh://root@node1.io"]


@pytest.mark.parametrize("text", HOSTILE + LINK_LOOKALIKES, ids=range(len(HOSTILE + LINK_LOOKALIKES)))
def test_md_text_never_forms_a_link_or_image(text: str) -> None:
    for line in (f"x {render.md_text(text)} x", f"- {render.md_text(text)}", f"_{render.md_text(text)}_"):
        rendered = _markdown_html(line)
        assert "<a " not in rendered and "<img" not in rendered and "<script" not in rendered, line


@pytest.mark.parametrize("text", ["torch.distributed.init_process_group", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                  "nvidia-resiliency-ext's ft_launcher", "torchrun --max-restarts=N",
                                  "nodes/east-003/dmesg:8", "runs/llama8b-pretrain/attempt-1/train.log:1869",
                                  "Xid 79 (GPU has fallen off the bus)", "2026-11-24 08:20:25.556 UTC", "24/7",
                                  "AT&T", "1,256 failures / 1,000 GPU-days", "a - b", "x_1 and y_2"])
def test_md_text_leaves_text_that_forms_no_markup_as_written(text: str) -> None:
    assert render.md_text(text) == text


@pytest.mark.parametrize("text, md", [("support@acme.example", "support\\@acme.example"),
                                      ("see http://evil.example/x now", "see http:\\//evil.example/x now"),
                                      ("**bold**", "\\*\\*bold\\*\\*"), ("a_b _c_", "a_b \\_c\\_"),
                                      ("- item", "\\- item"), ("1. one", "1\\. one"), ("<b>", "\\<b>"),
                                      ("[x](y)", "\\[x\\](y)"), ("&amp;", "\\&amp;"), ("a|b", "a\\|b")])
def test_md_text_escapes_once_where_markup_or_a_link_could_form(text: str, md: str) -> None:
    assert render.md_text(text) == md


def test_week_reports_of_hostile_names_are_written_under_short_names(tmp_path: Path) -> None:
    names = ["x" * 20_000, "a:b:c", "../../etc/passwd", "nul\x00", "<script>", "$x$"]
    errors: list[str] = []
    with _hostile_lab(names) as lab:
        paths = render.write_week(lab.con, WEEK, tmp_path, errors=errors)
    assert errors == []
    reports = [p for p in paths if p.name.startswith("incident-") and p.suffix == ".md"]
    assert len(reports) == len(names)
    assert max(len(p.name) for p in paths) <= 150 and all(p.parent == tmp_path for p in paths)
    assert len({p.name for p in paths}) == len(paths) == len(list(tmp_path.iterdir()))


def test_a_run_named_with_colons_keeps_its_incident_reports_and_evidence(hostile) -> None:
    lab = hostile["lab"]
    rep = incident_report(lab.con, "a:b:c:1:end")
    assert rep.incident["run"] == "a:b:c" and rep.root_evidence["text"][0].startswith("NVRM: Xid")
    assert lab.evidence("a:b:c:1:end")["incident_id"].unique().to_list() == ["a:b:c:1:end"]
    with pytest.raises(KeyError, match="no incident"):
        incident_report(lab.con, "a:b:c:9:end")
    assert lab.evidence("a:b:c:9:end").height == 0


def test_week_reports_go_on_past_an_incident_that_cannot_be_written(tmp_path: Path) -> None:
    with _hostile_lab(["r1", "r2"]) as lab:
        (tmp_path / f"{render.report_filename('r1:1:end')}.html").mkdir()  # the file's place is taken
        errors: list[str] = []
        paths = render.write_week(lab.con, WEEK, tmp_path, errors=errors)
    assert len(errors) == 1 and "r1:1:end" in errors[0] and "IsADirectoryError" in errors[0]
    assert tmp_path / f"{render.report_filename('r2:1:end')}.html" in paths


def test_report_file_names_are_short_distinct_and_stable() -> None:
    assert render.report_filename("llama8b-pretrain:1:end") == "incident-llama8b-pretrain-1-end"
    long_a, long_b = render.report_filename("x" * 20_000 + ":1:end"), render.report_filename("x" * 20_001 + ":1:end")
    assert len(long_a) <= 130 and long_a != long_b
    assert render.report_filename("a/b:1:end") != render.report_filename("a_b:1:end")


def test_plots_draw_labels_from_data_as_plain_text() -> None:
    from matplotlib.figure import Figure

    labels = ["$x^2$", "a$b", "$$", "\\$", "nul\x00", "x" * 20_000, "\u202e", "{{ x }}"]
    for label in labels:
        fig = Figure(figsize=(4, 3))
        ax = fig.subplots()
        ax.set_title(plots.plain(label))
        ax.set_yticks([0], [plots.plain(label)])
        figures.png(fig)
    mix = pl.DataFrame({"provider": labels, "failure_mode": ["$mode$"] * len(labels),
                        "gpu_hours_lost": [1.0] * len(labels)})
    fig = Figure(figsize=(6, 6))
    plots.failure_mix(mix, ax=fig.subplots())
    figures.png(fig)
    ledger = pl.DataFrame({"provider": labels, "category": ["productive"] * len(labels),
                           "gpu_hours": [1.0] * len(labels)})
    figures.png(figures.ledger_by_provider(ledger))
