"""Slurm job-completion log collector (`JobCompType=jobcomp/filetxt`) → the jobs table.

One line per job end (a requeued job has one per run), as `src/plugins/jobcomp/filetxt/
jobcomp_filetxt.c` writes it in Slurm 22.05–24.11:

    JobId=5 UserId=root(0) GroupId=root(0) Name=nodefail JobState=NODE_FAIL Partition=main
    TimeLimit=UNLIMITED StartTime=2026-12-03T08:39:17 EndTime=2026-12-03T08:39:54 NodeList=node[1-2]
    NodeCnt=2 ProcCnt=2 WorkDir=/tmp/jobs ReservationName= Tres=cpu=2,mem=8000M,node=2,billing=2
    Account= QOS= WcKey= Cluster=unknown SubmitTime=... EligibleTime=... [ArrayJobId=22 ArrayTaskId=3]
    [HetJobId=9 HetJobOffset=1] DerivedExitCode=0:0 ExitCode=0:0

Times are the controller's local time (`ctx.tz`), `Unknown` when not set. Name and WorkDir may
hold spaces, so each field is read by its own key rather than by splitting the line.
"""

from __future__ import annotations

import re

import polars as pl

from clusterlab.collectors._base import Context, Parsed
from clusterlab.collectors._slurmlib import job_events, jobs_frame

NAME = "slurm_jobcomp"
EXCLUSIVE = True
SNIFF_HINT = (b"jobid=",)
PATTERN = r"^JobId=\d+ "
# The jobs' events name no host: a failed job's NodeList is every node it ran on, not the one to blame.
FILL_HOST = False

_RECORD = re.compile(r"^JobId=\d+ .*\bJobState=\S+")

# Field → regex whose one group is its value (searched in the whole line).
FIELDS: dict[str, str] = {
    "_id": r"^JobId=(\d+) ",
    "job_name": r" Name=(.*?) JobState=",
    "state": r" JobState=(\S+)",
    "start": r" StartTime=(\S+)",
    "end": r" EndTime=(\S+)",
    "submit": r" SubmitTime=(\S+)",
    "nodelist": r" NodeList=(\S*)",
    "nnodes": r" NodeCnt=(\d+)",
    "tres": r" Tres=(\S*)",
    "exit": r" ExitCode=(\S+)",
    "_array": r" ArrayJobId=(\d+ ArrayTaskId=\d+)",
    "_het": r" HetJobId=(\d+ HetJobOffset=\d+)",
}


def sniff(head: bytes, path: str) -> bool:
    """A jobcomp/filetxt log: its first non-blank line is a `JobId=... JobState=...` record."""
    for ln in head.decode("utf-8", "replace").splitlines()[:5]:
        if ln.strip():
            return bool(_RECORD.match(ln))
    return False


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Jobs from the completion records of one batch."""
    out = Parsed()
    frame = lines.with_columns(**{k: pl.col("text").str.extract(rx) for k, rx in FIELDS.items()})
    ok = pl.col("state").is_not_null()
    bad = frame.filter(~ok)
    if bad.height:
        out.unparsed += bad.height
        out.warnings.append(f"line {bad['line'][0]}: {bad.height} jobcomp records without JobState")
    frame = frame.filter(ok)
    # NOTE: the record's JobId is the raw id; sacct and srun name array tasks `22_3` and het
    # components `9+1`, so the jobs of all Slurm sources join on the same spelling.
    job_id = pl.coalesce(
        pl.col("_array").str.replace(" ArrayTaskId=", "_", literal=True),
        pl.col("_het").str.replace(" HetJobOffset=", "+", literal=True),
        pl.col("_id"),
    )
    col = {k: pl.col(k) for k in FIELDS if not k.startswith("_")} | {"job_id": job_id}
    jobs = jobs_frame(frame, col, ctx)
    out.add("jobs", jobs)
    out.add("events", job_events(jobs, frame, ctx))
    return out
