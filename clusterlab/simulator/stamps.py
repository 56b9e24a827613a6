"""Time stamps as each tool prints them, Slurm hostlists and durations (the fleet and the demo scenario share them)."""

from __future__ import annotations

import datetime as dt

UTC = dt.UTC


def after(t: dt.datetime, seconds: float) -> dt.datetime:
    """`t` plus `seconds`."""
    return t + dt.timedelta(seconds=seconds)


def from_ms(ms: int) -> dt.datetime:
    """An aware UTC datetime from integer epoch milliseconds (exact: no float rounding)."""
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=int(ms))


def hostlist(hosts: list[str] | tuple[str, ...]) -> str:
    """Slurm's compressed form: east-[001-002,004-005] (hosts of one prefix, sorted)."""
    if len(hosts) == 1:
        return hosts[0]
    prefix = hosts[0].rsplit("-", 1)[0]
    nums = [h.rsplit("-", 1)[1] for h in hosts]
    parts, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and int(nums[j + 1]) == int(nums[j]) + 1:
            j += 1
        parts.append(nums[i] if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return f"{prefix}-[{','.join(parts)}]"


def iso_z(t: dt.datetime) -> str:
    """ISO 8601 UTC with milliseconds and `Z`."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def iso_s(t: dt.datetime) -> str:
    """Slurm's times: local (here UTC) time, whole seconds."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def ctld(t: dt.datetime) -> str:
    """The slurmctld.log prefix (LogTimeFormat=iso8601_ms)."""
    return "[" + t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}]"


def glog(t: dt.datetime, level: str) -> str:
    """torch.distributed.elastic's Python logging header: level, month-day, time (no year)."""
    return f"{level}{t:%m%d %H:%M:%S}.{(t.microsecond // 1000) * 1000:06d}"


def c10d_stamp(t: dt.datetime, level: str = "E") -> str:
    """c10d's C++ logging header, nanoseconds (the last three digits are noise, as printed)."""
    return f"{level}{t:%m%d %H:%M:%S}.{t.microsecond * 1000 + (t.microsecond * 7919) % 1000:09d}"


def pylog(t: dt.datetime) -> str:
    """Python logging's asctime."""
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}"


def megatron_dt(t: dt.datetime) -> str:
    """Megatron-LM's datetime (whole seconds)."""
    return f"{t:%Y-%m-%d %H:%M:%S}"


def elastic_ts(t: dt.datetime) -> str:
    """The `time` field of a ChildFailedError summary."""
    return f"{t:%Y-%m-%d_%H:%M:%S}"


def dmesg_raw(t: dt.datetime, boot: dt.datetime) -> str:
    """Raw dmesg: seconds since boot."""
    up = (t - boot).total_seconds()
    return f"[{int(up):5d}.{int(round((up % 1) * 1e6)) % 1000000:06d}]"


def dmesg_ctime(t: dt.datetime) -> str:
    """dmesg -T, in the node's local time."""
    return "[" + t.strftime("%a %b ") + f"{t.day:2d}" + t.strftime(" %H:%M:%S %Y") + "]"


def dmesg_iso(t: dt.datetime) -> str:
    """dmesg --time-format iso."""
    off = t.strftime("%z")
    return t.strftime("%Y-%m-%dT%H:%M:%S,") + f"{t.microsecond:06d}{off[:3]}:{off[3:]}"


def journal_iso(t: dt.datetime) -> str:
    """journalctl -o short-iso (systemd >= 250)."""
    off = t.strftime("%z")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f"{off[:3]}:{off[3:]}"


def syslog_ts(t: dt.datetime) -> str:
    """Classic syslog: month, day, time (no year)."""
    return t.strftime("%b ") + f"{t.day:2d}" + t.strftime(" %H:%M:%S")


def elapsed(seconds: float) -> str:
    """Slurm's [D-]HH:MM:SS."""
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"
