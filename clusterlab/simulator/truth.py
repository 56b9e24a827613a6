"""truth.json: every injected incident, every attempt, and each run's expected ledger."""

from __future__ import annotations

import dataclasses
import json

from clusterlab import taxonomy
from clusterlab.simulator import expected
from clusterlab.simulator.fleet import Cluster, Config
from clusterlab.simulator.stamps import from_ms, iso_z
from clusterlab.simulator.timeline import Attempt, Run

NOTES = (
    "Times are UTC with milliseconds. An attempt's start_ts/end_ts are its first and last stamped log lines. "
    "kind 'interruption' ended an attempt; 'degradation' slowed it (straggler, stalled save) or, for "
    "checkpoint_lost, made the attempt resume from an older checkpoint than the newest one saved. host is null "
    "where no single host is to blame (a hang with no deeper cause, a time limit, lost storage). Ledger: GPU-hours "
    "per category by the rules in clusterlab/simulator/expected.py."
)


def _ts(ms: int | None) -> str | None:
    """ISO 8601 UTC with milliseconds, or None."""
    return iso_z(from_ms(ms)) if ms is not None else None


def _blame(mode: str) -> str:
    """Who the taxonomy blames for a mode (straggler: unknown)."""
    return taxonomy.MODES[mode].blame if mode in taxonomy.MODES else "unknown"


def _base(run: Run, att: Attempt, kind: str, mode: str, host: str | None) -> dict:
    """The fields every incident has."""
    return {"run": run.name, "attempt": att.k, "kind": kind, "failure_mode": mode, "blame": _blame(mode),
            "host": host, "cluster": run.cluster.name, "provider": run.cluster.provider}


def interruption(run: Run, att: Attempt, nxt: Attempt | None) -> dict:
    """The incident that ended an attempt."""
    e = att.ending
    return {**_base(run, att, "interruption", e.mode, e.host), "rank": e.rank, "root_ts": _ts(e.root_ms),
            "exit_ts": _ts(e.exit_ms), "next_start_ts": _ts(nxt.start_ms if nxt else None),
            "last_checkpoint_step": att.last_save(), "last_step": att.last_step,
            "first_step_after_restart": nxt.first_step if nxt else None}


def degradations(run: Run, att: Attempt) -> list[dict]:
    """Stragglers and stalled saves inside an attempt."""
    out = []
    for st in att.stragglers:
        out.append({**_base(run, att, "degradation", "straggler", st.host), "root_ts": _ts(st.start_ms),
                    "end_ts": _ts(st.end_ms), "exit_ts": None, "steps": [st.first_step, st.last_step],
                    "slowdown_factor": round(st.factor, 4)})
    for sv in att.saves:
        if sv.stall_host and sv.complete:
            out.append({**_base(run, att, "degradation", "filesystem_io", sv.stall_host), "root_ts": _ts(sv.start_ms),
                        "end_ts": _ts(sv.end_ms), "exit_ts": None, "steps": [sv.step],
                        "cause_ts": _ts(sv.start_ms + 6300), "save_s": (sv.end_ms - sv.start_ms) / 1000})
    return out


def lost_checkpoints(run: Run) -> list[dict]:
    """Attempts that resumed from an older step than the newest save logged before them."""
    out, saved = [], 0
    for prev, att in zip(run.attempts, run.attempts[1:], strict=False):
        saved = max(saved, prev.last_save() or 0)
        if att.resumed_from < saved:
            load_ms = att.start_ms + 36_000
            out.append({**_base(run, att, "degradation", "checkpoint_lost", None), "root_ts": _ts(load_ms),
                        "exit_ts": None, "lost_step": saved, "resumed_from": att.resumed_from})
    return out


def attempt_doc(att: Attempt) -> dict:
    """One attempt as truth.json lists it."""
    return {"run": att.run, "attempt": att.k, "job_id": att.job_id, "hosts": list(att.hosts),
            "start_ts": _ts(att.start_ms), "end_ts": _ts(att.end_ms), "first_step": att.first_step,
            "last_step": att.last_step, "steps": len(att.steps), "resumed_from": att.resumed_from,
            "checkpoints": [s.step for s in att.saves if s.complete],
            "deleted_checkpoints": [s.step for s in att.saves if s.deleted]}


def document(cfg: Config, fleet: list[Cluster], runs: list[Run], benign: list[dict], files: dict[str, list[str]]
             ) -> tuple[str, int]:
    """The whole truth.json text, and how many incidents it lists."""
    incidents, attempts, ledgers = [], [], {}
    for run in runs:
        if not run.attempts:  # a window too short for one launch
            continue
        for att, nxt in zip(run.attempts, [*run.attempts[1:], None], strict=True):
            incidents.append(interruption(run, att, nxt))
            incidents += degradations(run, att)
            attempts.append(attempt_doc(att))
        incidents += lost_checkpoints(run)
        ledgers[run.name] = {"cluster": run.cluster.name, "provider": run.cluster.provider,
                             "quality": run.cluster.profile.name, **expected.ledger(run)}
    for inc in incidents:
        inc["evidence"] = files.get(f"{inc['run']}:{inc['attempt']}:{inc['failure_mode']}", [])
    incidents.sort(key=lambda i: (i["run"], i["attempt"], i["root_ts"] or ""))
    config = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "model"}
    config["failure_rates_per_gpu_hour"] = cfg.model.rates
    doc = {"generator": "clusterlab.simulator", "notes": NOTES, "config": config,
           "clusters": {c.name: {"provider": c.provider, "quality": c.profile.name, "hosts": len(c.hosts)}
                        for c in fleet},
           "incidents": incidents, "benign": [{**b, "ts": _ts(b["ts"])} for b in benign], "attempts": attempts,
           "runs": ledgers}
    return json.dumps(doc, indent=1) + "\n", len(incidents)
