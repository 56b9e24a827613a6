"""sacct dump collector: every output format of `sacct` → the jobs table.

- `--parsable2` / `-P` (`|` between fields) and `--parsable` / `-p` (a trailing `|` as well): the first
  line names the columns (`JobID|JobName|State|ExitCode|Start|End|...`).
- plain `sacct` (fixed-width columns): a header, then a rule of dashes, one run per column, whose runs
  give the columns' spans (`-o JobID%-20,State%20` changes the widths). A value wider than its column is
  cut and ends in `+` (`CANCELLED+` for `CANCELLED by 1000`, `OUT_OF_ME+`).
- `--json`: one JSON document `{"jobs": [...], "meta": ..., "errors": ...}`, pretty-printed or on one
  line; each job with its `steps`. Field names as the data_parser plugins (v0.0.37 in 21.08 to v0.0.4x)
  write them: `job_id`, `name`, `state.current` (a string, a list from 23.02), `exit_code.return_code` /
  `.signal.id` (plain numbers, or `{set, infinite, number}` from 23.02), `time.start|end|submission`
  (UNIX seconds), `nodes`, `array`, `het`, `tres.allocated`.

Which columns and in which order is whatever `--format` asked for, so every read goes by the header.
One row per job, and one per step (`1234.batch`, `1234.0`, `1234.extern`) where the dump has them;
array tasks read `1234_7`, heterogeneous components `1234+1`. States may carry a suffix
(`CANCELLED by 1000`); times of the text formats are the local time of the machine sacct ran on
(`ctx.tz`), with `Unknown` / `None` for times that are not known; ExitCode is `exit:signal`. JSON
times are UTC.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import polars as pl

from clusterlab.collectors._base import TABLE_COLUMNS, Context, Parsed, file_of_line, search
from clusterlab.collectors._slurmlib import job_events, jobs_frame

NAME = "sacct"
EXCLUSIVE = True
# a header naming JobID (any case), sacct --json, or a headerless `--brief` row's `|STATE|` (_BRIEF_ROW)
SNIFF_HINT = (b"jobid", b'"jobs"', b"|completed|", b"|failed|", b"|cancelled", b"|timeout|", b"|node_fail|",
              b"|out_of_memory|", b"|preempted|", b"|running|", b"|pending|", b"|boot_fail|", b"|deadline|")
PATTERN = None  # structured: every line is a header or a row
# The jobs' events name no host: a failed job's NodeList is every node it ran on, not the one to blame.
FILL_HOST = False

# A header: `|`-separated field names, one of them a job id, optional trailing `|` (--parsable).
_HEADER = r"^[A-Za-z][A-Za-z0-9]*(?:\|[A-Za-z][A-Za-z0-9]*)+\|?$"
_HEADER_RE = re.compile(_HEADER)
# NOTE: a row of plain words (`train|COMPLETED`) also looks like a header; a header names a job id.
_NAMES_ID = r"(?i)(?:^|\|)jobid(?:raw)?(?:\||$)"
# The fixed-width layout: a header of names (one a job id) over a rule of dash runs.
_RULE = r"^-+(?: +-+)*\s*$"
_WORDS_ID = r"(?i)^\s*(?:[A-Za-z][A-Za-z0-9]*\s+)*jobid(?:raw)?(?:\s|$)"
_FIXED_HEAD = r"^\s*[A-Za-z][A-Za-z0-9]*(?:\s+[A-Za-z][A-Za-z0-9]*)*\s*$"
# NOTE: `sacct --brief` (`-b`) prints three fixed columns, JobID, State and ExitCode; with `--noheader` (`-n`) and
# `-P` a row (`1655412.batch|FAILED|127:0`) is all there is, and its shape says which column is which.
_BRIEF_NAMES = ("JobID", "State", "ExitCode")
_BRIEF_ROW = r"^\s*\d+(?:[_+]\d+)?(?:\.[\w-]+)?\|[A-Z][A-Z_]+(?: by \d+)?\|\d+:\d+\|?\s*$"
# A shell prompt and the sacct command a user pasted with its output (`$ sacct ...`, `[me@login1 ~]$ sacct ...`)
_PROMPT = r"^\s*(?:\[[^\]]{1,200}\]|[\w.@:~/-]{0,200})\s?[$#%>]\s+\S*sacct\b"
_PROMPT_RE = re.compile(_PROMPT)
# NOTE: the same test in polars without the counted repeats: `{0,200}` copies of a Unicode class cost Rust's regex
# 50 ms to compile, on every parse (polars keeps few compiled patterns). The bracket's text runs to its first `]`
# and the word run to the first character outside it, so the bounds are checked on what they captured.
_PROMPT_RUNS = r"^\s*(?:\[(?P<b>[^\]]+)\]|(?P<w>[\w.@:~/-]*))\s?[$#%>]\s+\S*sacct\b"

# sacct field name (lower case) → what we read it as; the first present of each list wins.
FIELDS: dict[str, tuple[str, ...]] = {
    "job_id": ("jobid", "jobidraw"),
    "job_id_raw": ("jobidraw",),
    "job_name": ("jobname",),
    "state": ("state",),
    "exit": ("exitcode",),
    "start": ("start", "eligible"),
    "end": ("end",),
    "submit": ("submit",),
    "nnodes": ("nnodes", "allocnodes"),
    "nodelist": ("nodelist",),
    "tres": ("alloctres",),
}


@dataclass(frozen=True)
class _Layout:
    names: tuple[str, ...]  # as printed (a trailing "" for --parsable)
    spans: tuple[tuple[int, int], ...] | None = None  # fixed width: [start, end) of each column


@dataclass
class _JsonState:
    buf: str = ""  # text read but not consumed yet (the start of a job object cut by the batch's end)
    line: int = 1  # the line `buf` starts on
    stage: int = 0  # 0: before the "jobs" array, 1: inside it, 2: after it (or given up)
    indent: str | None = None  # what precedes a job's `{` on its line (pretty-printed output)
    skipping: bool = False  # inside a damaged job: read on from the next job's start


# NOTE: a dump longer than one batch loses its header after the first batch, and a JSON job may be cut
# by a batch's end; the engine gives parse() no per-file state, so both are kept per file context.
_LAYOUTS: weakref.WeakKeyDictionary[Context, _Layout] = weakref.WeakKeyDictionary()
_JSON: weakref.WeakKeyDictionary[Context, _JsonState] = weakref.WeakKeyDictionary()
_JSON_JOBS = re.compile(r'"jobs"\s*:\s*\[')
_MAX_JOB_CHARS = 32 << 20  # a job object still open after this much text is no object


def sniff(head: bytes, path: str) -> bool:
    """A sacct dump: a `|` header naming JobID (or JobIDRaw), a fixed-width header over its dash rule, or
    `sacct --json` output."""
    text = head.decode("utf-8", "replace")
    if text.lstrip().startswith("{"):
        # NOTE: squeue --json has "jobs" too, with "job_state" where sacct has "state": {"current": ...}.
        return bool(_JSON_JOBS.search(text) and '"job_id"' in text and '"job_state"' not in text)
    # NOTE: a table pasted with the command that printed it (`$ sacct -j 4711 ...`) above its header
    lines = [ln for ln in text.splitlines()[:8] if ln.strip() and not _PROMPT_RE.match(ln)][:6]
    if not lines:
        return False
    first = lines[0].strip()
    # NOTE: `search` (Rust regex, linear time): a sniff runs on every file's head, one 64 KiB line included.
    if search(first, _HEADER) and search(first, _NAMES_ID):
        return True
    if all(search(ln, _BRIEF_ROW) for ln in lines):
        return True
    return len(lines) > 1 and search(lines[1], _RULE) and search(lines[0], _FIXED_HEAD) and search(lines[0], _WORDS_ID)


def _file_layout(ctx: Context) -> _Layout | None:
    """The `|` header on the file's first line, for batches (or appended reads) that start after it."""
    h = (ctx.header or "").strip()
    return _Layout(tuple(h.split("|"))) if _HEADER_RE.match(h) and re.search(_NAMES_ID, h) else None


