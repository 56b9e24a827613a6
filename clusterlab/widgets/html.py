"""Frames as small HTML tables for the widgets; every value is escaped (log text is untrusted)."""

from __future__ import annotations

import datetime as dt
import html

import ipywidgets as w
import polars as pl

MAX_ROWS = 50  # rows a table shows; the frame behind it has them all

_STYLE = ("<style>.cl-t{border-collapse:collapse;font-size:12px;font-family:var(--jp-ui-font-family,sans-serif)}"
          ".cl-t th,.cl-t td{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top;"
          "white-space:nowrap;line-height:1.35}.cl-t th{position:sticky;top:0;background:#f3f3f3}"
          ".cl-t tr.cl-sel{background:#fff3cd}.cl-t td.cl-wrap{white-space:normal;min-width:240px;max-width:720px}"
          # a log line is read whole: it keeps room for ~70 characters a line; a file path breaks anywhere
          ".cl-t td.cl-text{min-width:420px}.cl-t td.cl-path{white-space:normal;word-break:break-all;"
          "min-width:140px;max-width:260px;font-size:11px}.cl-t .cl-src{color:#666;font-size:11px;word-break:break-all}"
          ".cl-t code{white-space:pre-wrap;word-break:break-all;font-size:11px}"
          ".cl-box{overflow:auto;max-width:100%;box-sizing:border-box;border:1px solid #e5e5e5}"
          # an HTML widget's content is a flex item, never narrower than its widest table unless allowed to shrink;
          # otherwise a table wider than the notebook runs past its edge, cut off, instead of scrolling in its box
          ".cl-html>.widget-html-content,.cl-html>.jupyter-widget-html-content{min-width:0}"
          ".cl-note{color:#555;font-size:12px}.cl-warn{color:#8a4b00;font-weight:bold}"
          ".cl-error{color:#8b1a1a;background:#fdecea;border:1px solid #f5c2c0;padding:4px 8px;font-size:12px}"
          "</style>")


def scrolling() -> w.HTML:
    """An HTML view for tables: a table wider than the view scrolls in its box, never past the view's edge."""
    view = w.HTML()  # NOTE: no width of 100%: with a widget's 2 px margin it would run 2 px past the notebook
    view.add_class("cl-html")
    return view


def esc(value: object) -> str:
    """A value as escaped text: datetimes to the second, floats to two decimals, None as blank."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:,.2f}"
    return html.escape(str(value), quote=True)


def table(frame: pl.DataFrame, columns: list[str] | None = None, key: str | None = None,
          selected: object = None, code: tuple[str, ...] = (), wrap: tuple[str, ...] = (),
          max_rows: int = MAX_ROWS, height_px: int | None = None, paths: tuple[str, ...] = ()) -> str:
    """An HTML table of `columns`, in a scrolling box `height_px` high; the row whose `key` is `selected` is lit."""
    cols = [c for c in (columns or frame.columns) if c in frame.columns]
    if not frame.height:
        return _STYLE + '<div class="cl-note">none</div>'
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for row in frame.head(max_rows).iter_rows(named=True):
        cls = ' class="cl-sel"' if key is not None and row.get(key) == selected else ""
        cells = "".join(_cell(row[c], c in code, "cl-path" if c in paths else "cl-wrap cl-text" if c in code
                              else "cl-wrap" if c in wrap else None) for c in cols)
        body.append(f"<tr{cls}>{cells}</tr>")
    more = (f'<div class="cl-note">{frame.height - max_rows:,} more rows in the frame</div>'
            if frame.height > max_rows else "")
    box = f' style="max-height:{height_px}px"' if height_px else ""
    return f'{_STYLE}<div class="cl-box"{box}><table class="cl-t"><tr>{head}</tr>{"".join(body)}</table></div>{more}'


def _cell(value: object, code: bool, css: str | None) -> str:
    text = f"<code>{esc(value)}</code>" if code else esc(value)
    return f'<td class="{css}">{text}</td>' if css else f"<td>{text}</td>"


def short_path(path: str | None, keep: int = 3) -> str | None:
    """The last `keep` components of a path: enough to tell a bundle's files apart in a narrow column."""
    if not path:
        return path
    parts = path.split("/")
    return path if len(parts) <= keep else "…/" + "/".join(parts[-keep:])


def evidence(frame: pl.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """Evidence lines, root cause first, each with the file and line it came from.

    The line itself gets the width: source and file:line go under it in small type (the full path in its
    tooltip), so the text keeps room for about 70 characters a line in a notebook at 1,400 px."""
    if not frame.height:
        return _STYLE + '<div class="cl-note">no evidence lines for this incident</div>'
    head = "".join(f"<th>{h}</th>" for h in ("#", "ts", "host", "kind", "line"))
    body = []
    for r in frame.head(max_rows).iter_rows(named=True):
        where = f"{r.get('file')}:{r.get('line')}" if r.get("file") else ""
        shown = f"{short_path(r.get('file'))}:{r.get('line')}" if r.get("file") else ""
        src = (f'<div class="cl-src" title="{esc(where)}">{esc(r.get("source"))}'
               f'{" · " + esc(shown) if shown else ""}</div>')
        body.append(f"<tr><td>{esc(r.get('rank_in_incident'))}</td><td>{esc(r.get('ts'))}</td>"
                    f"<td>{esc(r.get('host'))}</td><td>{esc(r.get('kind'))}</td>"
                    f'<td class="cl-wrap cl-text"><code>{esc(r.get("text"))}</code>{src}</td></tr>')
    more = (f'<div class="cl-note">{frame.height - max_rows:,} more rows in the frame</div>'
            if frame.height > max_rows else "")
    return (f'{_STYLE}<div class="cl-box" style="max-height:360px"><table class="cl-t"><tr>{head}</tr>'
            f'{"".join(body)}</table></div>{more}')


def note(text: str, warn: bool = False) -> str:
    """One escaped line of explanation (or warning)."""
    return f'{_STYLE}<div class="{"cl-warn" if warn else "cl-note"}">{esc(text)}</div>'


def facts(pairs: list[tuple[str, object]]) -> str:
    """A line of `label: value` facts, escaped."""
    return _STYLE + '<div class="cl-note">' + " · ".join(
        f"<b>{esc(k)}</b> {esc(v)}" for k, v in pairs) + "</div>"


def error(text: str) -> str:
    """An error box: one escaped line saying what could not be shown and why."""
    return f'{_STYLE}<div class="cl-error">{esc(text)}</div>'
