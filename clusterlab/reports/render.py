"""Scorecards and incident reports as one self-contained HTML file or as Markdown (Jinja2 templates).

Log text is untrusted: the HTML environment autoescapes everything, and the Markdown one passes
every value through `md_text` (a backslash where markup or an autolink could form, nowhere else) or,
for raw log lines, code spans and fenced blocks whose fences are longer than any backtick run inside them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path

import jinja2

from clusterlab.account import offenders
from clusterlab.reports import figures, fmt
from clusterlab.reports.incident_report import IncidentReport
from clusterlab.reports.scorecard import Scorecard

FORMATS = ("html", "md")
SCORE_NOTE = ("Score: the share of contracted GPU-time that was delivered and not lost to the provider's own faults, "
              "(contracted − undelivered − provider-lost GPU-hours) ÷ contracted GPU-hours, where undelivered is "
              "what missing, late and drained nodes owed. A provider with no contract known is scored on the "
              "GPU-hours our runs used instead, (used − provider-lost) ÷ used, and its line says so. A missing node "
              "owes far more GPU-hours than a failure costs, so each line gives delivery and reliability apart: "
              "reliability is provider-caused failures over the exposure (GPU-hours the week's attempts held their "
              "GPUs, requeue gaps left out; the Reliability table's), withheld while its interval cannot tell.")
# Control characters, and the bidirectional overrides that make text read other than it is stored.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
# What can open markup anywhere in a line: emphasis (`*`), code, links and images (`[`, `]`; escaping `[`
# disarms `!` and `(`), raw HTML and `<…>` autolinks, GFM table cells and strikethrough, `$` math of some
# renderers, and a backslash that would escape the character after it (the template's, at the end).
# `&` only where it spells an entity; `_` only where it can flank emphasis: between two letters or digits it
# never does, so `init_process_group` stays as written.
_MD_INLINE = re.compile(r"[`*\[\]<|~$]|\\(?=[!-/:-@\[-`{-~]|$)|&(?=#?\w+;)|_")
# A line's start can open a block: a heading, a quote, a list item (`-`, `+`, `1.`, `1)`), a rule or a
# setext underline (`---`, `===`); the value may start a line of the template (a list item, a paragraph).
_MD_BLOCK_START = re.compile(r"^(\s*)(?:([#>])|([-+])(?=\s|$)|([-=])(?=[-=\s]*$)|(\d{1,9})([.)])(?=\s|$))")
# NOTE: GFM and linkify turn text that merely looks like an address into a link: `scheme://…` (and linkify's
# `//host`), `www.…`, `user@host.tld`, `mailto:`/`xmpp:` and, for linkify, a bare `name.tld` whose `tld` it
# knows (two letters, or one of a few generic names). One escape splits the text where each matcher looks (the
# first slash of `//`, the dot after `www`, the `@`, the scheme's colon, the dot before such a `tld`).
_AUTOLINK = re.compile(r"(?i)/(?=/)|(?<![\w.-])www\.|(?<!\s)@(?=[\w-]+\.\w)|(?<![\w.-])(?:mailto|xmpp):"
                       r"|(?<=[^\s.])\.(?=(?:[a-z]{2}|biz|com|edu|gov|net|org|pro|web|xxx|aero|asia|coop|info"
                       r"|museum|name|shop)(?![\w-]))")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
NAME_LIMIT = 100  # characters of a file name's readable part (file systems stop at 255 bytes)
log = logging.getLogger(__name__)


def clean(text) -> str:
    """Log text with control characters made visible (U+FFFD) and newlines kept out."""
    if text is None:
        return ""
    return _CONTROL.sub("\ufffd", str(text).replace("\r\n", "\n").replace("\r", "\n"))


def md_text(value) -> str:
    """Any value as inline Markdown that renders as exactly its text: no emphasis, link, HTML or cell break.

    Only what could form markup or a link is escaped, so that a report pasted into a ticket reads as written."""
    s = " ".join(clean(value).split("\n"))
    s = _MD_INLINE.sub(lambda m: _escape_inline(s, m), s)
    s = _AUTOLINK.sub(_escape_link, s)
    return _MD_BLOCK_START.sub(_escape_block_start, s, count=1)


def _escape_inline(s: str, m: re.Match) -> str:
    i = m.start()
    if m.group(0) == "_" and 0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum():
        return "_"  # intraword: flanked by letters or digits on both sides, `_` opens and closes nothing
    return "\\" + m.group(0)


def _escape_link(m: re.Match) -> str:
    t = m.group(0)
    return "\\" + t if len(t) == 1 else t[:-1] + "\\" + t[-1]  # `www.` and `mailto:`: their last character


def _escape_block_start(m: re.Match) -> str:
    lead, mark, item, rule, digits, delim = m.groups()
    if digits is not None:
        return f"{lead}{digits}\\{delim}"
    return f"{lead}\\{mark or item or rule}"


def md_code(value, cell: bool = False) -> str:
    """Text as a code span whose backtick fence is longer than any run inside (GFM tables: pipes escaped)."""
    s = " ".join(clean(value).split("\n"))
    if not s:
        return ""
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s[0] in "` " or s[-1] in "` " else ""
    if cell:  # NOTE: GFM splits table rows on every unescaped pipe, code spans included
        s = s.replace("|", "\\|")
    return f"{fence}{pad}{s}{pad}{fence}"


def md_block(lines, info: str = "text") -> str:
    """Lines as a fenced code block no line inside can close."""
    body = [clean(x).replace("\n", " ") for x in ([lines] if isinstance(lines, str) else lines)]
    longest = max((len(m) for x in body for m in re.findall(r"`+", x)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + info, *body, fence])


def safe_name(text: str, limit: int = NAME_LIMIT) -> str:
    """A file name made from an identifier (incident, run): letters, digits, dot, dash, underscore.

    A name that had to be cut to `limit` characters, or lost characters, ends in a short hash of the
    identifier, so that two identifiers never share a file."""
    slug = _SAFE_NAME.sub("_", text).strip("._") or "unnamed"
    if slug == text and len(slug) <= limit:
        return slug
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug[:limit].rstrip('._-')}-{digest}"


def report_filename(incident_id: str) -> str:
    """The file stem an incident's report is written under (at most ~120 characters)."""
    return "incident-" + safe_name(incident_id.replace(":", "-"))