def GROUP_CONTEXT(ctx: Context) -> tuple | None:  # noqa: N802  (a collector's contract names are capitals)
    """What parse() reads of the context, for whole dumps that start with a `|` header: dumps agreeing on it are
    parsed in one call (clusterlab.ingest.groups); None (JSON, fixed width, a pasted prompt first): alone."""
    layout = _file_layout(ctx)
    # the header groups them: rows under one header are read in one polars call, whatever file they come from
    return None if layout is None else (layout.names, ctx.tz, ctx.run is None)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Jobs (and steps) from the header and rows of one batch (or of many whole dumps, `file_of_line()`)."""
    if ctx in _JSON or (ctx.header or "").lstrip().startswith("{"):
        return _parse_json(lines, ctx)
    out = Parsed()
    text = pl.col("text").str.strip_chars_end("\r\n")
    frame = lines.with_columns(text.alias("text")).filter(pl.col("text").str.strip_chars() != "",
                                                          ~_prompt(pl.col("text")))
    rule = pl.col("text").str.contains(_RULE)
    pipe_hdr = pl.col("text").str.strip_chars().str.contains(_HEADER) & pl.col("text").str.contains(_NAMES_ID)
    # (the next line of the same file: dumps parsed together never lend one another a rule)
    fixed_hdr = (rule.shift(-1).over(file_of_line()).fill_null(False) & pl.col("text").str.contains(_FIXED_HEAD)
                 & pl.col("text").str.contains(_WORDS_ID))
    frame = frame.with_columns(pipe_hdr.alias("_pipe"), fixed_hdr.alias("_fixed"), rule.alias("_rule"))
    frame = frame.with_columns((pl.col("_pipe") | pl.col("_fixed")).cum_sum().alias("_grp"))
    first = frame.height and frame["line"][0] > 1
    layouts: dict[int, _Layout | None] = {0: (_LAYOUTS.get(ctx) or _file_layout(ctx)) if first else None}
    heads = frame.filter(pl.col("_pipe") | pl.col("_fixed"))
    rules = frame.filter(pl.col("_rule")).select(pl.col("line") - 1, pl.col("text").alias("_rule_text"))
    heads = heads.join(rules, on="line", how="left")
    for g, head, is_fixed, rule_text in heads.select("_grp", "text", "_fixed", "_rule_text").iter_rows():
        layouts[g] = _fixed_layout(head, rule_text) if is_fixed else _Layout(tuple(head.strip().split("|")))
    # NOTE: the rows under every header of one layout are read together (one call, not one a header: many dumps
    # of one `--format` parsed as one batch); warnings stay one a header, in the order of the headers
    by_layout: dict[_Layout | None, list[int]] = {}
    for g, layout in sorted(layouts.items()):
        by_layout.setdefault(layout, []).append(g)
    said: list[tuple[int, str]] = []
    for layout, groups in by_layout.items():
        rows = frame.filter(pl.col("_grp").is_in(groups) & ~pl.col("_pipe") & ~pl.col("_fixed"))
        if layout is not None and layout.spans is not None:  # the dash rule under a fixed-width header
            rows = rows.filter(~pl.col("_rule"))
        if not rows.height:
            continue
        if layout is None:
            brief = pl.col("text").str.contains(_BRIEF_ROW)
            if rows.select(brief.all()).item():  # headerless `sacct -b -n` rows: their own three columns
                rows = rows.with_columns(pl.col("text").str.strip_chars().str.strip_suffix("|"))
                jobs, _ = read_rows(rows, list(_BRIEF_NAMES), ctx)
                out.add("jobs", jobs)
                out.add("events", job_events(jobs, rows, ctx))
                continue
            out.unparsed += rows.height
            said.append((0, f"line {rows['line'][0]}: sacct rows before any header line"))
            continue
        jobs, bad = (read_fixed(rows, layout, ctx) if layout.spans is not None
                     else read_rows(rows, list(layout.names), ctx))
        out.add("jobs", jobs)
        out.add("events", job_events(jobs, rows, ctx))
        if bad.height:
            out.unparsed += bad.height
            for g, line, n in bad.group_by("_grp").agg(pl.col("line").first(), pl.len()).iter_rows():
                said.append((g, f"line {line}: {n} sacct rows that do not fit the header"))
    out.warnings += [w for _, w in sorted(said)]
    if len(by_layout) > 1:  # (rows of several layouts: each table in the lines' order, as read one by one)
        out.tables = {t: f.sort("line", maintain_order=True) for t, f in out.tables.items()}
    if len(layouts) > 1 and layouts[max(layouts)] is not None:
        _LAYOUTS[ctx] = layouts[max(layouts)]
    return out


def _prompt(text: pl.Expr) -> pl.Expr:
    """Whether the line is a shell prompt and the sacct command (`_PROMPT`)."""
    runs = text.str.extract_groups(_PROMPT_RUNS)
    short = [runs.struct.field(k).str.len_chars().fill_null(0) <= 200 for k in ("b", "w")]
    return text.str.contains(_PROMPT_RUNS) & short[0] & short[1]


def _fixed_layout(head: str, rule: str) -> _Layout:
    """Column spans from the dash rule, names from the header text above each run."""
    spans = tuple((m.start(), m.end()) for m in re.finditer(r"-+", rule))
    return _Layout(tuple(head[a:b].strip() for a, b in spans), spans)


def _columns(names: list[str], value: Callable[[int], pl.Expr]) -> dict[str, pl.Expr]:
    """What each of FIELDS reads as, from the column names (any case) and how to take column i."""
    lower = [n.lower() for n in names]
    return {key: next((value(lower.index(n)) for n in cands if n in lower), pl.lit(None, pl.String))
            for key, cands in FIELDS.items()}


def read_rows(rows: pl.DataFrame, names: list[str], ctx: Context) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The jobs rows of `rows` under `|` header `names`, and the rows whose field count does not fit."""
    trailing = names[-1] == ""  # --parsable ends every line with `|`
    names = names[:-1] if trailing else names
    parts = pl.col("text")
    if trailing:
        parts = parts.str.strip_suffix("|")
    frame = rows.with_columns(parts.str.split("|").alias("_f"))
    fits = pl.col("_f").list.len() == len(names)
    bad = frame.filter(~fits)
    frame = frame.filter(fits)
    return jobs_frame(frame, _columns(names, lambda i: pl.col("_f").list.get(i)), ctx), bad


