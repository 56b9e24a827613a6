"""Slurm hostlist expressions: `east-[001-064]`, `node[1-3,7],gpu-a[01-02]-b[1-2]`."""

from __future__ import annotations

import re

_BRACKET = re.compile(r"\[([^\[\]]*)\]")


def _split_top(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {expr!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced '[' in hostlist {expr!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _range_values(spec: str, expr: str) -> list[str]:
    out = []
    for item in spec.split(","):
        item = item.strip()
        if "-" in item:
            lo, hi = item.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"bad range {item!r} in hostlist {expr!r}")
            width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
            out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
        elif item.isdigit():
            out.append(item)
        else:
            raise ValueError(f"bad item {item!r} in hostlist {expr!r}")
    return out


def expand(expr: str) -> list[str]:
    """All host names a hostlist expression names, in order."""
    hosts: list[str] = []
    for part in _split_top(expr):
        m = _BRACKET.search(part)
        if not m:
            hosts.append(part)
            continue
        head, tail = part[: m.start()], part[m.end() :]
        for v in _range_values(m.group(1), expr):
            hosts.extend(expand(head + v + tail))
    return hosts


def compress(hosts: list[str]) -> str:
    """A compact hostlist for `hosts` (numeric suffixes of equal width folded into ranges)."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for h in sorted(set(hosts)):
        m = re.fullmatch(r"(.*?)(\d+)", h)
        if m:
            groups.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
        else:
            plain.append(h)
    parts = list(plain)
    for (prefix, width), nums in sorted(groups.items()):
        nums.sort()
        runs, start, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        parts.append(f"{prefix}{runs[0]}" if len(runs) == 1 and "-" not in runs[0] else f"{prefix}[{','.join(runs)}]")
    return ",".join(parts)