@functools.cache
def environment(kind: str) -> jinja2.Environment:
    """The Jinja2 environment for `html` (autoescape on) or `md` (escaping filters) templates."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("clusterlab.reports", "templates"), autoescape=kind == "html",
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(num=fmt.num, pct=fmt.pct, usd=fmt.usd, ts=fmt.ts, dur=fmt.duration, offset=fmt.offset,
                       signed=fmt.signed, cell=fmt.cell, log=clean, md=md_text, code=md_code, block=md_block,
                       report_file=report_filename, interval=fmt.interval)
    env.tests["missing"] = lambda v: v is None
    env.globals["INTERVALS"] = fmt.INTERVAL_KINDS
    return env


def _records(frame) -> list[dict]:
    return frame.to_dicts() if frame is not None and frame.height else []


def scorecard_context(sc: Scorecard, images: dict[str, str]) -> dict:
    """What the scorecard templates see: the scorecard, its frames as rows, and image sources."""
    return {"sc": sc, "t": {name: _records(getattr(sc, name)) for name in Scorecard.FRAMES},
            "images": images, "runs_with_plots": sorted(sc.attributions), "score_note": SCORE_NOTE,
            "fleet_note": fleet_note()}


def fleet_note() -> str:
    """What the fleet table counts, and the rule its repeat offenders meet (`account.offenders`)."""
    return (f"Each host's incidents and the GPU-hours they cost this week, and its fault episodes (slurmctld's DOWN / "
            f"DRAIN until RESUME, a provider's repair records, a fault trace), hours in repair (overlapping episodes "
            f"once) and jobs the scheduler killed for it that started this week, as clusterlab hosts --week "
            f"WEEK prints them. A repeat offender meets the relaunch plan's rule at the week's end: "
            f"{offenders.REPEAT_AFTER} or more faults (incidents that call for an action on the host, and fault "
            f"episodes that are not an incident's own repair) in the {offenders.HISTORY_DAYS:g} days before it; "
            "clusterlab relaunch excludes such a host.")


def render_scorecard(sc: Scorecard, format: str = "html", images: dict[str, str] | None = None) -> str:
    """The scorecard as HTML (plots inlined as base64 PNG) or Markdown (plots linked where given)."""
    if format == "html" and images is None:
        images = {k: "data:image/png;base64," + base64.b64encode(v).decode() for k, v in
                  figures.scorecard_figures(sc).items()}
    return environment(format).get_template(f"scorecard.{format}.j2").render(
        **scorecard_context(sc, images or {}))


def render_incident(rep: IncidentReport, format: str = "html") -> str:
    """The incident report as HTML or Markdown."""
    ctx = {"r": rep, "i": rep.incident, "t": {n: _records(getattr(rep, n)) for n in (
        "timeline", "root_evidence", "symptoms", "ledger", "recorded_relaunches", "rejected")}}
    ctx["relaunch_cols"] = [(name, name, "ts" if dtype.is_temporal() else "text")
                            for name, dtype in rep.recorded_relaunches.schema.items()]
    return environment(format).get_template(f"incident.{format}.j2").render(**ctx)


def formats(choice: str | Iterable[str] | None, default: str = "html") -> list[str]:
    """`html`, `md`, `both` (or a list of them) as the list of formats to write."""
    if choice is None:
        return [default]
    items = [choice] if isinstance(choice, str) else list(choice)
    out = [f for c in items for f in (FORMATS if c == "both" else [c])]
    bad = [f for f in out if f not in FORMATS]
    if bad:
        raise ValueError(f"unknown format {bad[0]!r}; use html, md or both")
    return list(dict.fromkeys(out))


def write_scorecard(sc: Scorecard, out_dir: str | Path, fmts: Iterable[str] = ("html",),
                    with_json: bool = False) -> list[Path]:
    """Write `scorecard-<week>.html` / `.md` (with its PNGs beside it) / `.json` into a folder."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"scorecard-{safe_name(sc.week)}"
    written: list[Path] = []
    pngs = figures.scorecard_figures(sc)
    for f in formats(list(fmts)):
        if f == "html":
            images = {k: "data:image/png;base64," + base64.b64encode(v).decode() for k, v in pngs.items()}
        else:  # Markdown renderers drop data: URIs, so the plots go beside the file
            images = {}
            for name, data in pngs.items():
                p = out / f"{stem}-{safe_name(name)}.png"
                p.write_bytes(data)
                written.append(p)
                images[name] = p.name
        path = out / f"{stem}.{f}"
        path.write_text(render_scorecard(sc, f, images), encoding="utf-8")
        written.append(path)
    if with_json:
        path = out / f"{stem}.json"
        path.write_text(json.dumps(sc.to_dict(), indent=2, default=str), encoding="utf-8")
        written.append(path)
    return written