def read_fixed(rows: pl.DataFrame, layout: _Layout, ctx: Context) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The jobs rows of fixed-width `rows`, and the rows that do not line up with the columns."""
    spans = layout.spans or ()
    # A row of the table has a blank (or its end) between every two columns; anything else is no row.
    gaps = [pl.col("text").str.slice(b, 1).is_in(["", " "]) for _, b in spans[:-1]]
    fits = pl.all_horizontal(gaps) if gaps else pl.lit(True)
    bad = rows.filter(~fits)
    cols = {f"_c{i}": (pl.col("text").str.slice(a, b - a) if i < len(spans) - 1 else pl.col("text").str.slice(a))
            .str.strip_chars() for i, (a, b) in enumerate(spans)}
    frame = rows.filter(fits).with_columns(**cols)
    return jobs_frame(frame, _columns(list(layout.names), lambda i: pl.col(f"_c{i}")), ctx), bad


# ---------------------------------------------------------------- sacct --json


def _parse_json(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """The jobs of the `sacct --json` text in this batch; a job cut by the batch's end waits for the next."""
    out = Parsed()
    st = _JSON.setdefault(ctx, _JsonState(line=int(lines["line"][0]) if lines.height else 1))
    if st.stage == 2 or not lines.height:
        return out
    text = "\n".join(lines["text"].to_list())
    text = f"{st.buf}\n{text}" if st.buf else text
    pos = 0
    if st.stage == 0:
        m = _JSON_JOBS.search(text)
        if m is None:  # not there yet: keep the last line only, the key may be on it
            cut = text.rfind("\n") + 1
            st.line += text.count("\n", 0, cut)
            st.buf = text[cut:]
            return out
        pos, st.stage = m.end(), 1
    decoder = json.JSONDecoder()
    rows: list[dict] = []
    line, seen = st.line, 0  # `line` is the line of text[seen]

    def at(i: int) -> int:
        nonlocal line, seen
        line += text.count("\n", seen, i)
        seen = i
        return line

    def nxt() -> re.Pattern[str]:
        # NOTE: pretty-printed, every job starts on a line of its own at the first job's indentation, and the
        # array's `]` on one less indented: a damaged job is skipped to what follows it.
        ind = st.indent or ""
        return re.compile(rf"\n(?:{re.escape(ind)}\{{|[ \t]{{0,{max(len(ind) - 1, 0)}}}\])")

    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            break
        if text[pos] == "]":
            st.stage = 2
            break
        if st.indent is None and text[pos] == "{":
            st.indent = text[text.rfind("\n", 0, pos) + 1:pos]
        job, end = None, pos
        if not st.skipping:
            try:
                job, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as e:
                # cut by the batch's end (the rest comes with the next batch), or damaged
                cut = e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
                if cut and len(text) - pos <= _MAX_JOB_CHARS and not nxt().search(text, pos + 1):
                    break
                out.warnings.append(f"line {at(pos)}: sacct --json text that is no job object, skipped")
                out.unparsed += 1
                st.skipping = True
        if st.skipping:
            m = nxt().search(text, pos + 1)
            if m is None:
                if len(text) - pos > _MAX_JOB_CHARS:
                    st.stage = 2
                break
            st.skipping, pos = False, m.start() + 1
            continue
        if isinstance(job, dict):
            rows.extend(_json_rows(job, at(pos)))
        else:
            out.warnings.append(f"line {at(pos)}: sacct --json text that is no job object, skipped")
            out.unparsed += 1
        pos = end
    st.line, st.buf = at(pos), (text[pos:] if st.stage == 1 else "")
    _add_json_jobs(out, rows, ctx)
    return out


