"""The relaunch policy of a watch (policy.toml), and whether it lets a detection be relaunched now.

    max_relaunches_per_hour = 2         # a job that fails every time is not resubmitted forever
    require_intact_checkpoint = true    # never relaunch from a checkpoint not verified on disk
    drain_modes = ["gpu_fell_off_bus", "gpu_memory_ecc", "nvlink_error", "network", "hang"]
    use_spare_nodes = true              # false: a relaunch that must replace an excluded node waits for a person
    cancel_hung_job = true              # a hung job is cancelled through the scheduler before the relaunch
    relaunch_on = ["hang", "failure"]   # detection kinds that may lead to a relaunch
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

import duckdb

from clusterlab.ingest.reader import InputError
from clusterlab.relaunch.plan import RelaunchPlan

_NOT_LAUNCHED = ("failed", "refused", "repeat", "released")  # relaunch results that started no job


@dataclass(frozen=True)
class Policy:
    max_relaunches_per_hour: int = 2
    require_intact_checkpoint: bool = True
    drain_modes: tuple[str, ...] = ("gpu_fell_off_bus", "gpu_memory_ecc", "nvlink_error", "network", "hang")
    # NOTE: Slurm fills an excluded node's place from the partition's idle nodes (a spare) by itself; false keeps
    # the job off nodes it never ran on: a fixed-size job that lost a node is then not resubmitted
    use_spare_nodes: bool = True
    cancel_hung_job: bool = True
    relaunch_on: tuple[str, ...] = ("hang", "failure")


def load_policy(path: str | Path) -> Policy:
    """A Policy from a TOML file; an unknown key or a wrong type is an InputError naming the file."""
    try:
        doc = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise InputError(str(path), str(e)) from None
    known = {f.name: f for f in fields(Policy)}
    for key, value in doc.items():
        if key not in known:
            raise InputError(str(path), f"unknown policy key {key!r}; known: {', '.join(known)}")
        default = getattr(Policy(), key)
        ok = (isinstance(value, list) and all(isinstance(v, str) for v in value) if isinstance(default, tuple)
              else type(value) is type(default))
        if not ok:
            raise InputError(str(path), f"{key} = {value!r}: expected {type(default).__name__}")
    return Policy(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()})


def relaunches_in_last_hour(con: duckdb.DuckDBPyConnection, run: str, now: dt.datetime) -> int:
    """Relaunches of this run that started a job in the hour before `now` (the audit trail's rows)."""
    return con.execute(f"""SELECT count(*) FROM relaunches WHERE run = ? AND started_at > ?
                           AND coalesce(result, '') NOT IN ({", ".join(f"'{r}'" for r in _NOT_LAUNCHED)})""",
                       [run, now - dt.timedelta(hours=1)]).fetchall()[0][0]


def refusal(policy: Policy, con: duckdb.DuckDBPyConnection, ev: dict, plan: RelaunchPlan,
            now: dt.datetime) -> str | None:
    """Why the policy does not relaunch for this detection now (None: it does)."""
    if ev["kind"] not in policy.relaunch_on:
        return f"the policy relaunches on {', '.join(policy.relaunch_on)}, not on a {ev['kind']}"
    if plan.nothing_to_relaunch:
        return plan.nothing_to_relaunch
    done = relaunches_in_last_hour(con, ev["run"], now)
    if done >= policy.max_relaunches_per_hour:
        return (f"{done} relaunches of {ev['run']} in the last hour: the policy's limit "
                f"(max_relaunches_per_hour = {policy.max_relaunches_per_hour}) stops a relaunch loop")
    if policy.require_intact_checkpoint and not (plan.checkpoint.step is not None and plan.checkpoint.verified):
        return "no checkpoint verified intact on disk, and the policy requires one"
    if not policy.use_spare_nodes and plan.spec.exclude:
        return (f"the job needs a node in place of {', '.join(plan.spec.exclude)}, and the policy allows no spare "
                "(use_spare_nodes = false)")
    return None


def drains(policy: Policy, plan: RelaunchPlan) -> list[dict]:
    """The plan's drains that the policy keeps: hosts excluded for one of its drain modes."""
    modes = {x.host: x.failure_mode for x in plan.exclude}
    return [d for d in plan.drain if modes.get(d["host"]) in policy.drain_modes]
