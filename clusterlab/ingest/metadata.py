"""Typed loading of a bundle's metadata (inventory.toml, run.toml, boot_time): every key checked.

A bad value is one `InputError` line naming the file, the table and key, and why:
`inventory.toml: clusters.east.gpus_per_node: expected a positive integer, got 'eight'`.
"""

from __future__ import annotations

import datetime as dt
import math
import tomllib
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from clusterlab import hostlist
from clusterlab.ingest.reader import InputError

MAX_HOSTS = hostlist.MAX_HOSTS  # hosts one hostlist expression may name: more is a typo, and expanding it would hang
_SHOWN_PROBLEMS = 3
# A boot time outside these years is a corrupt file, and would overflow the arithmetic on dmesg offsets.
BOOT_YEARS = (1990, 2200)


class _Bad(ValueError):
    """A value that does not fit its key (the message says what was expected)."""


def show(value: object, limit: int = 60) -> str:
    """A value as the user wrote it, short and on one line."""
    if isinstance(value, float):
        text = "inf" if value == math.inf else "-inf" if value == -math.inf else repr(value)
    elif isinstance(value, dt.date | dt.time):
        text = value.isoformat()
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _integer(lo: int, hi: int) -> Callable[[Any], int]:
    what = "a positive integer" if lo == 1 else "a non-negative integer"

    def check(v: Any) -> int:
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            v = int(v)  # `params = 8e9` is an integer written the short way
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise _Bad(f"expected {what}")
        if v > hi:
            raise _Bad(f"expected {what} of at most {hi:,}")
        return v

    return check


def _number(positive: bool, hi: float) -> Callable[[Any], float]:
    what = "a finite positive number" if positive else "a finite non-negative number"

    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _Bad(f"expected {what}")
        v = float(v) if abs(v) < 1e308 else math.copysign(math.inf, v)
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise _Bad(f"expected {what}")
        if v > hi:
            raise _Bad(f"expected {what} of at most {hi:g}")
        return v

    return check


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise _Bad("expected a string")
    if "\x00" in v:
        raise _Bad("expected a string without NUL characters")
    return v


def _name(v: Any) -> str:
    """A name that lands in tables and commands: one line of printable text."""
    if not isinstance(v, str) or not v.strip() or not v.isprintable():
        raise _Bad("expected a name of printable characters")
    return v


def _table(v: Any) -> dict:
    if not isinstance(v, dict):
        raise _Bad("expected a table")
    return v


def _any(v: Any) -> Any:
    return v  # checked by the caller, which knows more (delivered needs the cluster's hosts)


def _date(v: Any) -> dt.date:
    if isinstance(v, dt.datetime):
        return v.date()
    if not isinstance(v, dt.date):
        raise _Bad("expected a date (2026-11-01)")
    return v


def _zone(v: Any) -> str:
    """An IANA time zone that both Python and polars know (collectors convert local times with polars)."""
    if not isinstance(v, str):
        raise _Bad("expected a time zone name (Europe/Helsinki)")
    try:
        zoneinfo.ZoneInfo(v)
        pl.Series([dt.datetime(2026, 1, 1)]).dt.replace_time_zone(v)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError, pl.exceptions.PolarsError):
        raise _Bad("unknown time zone") from None
    return v


def hosts_of(v: Any) -> list[str]:
    """The hosts of a hostlist expression, refusing one that names an absurd number of them."""
    if not isinstance(v, str):
        raise _Bad("expected a hostlist (east-[001-016])")
    try:
        if (n := hostlist.size(v)) > MAX_HOSTS:
            raise _Bad(f"names {n} hosts, more than {MAX_HOSTS:,}")
        return hostlist.expand(v)
    except ValueError as e:
        raise _Bad(str(e)) from None