def _add_json_jobs(out: Parsed, rows: list[dict], ctx: Context) -> None:
    """The jobs (and their events) of `_json_rows`' rows."""
    if rows:
        schema = {"line": pl.Int64, **dict.fromkeys(FIELDS, pl.String), **dict.fromkeys(_TIMES, pl.Int64)}
        frame = pl.DataFrame(rows, schema=schema)
        # NOTE: JSON times are UNIX seconds, so UTC whatever the cluster's zone; 0 is "not set".
        when = {k: pl.when(pl.col(k).is_between(1, _LAST_SECOND)).then(pl.col(k)) for k in _TIMES}
        frame = frame.with_columns(**{k: pl.from_epoch(e, "s").dt.strftime("%Y-%m-%dT%H:%M:%S")
                                      for k, e in when.items()})
        jobs = jobs_frame(frame, {k: pl.col(k) for k in FIELDS}, dataclasses.replace(ctx, tz="UTC"))
        out.add("jobs", jobs.cast(TABLE_COLUMNS["jobs"]))
        out.add("events", job_events(jobs, None, ctx))


_DOC_JOBS = 20_000  # jobs held before their rows are handed on


def document(head: bytes) -> bool:
    """`sacct --json` on one line longer than the head (as `jq -c` or a REST client saves it): streamed as a
    document, with no limit on the line's length; pretty-printed output is read line by line (exact lines)."""
    return head.lstrip().startswith(b"{") and b"\n" not in head.rstrip()


