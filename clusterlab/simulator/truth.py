"""truth.json: every injected incident, every attempt, and each run's expected ledger."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from clusterlab import taxonomy
from clusterlab.simulator import endings, expected
from clusterlab.simulator.adversarial import guilty_hosts, truth_mode, truth_root_ms
from clusterlab.simulator.fleet import Cluster, Config
from clusterlab.simulator.stamps import from_ms, iso_z
from clusterlab.simulator.timeline import Attempt, Run

NOTES = (
    "Times are UTC with milliseconds. An attempt's start_ts/end_ts are its first and last stamped log lines; "
    "the ledger's attempt span is the scheduler's record of it, sacct's Start to End "
    "(alloc_start_ts, alloc_end_ts). "
    "kind 'interruption' ended an attempt; 'degradation' slowed it (straggler, stalled save) or, for "
    "checkpoint_lost, made the attempt resume from an older checkpoint than the newest one saved. host is null "
    "where no single host is to blame (a hang with no deeper cause, a time limit, lost storage). Ledger: GPU-hours "
    "per category by the rules in clusterlab/simulator/expected.py."
)


ADVERSARIAL_NOTES = (
    " Adversarial family: 'decoys' are harmless evidence (kind: xid_13/31/43, nccl_warn, pcie_aer_corrected, "
    "nfs_blip) after "
    "which the job kept stepping, or on a node no launch used; no incident's cause. An interruption's "
    "ended_by is the scheduler verdict that killed a job already hung on failure_mode; server is the "
    "storage server every host reported (host is then the server). rank_steps: the per-rank timings "
    "written (steps, hosts). clock_skew_ms: hosts whose own logs (kernel, per-rank JSONL) are off by "
    "that much; missing_logs: nodes whose kernel log is not in the bundle."
)


@dataclass
class Mess:
    """What the adversarial family did to the evidence, for truth.json."""

    decoys: list[dict] = field(default_factory=list)  # run, attempt, host, ts (epoch ms), kind, what
    skew_ms: dict[str, int] = field(default_factory=dict)
    missing_logs: list[str] = field(default_factory=list)

    def add_cluster(self, run: Run, benign: list[dict], rows: list[dict], skew: dict[str, int],
                    missing: set[str]) -> None:
        """One cluster's decoys (also the ordinary benign lines), skews and missing logs."""
        for b in benign:
            att = next((a for a in run.attempts if b["host"] in a.hosts and a.start_ms <= b["ts"] <= a.end_ms), None)
            if att is not None and b["host"] in guilty_hosts(att):
                continue  # the ordinary family's AER landed on a host that is guilty of something else here
            kind = "xid_13" if "Xid 13" in b["what"] else "pcie_aer_corrected"
            self.decoys.append({"run": run.name, "attempt": att.k if att else None, "host": b["host"], "ts": b["ts"],
                                "kind": kind, "what": b["what"]})
        self.decoys += rows
        self.decoys = [d for d in self.decoys if d["host"] not in missing]  # a log not there shows nothing
        self.skew_ms.update(skew)
        self.missing_logs += sorted(missing)


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
    out = {**_base(run, att, "interruption", truth_mode(e), e.host), "rank": e.rank, "root_ts": _ts(truth_root_ms(att)),
           "exit_ts": _ts(e.exit_ms), "next_start_ts": _ts(nxt.start_ms if nxt else None),
           "last_checkpoint_step": att.last_save(), "last_step": att.last_step,
           "first_step_after_restart": nxt.first_step if nxt else None}
    if e.kill:
        out["ended_by"] = e.kill
    if e.server:
        out["server"] = e.server
    if e.case:
        out["case"] = e.case
    return out


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
    """Attempts that resumed from an older step than the newest save logged before them (and not already gone
    back past by an earlier resume)."""
    out, saved = [], 0
    for prev, att in zip(run.attempts, run.attempts[1:], strict=False):
        saved = max(saved, prev.last_save() or 0)
        if prev.ending.case == "rollback":  # a deliberate rollback abandons the newer saves: none is lost
            saved = min(saved, att.resumed_from)
        if att.resumed_from < saved:
            load_ms = att.start_ms + 36_000
            out.append({**_base(run, att, "degradation", "checkpoint_lost", None), "root_ts": _ts(load_ms),
                        "exit_ts": None, "lost_step": saved, "resumed_from": att.resumed_from})
            saved = att.resumed_from  # lost once: a later resume from the same step loses nothing more
    return out