_PROVIDER: dict[str, Callable[[Any], Any]] = {
    "usd_per_gpu_hour": _number(False, 1e6), "notes": _text, "support": _text,
}
_CLUSTER: dict[str, Callable[[Any], Any]] = {
    "provider": _name, "gpu": _text, "gpus_per_node": _integer(1, 1024), "interconnect": _text, "nodes": _text,
    "contracted_nodes": _integer(0, MAX_HOSTS), "contract_start": _date, "timezone": _zone, "delivered": _any,
}
RUN_KEYS: dict[str, Callable[[Any], Any]] = {
    "cluster": _name, "gpus": _integer(1, 10_000_000), "tokens_per_step": _integer(1, 10**12),
    "flops_per_token": _number(True, 1e18), "params": _integer(1, 10**15), "layers": _integer(1, 100_000),
    "hidden": _integer(1, 10_000_000), "seq_len": _integer(1, 10**9), "checkpoint_dir": _text, "launcher": _text,
    "launch_command": _text,
}


@dataclass
class _Problems:
    path: str
    lines: list[str] = field(default_factory=list)
    # NOTE: a key we do not know (a provider's VM size, the team's own notes) is told, not fatal: refusing the whole
    # file for it lost every host's cluster and provider, and with them MFU and cost
    ignored: list[str] = field(default_factory=list)

    def add(self, key: str, why: str, value: object = None, shown: bool = True) -> None:
        if not key.isprintable():  # NOTE: a key is the user's text too: one line, whatever it holds
            key = key.encode("unicode_escape").decode()
        self.lines.append(f"{key}: {why}, got {show(value)}" if shown else f"{key}: {why}")

    def check(self) -> None:
        """Raise the problems found as one line (the ignored keys with them: the file is refused all the same)."""
        if self.lines:
            lines = self.lines + self.ignored
            more = len(lines) - _SHOWN_PROBLEMS
            text = "; ".join(lines[:_SHOWN_PROBLEMS]) + (f" (and {more} more)" if more > 0 else "")
            raise InputError(self.path, text)

    def notes(self) -> list[str]:
        """One line per ignored key, naming the file."""
        return [f"{self.path}: {line}" for line in self.ignored]


def _fields(table: object, schema: dict[str, Callable[[Any], Any]], prefix: str, out: _Problems) -> dict:
    """The keys of `table` checked against `schema` (bad and unknown keys go to `out`)."""
    if not isinstance(table, dict):
        out.add(prefix.rstrip("."), "expected a table", table)
        return {}
    vals = {}
    for key, value in table.items():
        if key not in schema:
            shown = key if key.isprintable() else key.encode("unicode_escape").decode()
            out.ignored.append(f"{prefix}{shown}: unknown key, ignored (known: {', '.join(schema)})")
            continue
        try:
            vals[key] = schema[key](value)
        except _Bad as e:
            out.add(f"{prefix}{key}", str(e), value)
    return vals