def parse_document(pieces: Iterator[tuple[int, bytes]], ctx: Context) -> Iterator[Parsed]:
    """The jobs of `sacct --json` documents streamed with ijson, a job object at a time (each on its piece's line)."""
    import ijson  # NOTE: only a one-line dump needs it

    jobs = ijson.sendable_list()
    coro = ijson.items_coro(jobs, "jobs.item", use_float=True, multiple_values=True)
    out, rows, line = Parsed(), [], 1
    try:
        for line, piece in pieces:
            coro.send(piece)
            for job in jobs:
                if isinstance(job, dict):
                    rows.extend(_json_rows(job, line))
                else:
                    out.unparsed += 1
                    out.warnings.append(f"line {line}: sacct --json text that is no job object, skipped")
            jobs.clear()
            if len(rows) >= _DOC_JOBS:
                _add_json_jobs(out, rows, ctx)
                yield out
                out, rows = Parsed(), []
        coro.close()
    except ijson.JSONError as e:
        out.unparsed += 1
        out.warnings.append(f"line {line}: not valid JSON, or cut short: read up to here "
                            f"({str(e).splitlines()[0][:80]})")
    rows.extend(r for job in jobs if isinstance(job, dict) for r in _json_rows(job, line))
    _add_json_jobs(out, rows, ctx)
    yield out


_TIMES = ("start", "end", "submit")
_LAST_SECOND = 253402300799  # 9999-12-31T23:59:59: a larger "time" is a damaged number