def attempt_doc(att: Attempt, adversarial: bool = False) -> dict:
    """One attempt as truth.json lists it."""
    out = {"run": att.run, "attempt": att.k, "job_id": att.job_id, "hosts": list(att.hosts),
           "start_ts": _ts(att.start_ms), "end_ts": _ts(att.end_ms), "first_step": att.first_step,
           "last_step": att.last_step, "steps": len(att.steps), "resumed_from": att.resumed_from,
           "checkpoints": [s.step for s in att.saves if s.complete],
           "deleted_checkpoints": [s.step for s in att.saves if s.deleted]}
    out["alloc_start_ts"] = _ts(endings.job_start_ms(att.start_ms))
    out["alloc_end_ts"] = _ts(endings.job_end_ms(att.end_ms))
    if adversarial:
        lo, hi, hosts = att.coverage or (0, len(att.steps), tuple(range(len(att.hosts))))
        out["rank_steps"] = {"steps": [int(att.steps.step[lo]), int(att.steps.step[hi - 1])] if hi > lo else [],
                             "hosts": [att.hosts[i] for i in hosts] if hi > lo else []}
    return out


def document(cfg: Config, fleet: list[Cluster], runs: list[Run], benign: list[dict], files: dict[str, list[str]],
             mess: Mess | None = None) -> tuple[str, int]:
    """The whole truth.json text, and how many incidents it lists."""
    incidents, attempts, ledgers = [], [], {}
    for run in runs:
        if not run.attempts:  # a window too short for one launch
            continue
        for att, nxt in zip(run.attempts, [*run.attempts[1:], None], strict=True):
            incidents.append(interruption(run, att, nxt))
            incidents += degradations(run, att)
            attempts.append(attempt_doc(att, cfg.adversarial))
        incidents += lost_checkpoints(run)
        ledgers[run.name] = {"cluster": run.cluster.name, "provider": run.cluster.provider,
                             "quality": run.cluster.profile.name, **expected.ledger(run)}
    for inc in incidents:
        inc["evidence"] = files.get(f"{inc['run']}:{inc['attempt']}:{inc['failure_mode']}", [])
    incidents.sort(key=lambda i: (i["run"], i["attempt"], i["root_ts"] or ""))
    # NOTE: the options added later (`adversarial`, policy.py's `hang_timeout_s`) only where set: the ordinary
    # family's truth.json stays byte for byte as it was
    optional = ("adversarial", "hang_timeout_s", "cases")
    config = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "model" and (k not in optional or v)}
    config["failure_rates_per_gpu_hour"] = cfg.model.rates
    doc = {"generator": "clusterlab.simulator", "notes": NOTES + (ADVERSARIAL_NOTES if cfg.adversarial else ""),
           "config": config,
           "clusters": {c.name: {"provider": c.provider, "quality": c.profile.name, "hosts": len(c.hosts)}
                        for c in fleet},
           "incidents": incidents, "benign": [{**b, "ts": _ts(b["ts"])} for b in benign], "attempts": attempts,
           "runs": ledgers}
    if cfg.adversarial and mess is not None:
        doc["decoys"] = sorted(({**d, "ts": _ts(d["ts"])} for d in mess.decoys), key=lambda d: (d["run"], d["ts"]))
        doc["clock_skew_ms"] = dict(sorted(mess.skew_ms.items()))
        doc["missing_logs"] = sorted(mess.missing_logs)
    return json.dumps(doc, indent=1) + "\n", len(incidents)
