"""Alerts of a watch: one terminal line per detection, a JSON Lines file, a program fed the event on stdin."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # log text kept off the terminal
LINE_CHARS = 300  # a terminal line is cut here
HELD_CHARS = 160  # room kept at its end for what the rate limit held back
PROGRAM_TIMEOUT_S = 30.0


def _jsonable(v):
    return v.isoformat() if isinstance(v, dt.datetime | dt.date) else str(v)


def to_json(ev: dict) -> str:
    """The event as one line of JSON (times in ISO 8601)."""
    return json.dumps(ev, default=_jsonable, sort_keys=True)


def terminal_line(ev: dict, held: HeldBack | None = None) -> str:
    """One line for a person: time, kind, run, host, what, and what the rate limit held back since the last line;
    log text made harmless for a terminal."""
    when = dt.datetime.now(dt.UTC).strftime("%H:%M:%S")
    host = f" host={ev['host']}" if ev.get("host") else ""
    text = f"{when} {ev['kind'].upper()} run={ev['run']}{host} {ev['message']}"
    if held:
        text = f"{text[:LINE_CHARS - HELD_CHARS]} {held.note()}"
    return _CONTROL.sub("?", text)[:LINE_CHARS]


@dataclass
class HeldBack:
    """What the rate limit kept off the terminal since the last line: counts by kind and host, the newest's words
    (not the events: a flood of them is kept by the store, `watch_events`)."""

    counts: dict[tuple[str, str | None], int] = field(default_factory=dict)
    last: str = ""

    def add(self, ev: dict) -> None:
        key = (ev["kind"], ev.get("host"))
        self.counts[key] = self.counts.get(key, 0) + 1
        self.last = ev["message"]

    def __len__(self) -> int:
        return sum(self.counts.values())

    def note(self) -> str:
        """'(+3 held back by the rate limit: 3 NODE on node2, the last "Xid 79 ..."; all in watch_events)'."""
        what = ", ".join(f"{n} {kind.upper()}" + (f" on {host}" if host else "")
                         for (kind, host), n in self.counts.items())
        last = self.last if len(self.last) <= 80 else self.last[:79] + "…"
        return f'(+{len(self)} held back by the rate limit: {what}, the last "{last}"; all in watch_events)'


@dataclass
class Alerter:
    """Sends new detections; the same (kind, host) at most once per `repeat_s`, and at most `burst` a minute.

    Deduplication by the event's key is the store's (`watch_events`); this rate limit keeps a flapping link or
    a stream of Xids from flooding a pager. What it holds back is said, by kind and host, in the next line it
    sends (the store keeps every detection: `watch_events`).
    """

    events_file: Path | None = None
    program: list[str] | None = None  # argv: never a shell string
    echo: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    repeat_s: float = 300.0
    burst: int = 10
    clock: Callable[[], float] = time.monotonic
    _last: dict[tuple, float] = field(default_factory=dict)
    _sent: deque = field(default_factory=deque)
    held: HeldBack = field(default_factory=HeldBack)  # since the last line sent

    @property
    def held_back(self) -> int:
        return len(self.held)

    def send(self, events: list[dict]) -> list[dict]:
        """Alert each event the limits let through; returns those."""
        sent = []
        for ev in events:
            if not self._allowed(ev):
                self.held.add(ev)
                continue
            self.echo(terminal_line(ev, self.held))
            self.held = HeldBack()
            if self.events_file is not None:
                with open(self.events_file, "a", encoding="utf-8") as f:
                    f.write(to_json(ev) + "\n")
            if self.program:
                self._run_program(ev)
            sent.append(ev)
        return sent

    def _allowed(self, ev: dict) -> bool:
        now = self.clock()
        while self._sent and now - self._sent[0] > 60.0:
            self._sent.popleft()
        key = (ev["run"], ev["kind"], ev.get("host"))
        if len(self._sent) >= self.burst or now - self._last.get(key, -1e18) < self.repeat_s:
            return False
        self._last[key] = now
        self._sent.append(now)
        return True

    def _run_program(self, ev: dict) -> None:
        try:
            res = subprocess.run(self.program, input=to_json(ev), text=True, capture_output=True,
                                 timeout=PROGRAM_TIMEOUT_S, shell=False, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"watch: alert program {self.program[0]}: {e}", file=sys.stderr, flush=True)
            return
        if res.returncode:
            err = _CONTROL.sub("?", (res.stderr or "").strip().splitlines()[-1] if res.stderr.strip() else "")
            print(f"watch: alert program {self.program[0]} exited {res.returncode} {err}".rstrip(),
                  file=sys.stderr, flush=True)