def _num(v: object) -> int | None:
    """A number as the data_parser prints it: plain, or `{"set": true, "infinite": false, "number": n}`."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite"):
            return None
        v = v.get("number")
    if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return int(v) if -(1 << 63) <= v < (1 << 63) else None


def _word(v: object) -> str | None:
    """A state: a string, or (23.02+) a list of flags whose first is the state."""
    if isinstance(v, list):
        v = v[0] if v else None
    return v if isinstance(v, str) else None


def _exit(ec: object) -> str | None:
    """`exit:signal` from an exit_code object (`return_code`, `signal.id` or 21.08's `signal.signal_id`)."""
    if not isinstance(ec, dict):
        return None
    sig = ec.get("signal") if isinstance(ec.get("signal"), dict) else {}
    rc, sg = _num(ec.get("return_code")), _num(sig.get("id", sig.get("signal_id")))
    return None if rc is None and sg is None else f"{rc or 0}:{sg or 0}"


def _tres(t: object) -> str | None:
    """`tres.allocated` as AllocTRES prints it (`cpu=16,gres/gpu=8`)."""
    alloc = t.get("allocated") if isinstance(t, dict) else t
    if not isinstance(alloc, list):
        return alloc if isinstance(alloc, str) else None
    parts = [f"{x.get('type')}{'/' + x['name'] if x.get('name') else ''}={_num(x.get('count'))}"
             for x in alloc if isinstance(x, dict) and x.get("type")]
    return ",".join(parts) or None


def _json_rows(job: dict, line: int) -> list[dict]:
    """The job's row and one per step, as strings jobs_frame reads (times as UNIX seconds)."""
    jid = _num(job.get("job_id"))
    arr = job.get("array") if isinstance(job.get("array"), dict) else {}
    het = job.get("het") if isinstance(job.get("het"), dict) else {}
    a_job, a_task = _num(arr.get("job_id")), _num(arr.get("task_id"))
    h_job, h_off = _num(het.get("job_id")), _num(het.get("job_offset"))
    name = (f"{a_job}_{a_task}" if a_job and a_task is not None
            else f"{h_job}+{h_off}" if h_job and h_off is not None else None if jid is None else str(jid))
    state = job.get("state")
    times = job.get("time") if isinstance(job.get("time"), dict) else {}
    rows = [{
        "line": line, "job_id": name, "job_name": job.get("name") if isinstance(job.get("name"), str) else None,
        "job_id_raw": None if jid is None else str(jid),
        "state": _word(state.get("current") if isinstance(state, dict) else state), "exit": _exit(job.get("exit_code")),
        "start": _num(times.get("start")), "end": _num(times.get("end")), "submit": _num(times.get("submission")),
        "nodelist": job.get("nodes") if isinstance(job.get("nodes"), str) else None,
        "nnodes": str(_num(job.get("allocation_nodes"))) if _num(job.get("allocation_nodes")) else None,
        "tres": _tres(job.get("tres")),
    }]
    for s in job.get("steps") or []:
        if not isinstance(s, dict):
            continue
        step = s.get("step") if isinstance(s.get("step"), dict) else {}
        sid = step.get("id")
        # NOTE: the step id names the raw job id (`81314.batch`); sacct's text spells an array task's step
        # `81310_4.batch`, and so do we, so that steps join their job under one spelling.
        if isinstance(sid, str) and "." in sid:
            sid = f"{name}.{sid.split('.', 1)[1]}" if name and sid.split(".", 1)[0] == str(jid) else sid
        elif sid is not None:
            sid = f"{name}.{sid}"
        nodes = s.get("nodes") if isinstance(s.get("nodes"), dict) else {}
        st = s.get("time") if isinstance(s.get("time"), dict) else {}
        rows.append({
            "line": line, "job_id": sid, "job_name": step.get("name") if isinstance(step.get("name"), str) else None,
            "state": _word(s.get("state")), "exit": _exit(s.get("exit_code")), "start": _num(st.get("start")),
            "end": _num(st.get("end")), "submit": None,
            "nodelist": nodes.get("range") if isinstance(nodes.get("range"), str) else None,
            "nnodes": str(_num(nodes.get("count"))) if _num(nodes.get("count")) else None, "tres": None,
        })
    return rows