def load_toml(path: Path) -> dict:
    """A TOML file as a dict; a syntax error is an InputError naming the file (and its line)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(str(path), f"not valid TOML: {e}") from None
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror}") from None
    except RecursionError:  # deeply nested arrays or tables
        raise InputError(str(path), "not valid TOML: nested too deeply") from None


@dataclass(frozen=True)
class Provider:
    name: str
    usd_per_gpu_hour: float | None
    notes: str | None


@dataclass(frozen=True)
class Cluster:
    name: str
    provider: str
    gpu: str | None
    gpus_per_node: int | None
    interconnect: str | None
    contracted_nodes: int | None
    contract_start: dt.date | None
    timezone: str
    nodes_expr: str | None
    hosts: tuple[str, ...]
    delivered: dict[str, dt.date]  # host -> the date the provider handed it over


@dataclass(frozen=True)
class Inventory:
    providers: list[Provider]
    clusters: list[Cluster]
    ignored: tuple[str, ...] = ()  # one line per unknown key: "path: table.key: unknown key, ignored (...)"


def _delivered(table: object, hosts: list[str], key: str, out: _Problems) -> dict[str, dt.date]:
    """`delivered = { "east-[013-016]" = 2026-11-25 }`: host -> the date the provider handed it over.

    Nodes not named were there from the contract's start; a node handed over after it is late.
    """
    if not isinstance(table, dict):
        out.add(key, "must be a table of hostlist = date", table)
        return {}
    known, found = set(hosts), {}
    for expr, when in table.items():
        try:
            named = hosts_of(expr)
            found.update(dict.fromkeys(named, _date(when)))
        except _Bad as e:
            why = "must be a date (2026-11-25)" if "date" in str(e) else str(e)
            out.add(f"{key}.{expr}", why, when if "date" in str(e) else expr)
            continue
        if stray := sorted(set(named) - known):
            out.add(f"{key}.{expr}", f"names hosts outside the cluster's nodes: {', '.join(stray[:5])}", shown=False)
    return found


def _cluster(name: str, table: dict, out: _Problems) -> Cluster | None:
    key = f"clusters.{name}"
    before = len(out.lines)
    vals = _fields(table, _CLUSTER, key + ".", out)
    if isinstance(table, dict) and "provider" not in table:
        out.add(key, "needs a provider", shown=False)
    hosts: list[str] = []
    if "nodes" in vals:
        try:
            hosts = hosts_of(vals["nodes"])
        except _Bad as e:
            out.add(f"{key}.nodes", str(e), vals["nodes"])
    delivered = _delivered(vals["delivered"], hosts, f"{key}.delivered", out) if "delivered" in vals else {}
    if len(out.lines) > before:
        return None
    return Cluster(name, vals["provider"], vals.get("gpu"), vals.get("gpus_per_node"), vals.get("interconnect"),
                   vals.get("contracted_nodes"), vals.get("contract_start"), vals.get("timezone", "UTC"),
                   vals.get("nodes"), tuple(hosts), delivered)


def read_inventory(path: Path) -> Inventory:
    """inventory.toml checked key by key (InputError naming file, table and key when a value is bad)."""
    doc = load_toml(path)
    out = _Problems(str(path))
    top = _fields(doc, {"providers": _table, "clusters": _table}, "", out)
    providers, clusters = [], []
    for name in [*top.get("providers", {}), *top.get("clusters", {})]:
        if not name.isprintable():
            out.add(name, "expected a table name of printable characters", shown=False)
    for name, table in top.get("providers", {}).items():
        p = _fields(table, _PROVIDER, f"providers.{name}.", out)
        providers.append(Provider(name, p.get("usd_per_gpu_hour"), p.get("notes") or p.get("support")))
    for name, table in top.get("clusters", {}).items():
        if (c := _cluster(name, table, out)) is not None:
            clusters.append(c)
    out.check()
    return Inventory(providers, clusters, tuple(out.notes()))


def read_run(path: Path) -> tuple[dict[str, Any], list[str]]:
    """run.toml checked key by key: the known keys and their values, and a line per unknown key (ignored)."""
    doc = load_toml(path)
    out = _Problems(str(path))
    vals = _fields(doc, RUN_KEYS, "", out)
    out.check()
    return vals, out.notes()


def boot_time(text: str) -> dt.datetime:
    """A boot time: epoch seconds (`btime` of /proc/stat) or ISO 8601 (`uptime -s` is local); naive UTC.

    ValueError when the text is neither, or names a time outside BOOT_YEARS.
    """
    text = text.strip().removeprefix("btime").strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        lo, hi = (dt.datetime(y, 1, 1, tzinfo=dt.UTC).timestamp() for y in BOOT_YEARS)
        if not lo <= seconds < hi:  # also NaN and inf
            raise ValueError("out of range")
        return dt.datetime.fromtimestamp(seconds, dt.UTC).replace(tzinfo=None)
    ts = dt.datetime.fromisoformat(text)
    if ts.tzinfo:
        ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
    if not BOOT_YEARS[0] <= ts.year < BOOT_YEARS[1]:
        raise ValueError("out of range")
    return ts


def boot_time_problem(text: str) -> str | None:
    """Why a boot_time file's text is unusable (None: it is fine)."""
    try:
        boot_time(text)
    except (ValueError, OverflowError, OSError):
        return (f"expected epoch seconds or an ISO 8601 time between {BOOT_YEARS[0]} and {BOOT_YEARS[1]}, "
                f"got {show(text.strip())}")
    return None
