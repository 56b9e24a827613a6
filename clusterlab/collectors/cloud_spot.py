"""A cloud reclaiming a spot / preemptible host under the job → preemption events.

Where the scheduler is a cloud's (AWS Batch, a CI runner's or a training operator's own agent), the notice the cloud
sends before it takes a spot host back, and the job status after, are what says the job was preempted:

    {"level":"warn",...,"message":"Spot interruption payload received: {\"action\":\"terminate\",...}"}
    {"level":"warn",...,"message":"Instance is going to be interrupted in 2 minutes. Exiting..."}
    Status Reason:  Host EC2 (instance i-0c9e2f31a7b4d5e60) terminated.          (AWS Batch)
    Instance was preempted.   compute.instances.preempted                      (Google Compute Engine)
    "EventType": "Preempt"                                                       (Azure scheduled events)
    GCP Metadata Service says termination is imminent                            (a GCE spot host's worker agent)
    PreemptionError: Nodes of this job got pre-empted.                           (Azure ML's low-priority compute)

Azure's Scheduled Events (the instance metadata service's document, which a poller on the VM logs as it changes)
also announce the platform's maintenance: a `Reboot` or `Redeploy` (or a `Preempt`, `Terminate`) whose
`"EventStatus": "Started"` with `"EventSource": "Platform"` is the provider taking the host from under the job
(`preemption`, provider maintenance or reclaim); while still `"Scheduled"` it is a notice (no mode: the job may
end before it, or the event be cancelled). A `Freeze` (a pause of seconds the job usually survives) and an event
the user started (`"EventSource": "User"`) are neither.

Compute Engine records what it did to a VM as a system event operation, of a type that says why (`gcloud compute
operations list` rows, the audit log's `methodName`): `compute.instances.terminateOnHostMaintenance` is a VM that
cannot live-migrate (a GPU VM) stopped for the host's maintenance (`preemption`, provider maintenance), as a
preempted one is; `compute.instances.hostError` is the host failing under the VM (`node_failure`; GCE restarts the
VM elsewhere). A live migration (`migrateOnHostMaintenance`) is neither: the job runs on.

The notice itself is EC2's instance metadata answer `spot/instance-action`, which names the moment the VM will be
taken: `{"action": "terminate", "time": "2026-10-12T16:38:53Z"}` (a watcher polling IMDS prints it as it appears, a
runner quotes it as its payload). The VM's going is at that time, minutes after the notice (the job runs on until
then): a line that is that answer alone (no words of the runner's around it) is the notice itself, of no mode, and
`clusterlab.ingest.cloud_hosts` makes the reclaim it announces, on its host at the time it names, after the ingest
(a row of that time here would date the file's unstamped lines after it).

No time of the tools' own is read (each prints its own, often in another zone than the node's); a line that a
syslog or journal on the node recorded (`Dec  7 22:27:48 vm-9 scheduled-events[1733]: {...}`) has that record's
time, in the node's zone.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors import _kernel_time
from clusterlab.collectors._base import Context, Parsed, search

NAME = "cloud_spot"
EXCLUSIVE = False

# an Azure Scheduled Events entry of the platform taking the VM (its status follows its type inside one entry)
_AZURE = (r"[\"']EventType[\"']:\s*[\"'](?:Reboot|Redeploy|Terminate)[\"'][^}]*"
          r"[\"']EventStatus[\"']:\s*[\"'](?:Started|Scheduled)")
PATTERN = "|".join([
    r"[Ss]pot (?:[Ii]nstance )?[Ii]nterruption (?:[Nn]otice|[Ww]arning|payload received)",
    r"[Ii]nstance is going to be interrupted in \d+ minutes?",
    r"Host EC2 (?:\(instance i-[0-9a-f]+\) )?[Tt]erminated",
    r"\bInstance was preempted\.|\bcompute\.instances\.(?:preempted|terminateOnHostMaintenance|hostError)\b",
    r"\"EventType\":\s*\"Preempt\"",
    # an agent polling GCE's metadata server (`instance/preempted`, `instance/maintenance-event`) for the notice
    r"[Tt]ermination is imminent|\bTERMINATE_ON_HOST_MAINTENANCE\b",
    _AZURE,
    # aws-node-termination-handler draining a node for EC2's interruption notice (`Kind:SPOT_ITN Description:Spot ITN
    # received. Instance will be interrupted at ...`; later versions `kind=SPOT_ITN`, `"Kind":"SPOT_ITN"`)
    r"\bKind\\?\"?\s*[:=]\s*\\?\"?SPOT_ITN\b|\bkind=SPOT_ITN\b|\bSpot ITN received\b",
    # SkyPilot's managed-job controller finding the job's cluster taken (`Cluster is preempted (status: STOPPED).
    # Recovering...`; 0.6+: `Cluster is preempted or failed. Recovering...`; before 0.3: `The cluster is preempted.`)
    r"\b[Cc]luster is preempted\b",
    # Karpenter's interruption controller acting on EC2's notice or a scheduled change (`"messageKind":
    # "SpotInterruptionKind"` before 1.0, `"spot_interrupted"` / `"scheduled_change"` since)
    r"\"messageKind\":\s*\"(?:SpotInterruptionKind|spot_interrupted|ScheduledChangeKind|scheduled_change)\"",
    # Azure ML's compute (a low-priority cluster) reporting the run's nodes taken (`AzureMLCompute job failed.
    # PreemptionError: Nodes of this job got pre-empted. ... Reason: Received pre-emption warning signal`)
    r"\bPreemptionError: Nodes of this job got pre-empted\b",
])
# IMDS's spot/instance-action answer, quoted plain or escaped inside another JSON message: the action and its time
ACTION = (r"\\?\"action\\?\"\s*:\s*\\?\"(?:terminate|stop|hibernate)\\?\"\s*,\s*"
           r"\\?\"time\\?\"\s*:\s*\\?\"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z")
_NOTICE_ONLY = PATTERN
PATTERN = PATTERN + "|" + ACTION
SNIFF_HINT = (b"interruption", b"interrupted in", b"host ec2", b"preempted", b"preempt\"", b"termination is imminent",
              b"terminate_on_host_maintenance", b"eventstatus", b"compute.instances.", b"\"action\"",
              b"\"action\\\"",  # (IMDS's answer escaped inside another JSON message)
              b"spot_itn", b"spot itn", b"cluster is preempted", b"\"messagekind\"", b"got pre-empted")
_BY_USER = r"[\"']EventSource[\"']:\s*[\"']User[\"']"
_STARTED = r"[\"']EventStatus[\"']:\s*[\"']Started[\"']"
_HOST_ERROR = r"\bcompute\.instances\.hostError\b"


def sniff(head: bytes, path: str) -> bool:
    """A cloud's reclaim of a spot host in the head."""
    return search(head.decode("utf-8", "replace"), PATTERN)


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """One preemption event per line of a notice or of the job's end it caused; a maintenance notice as no mode."""
    out = Parsed()
    text = pl.col("text")
    lines = _kernel_time.dated(lines, ctx)
    azure = text.str.contains(_AZURE)
    taken = ~azure | (text.str.contains(_STARTED) & ~text.str.contains(_BY_USER))
    host_error = text.str.contains(_HOST_ERROR)
    notice = ~text.str.contains(_NOTICE_ONLY)  # IMDS's answer alone: the notice, its reclaim comes at its time
    taken = taken & ~notice
    out.add("events", lines.filter(~azure | ~text.str.contains(_BY_USER)).select(
        pl.col("line").cast(pl.Int64), "ts", pl.lit(ctx.host, pl.String).alias("host"),
        pl.when(notice).then(pl.lit("spot_notice")).when(host_error).then(pl.lit("cloud_host_error"))
        .when(text.str.contains(r"\bterminateOnHostMaintenance\b")).then(pl.lit("platform_maintenance"))
        .when(~azure).then(pl.lit("spot_reclaim")).when(taken).then(pl.lit("platform_maintenance"))
        .otherwise(pl.lit("maintenance_notice")).alias("kind"),
        pl.when(host_error).then(pl.lit("node_failure")).when(taken).then(pl.lit("preemption")).alias("failure_mode"),
        pl.when(host_error).then(pl.lit("error")).when(taken).then(pl.lit("warning")).otherwise(pl.lit("info"))
        .alias("severity"),
        text.str.strip_chars().alias("text"),
    ))
    return out
