"""A host's telemetry over an incident's window, stacked in one figure: step time, SM clock and throttle
reasons, temperature and power, filesystem and fabric throughput (the Explorer's host tab shows it).

`window` gathers the frames (pure: a connection in, frames out); `draw` renders them on four axes that
share the time axis; `host_html` is the Explorer's embedded PNG (empty where the host has no telemetry).
"""

from __future__ import annotations

import base64
import datetime as dt
import io
from dataclasses import dataclass

import duckdb
import polars as pl

from clusterlab import store, telemetry
from clusterlab.plots.charts import plain

MARGIN = dt.timedelta(minutes=10)  # shown before and after the incident


@dataclass
class Window:
    host: str
    start: dt.datetime
    end: dt.datetime
    steps: pl.DataFrame  # ts, step_s (the run's step records)
    gpus: pl.DataFrame  # ts, gpu, sm_clock_mhz, throttle_reasons, gpu_temp_c, power_w
    throughput: pl.DataFrame  # ts, service, bytes_s


def window(con: duckdb.DuckDBPyConnection, host: str, start: dt.datetime, end: dt.datetime,
           run: str | None = None) -> Window:
    """The host's telemetry, and the run's step times, from MARGIN before `start` to MARGIN after `end`."""
    lo, hi = start - MARGIN, end + MARGIN
    steps = store.frame(con, """SELECT ts, max(step_s) AS step_s FROM steps WHERE run = $run AND ts BETWEEN $lo AND $hi
                                AND step_s IS NOT NULL GROUP BY ts ORDER BY ts""", {"run": run, "lo": lo, "hi": hi})
    gpus = store.frame(con, """
        SELECT ts, gpu, max(value) FILTER (WHERE metric = 'sm_clock_mhz') AS sm_clock_mhz,
               bit_or(CAST(value AS BIGINT)) FILTER (WHERE metric = 'throttle_reasons') AS throttle_reasons,
               max(value) FILTER (WHERE metric = 'gpu_temp_c') AS gpu_temp_c,
               max(value) FILTER (WHERE metric = 'power_w') AS power_w
        FROM telemetry WHERE host = $host AND gpu IS NOT NULL AND ts BETWEEN $lo AND $hi
        GROUP BY ts, gpu ORDER BY gpu, ts""", {"host": host, "lo": lo, "hi": hi})
    groups = pl.DataFrame({"metric": [m for ms in telemetry.THROUGHPUT.values() for m in ms],
                           "service": [g for g, ms in telemetry.THROUGHPUT.items() for _ in ms]})
    throughput = store.frame(con, """
        SELECT t.ts, g.service, sum(t.value) AS bytes_s FROM telemetry t JOIN groups g USING (metric)
        WHERE t.host = $host AND t.ts BETWEEN $lo AND $hi GROUP BY ALL ORDER BY g.service, t.ts""",
                             {"host": host, "lo": lo, "hi": hi}, groups=groups)
    return Window(host, lo, hi, steps, gpus, throughput)


def draw(win: Window, axes) -> None:
    """Four stacked axes: step time; SM clock per GPU with throttled samples marked; temperature and power;
    throughput per service. Labels come from data and are drawn as plain text."""
    step_ax, clock_ax, heat_ax, io_ax = axes
    if win.steps.height:
        step_ax.plot(win.steps["ts"].to_list(), win.steps["step_s"].to_list(), color="black", lw=1)
    step_ax.set_ylabel("step s")
    step_ax.set_title(plain(f"{win.host}: telemetry"), fontsize=9)
    fault = telemetry.FAULT_THROTTLE_MASK
    for (gpu,), g in win.gpus.partition_by("gpu", as_dict=True, maintain_order=True).items():
        clock_ax.plot(g["ts"].to_list(), g["sm_clock_mhz"].to_list(), lw=1, label=f"GPU {gpu}")
        hot = g.filter((pl.col("throttle_reasons").fill_null(0) & fault) != 0)
        if hot.height:
            clock_ax.scatter(hot["ts"].to_list(), hot["sm_clock_mhz"].to_list(), marker="x", color="red", s=14,
                             zorder=3)
        heat_ax.plot(g["ts"].to_list(), g["gpu_temp_c"].to_list(), lw=1)
    clock_ax.set_ylabel("SM MHz (x: throttled)")
    heat_ax.set_ylabel("GPU °C")
    if win.gpus.height and win.gpus["power_w"].drop_nulls().len():
        power = win.gpus.group_by("ts").agg(pl.col("power_w").sum()).sort("ts")
        twin = heat_ax.twinx()
        twin.plot(power["ts"].to_list(), power["power_w"].to_list(), color="gray", lw=1, ls="--")
        twin.set_ylabel("W (all GPUs)")
    for (service,), s in win.throughput.partition_by("service", as_dict=True, maintain_order=True).items():
        io_ax.plot(s["ts"].to_list(), (s["bytes_s"] / 1e9).to_list(), lw=1, label=plain(service))
    io_ax.set_ylabel("GB/s")
    if win.throughput.height:
        io_ax.legend(fontsize=7, loc="upper left")
    if win.gpus.height:
        clock_ax.legend(fontsize=6, ncol=4, loc="lower left")
    for ax in axes:
        ax.set_xlim(win.start, win.end)
        ax.tick_params(labelsize=7)


def png(win: Window) -> bytes:
    """The window's figure as PNG bytes (no pyplot: nothing leaks into a notebook)."""
    from matplotlib.figure import Figure

    # NOTE: fixed margins: constrained layout measures every text first and costs more than the drawing
    fig = Figure(figsize=(7.5, 6.4), dpi=80)
    fig.subplots_adjust(left=0.1, right=0.9, bottom=0.06, top=0.95, hspace=0.12)
    axes = fig.subplots(4, 1, sharex=True)
    draw(win, axes)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def host_html(con: duckdb.DuckDBPyConnection, host: str | None, incidents: pl.DataFrame, incident_id: str | None,
              run: str | None) -> str:
    """The Explorer's telemetry figure of `host` over the selected incident's window ('' without telemetry)."""
    row = incidents.filter(pl.col("incident_id") == incident_id) if incident_id and incidents.height else incidents
    if not host or not row.height or row["root_ts"][0] is None:
        return ""
    if not con.execute("SELECT EXISTS (SELECT 1 FROM telemetry WHERE host = ?)", [host]).fetchall()[0][0]:
        return ""  # most hosts of most stores: no query more
    start, end = row["root_ts"][0], row["exit_ts"][0] or row["root_ts"][0]
    win = window(con, host, start, end, run)
    if not (win.gpus.height or win.throughput.height):
        return ""
    data = base64.b64encode(png(win)).decode("ascii")
    return f'<b>Telemetry over the incident</b><br><img src="data:image/png;base64,{data}" alt="telemetry"/>'