def write_incident(rep: IncidentReport, path: str | Path, fmts: Iterable[str] = ("html",)) -> list[Path]:
    """Write the report to `path` (a folder: under the incident's own file name), one file per format."""
    p = Path(path)
    if p.is_dir() or not p.suffix:
        p.mkdir(parents=True, exist_ok=True)
        base = p / report_filename(rep.incident_id)  # NOTE: no with_suffix: a run name may hold dots
    else:
        base = p.with_suffix("")
    base.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for f in formats(list(fmts)):
        target = base.parent / f"{base.name}.{f}"
        target.write_text(render_incident(rep, f), encoding="utf-8")
        written.append(target)
    return written


def write_week(con, week: str, out_dir: str | Path, fmts: Iterable[str] = FORMATS,
               errors: list[str] | None = None) -> list[Path]:
    """The week's scorecard and one report per incident of that week, written into a folder (the demo's).

    An incident whose report cannot be made or written is skipped with one line, logged and added to
    `errors`; the others are still written."""
    from clusterlab.reports.incident_report import incident_report
    from clusterlab.reports.scorecard import scorecard

    sc = scorecard(con, week)
    paths = write_scorecard(sc, out_dir, fmts)
    for iid, run in sc.incidents.select("incident_id", "run").iter_rows():
        try:
            paths += write_incident(incident_report(con, iid, attributed=sc.attributions.get(run)), Path(out_dir),
                                    fmts)
        except Exception as e:  # NOTE: one bad incident must not cost the week's other reports
            why = (str(e).strip().splitlines() or [""])[0][:300]
            line = f"incident report {iid[:200]!r} not written: {type(e).__name__}: {why}"
            log.warning(line)
            if errors is not None:
                errors.append(line)
    return paths
