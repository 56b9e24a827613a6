"""A cloud reclaiming a spot / preemptible host under the job → preemption events.

Where the scheduler is a cloud's (AWS Batch, a CI runner's or a training operator's own agent), the notice the cloud
sends before it takes a spot host back, and the job status after, are what says the job was preempted:

    {"level":"warn",...,"message":"Spot interruption payload received: {\"action\":\"terminate\",...}"}
    {"level":"warn",...,"message":"Instance is going to be interrupted in 2 minutes. Exiting..."}
    Status Reason:  Host EC2 (instance i-0c9e2f31a7b4d5e60) terminated.          (AWS Batch)
    Instance was preempted.   compute.instances.preempted                      (Google Compute Engine)
    "EventType": "Preempt"                                                       (Azure scheduled events)
    GCP Metadata Service says termination is imminent                            (a GCE spot host's worker agent)

No time is read: each tool prints its own, often in another zone than the node's.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search

NAME = "cloud_spot"
EXCLUSIVE = False

PATTERN = "|".join([
    r"[Ss]pot (?:[Ii]nstance )?[Ii]nterruption (?:[Nn]otice|[Ww]arning|payload received)",
    r"[Ii]nstance is going to be interrupted in \d+ minutes?",
    r"Host EC2 (?:\(instance i-[0-9a-f]+\) )?[Tt]erminated",
    r"\bInstance was preempted\.|\bcompute\.instances\.preempted\b",
    r"\"EventType\":\s*\"Preempt\"",
    # an agent polling GCE's metadata server (`instance/preempted`, `instance/maintenance-event`) for the notice
    r"[Tt]ermination is imminent|\bTERMINATE_ON_HOST_MAINTENANCE\b",
])
SNIFF_HINT = (b"interruption", b"interrupted in", b"host ec2", b"preempted", b"preempt\"", b"termination is imminent",
              b"terminate_on_host_maintenance")


def sniff(head: bytes, path: str) -> bool:
    """A cloud's reclaim of a spot host in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One preemption event per line of a notice or of the job's end it caused."""
    out = Parsed()
    text = pl.col("text")
    out.add("events", lines.select(
        pl.col("line").cast(pl.Int64), pl.lit(None, pl.Datetime("us")).alias("ts"),
        pl.lit(ctx.host, pl.String).alias("host"), pl.lit("spot_reclaim").alias("kind"),
        pl.lit("preemption").alias("failure_mode"), pl.lit("warning").alias("severity"),
        text.str.strip_chars().alias("text"),
    ))
    return out
