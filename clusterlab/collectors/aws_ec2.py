"""AWS's own record of its VMs: EC2 events from EventBridge, and `aws ec2 describe-instances` → events, facts.

A cloud job manager (SkyPilot, a watcher script) that reruns a job on spot VMs leaves the cloud's word on why a VM
went away outside the job's logs. Two shapes:

    {"version":"0","id":"...","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2",
     "time":"2026-12-05T09:49:04Z",...,"detail":{"instance-id":"i-0abc...","instance-action":"terminate"}}
    {..."detail-type":"EC2 Instance State-change Notification",...,"detail":{"instance-id":"i-0abc...",
     "state":"shutting-down"}}
    {..."detail-type":"EC2 Instance Rebalance Recommendation",...}

one event a line, as an EventBridge rule delivers them (Firehose with newline delimiters, CloudWatch Logs), and the
CLI's indented `describe-instances` answer, whose instances name their private DNS name (the VM's host name) and,
once terminated, why (`"StateReason": {"Code": "Server.SpotInstanceTermination", ...}`).

An event names an instance id, not a host: it is stored hostless with the id in its text; the id's host and the
reason it ended are facts (`cloud_instance_id`, `cloud_state_reason`) that `clusterlab.ingest.cloud_hosts` joins
after the ingest. The state change of an instance the cloud reclaimed becomes the preemption; the two-minute notice
before it is a warning (the job runs on until the VM goes), a rebalance recommendation only information.
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search

NAME = "aws_ec2"
EXCLUSIVE = True
FILL_HOST = False
SNIFF_HINT = (b"aws.ec2", b"reservations")

_EVENT = r"\"detail-type\"\s*:\s*\"EC2 [^\"]+\""
_ID = r"^\s*\"InstanceId\"\s*:\s*\"(i-[0-9a-f]{8,17})\""
_DNS = r"^\s*\"PrivateDnsName\"\s*:\s*\"([A-Za-z0-9][\w-]*)[.\"]"
_REASON = r"^\s*\"Code\"\s*:\s*\"((?:Server|Client)\.[\w.]+)\""
PATTERN = "|".join([_EVENT, _ID, _DNS, _REASON])
# NOTE: an instance's id, the key its events and its description share
INSTANCE_ID = r"\b(i-[0-9a-f]{8,17})\b"

# detail-type → (kind, failure mode, severity)
_KINDS = {
    "EC2 Spot Instance Interruption Warning": ("spot_interruption_warning", "preemption", "warning"),
    "EC2 Instance Rebalance Recommendation": ("rebalance_recommendation", None, "info"),
    "EC2 Instance State-change Notification": ("instance_state", None, "info"),
}


def sniff(head: bytes, path: str) -> bool:
    """EventBridge EC2 events, or a describe-instances answer."""
    text = head.decode("utf-8", "replace")
    return search(text, r"\"source\"\s*:\s*\"aws\.ec2\"") or search(text, r"\"Reservations\"\s*:\s*\[") and \
        search(text, r"\"InstanceId\"\s*:")


def parse(lines: pl.DataFrame, ctx: Context) -> Parsed:
    """Events from EventBridge lines, instance facts from describe-instances lines."""
    out = Parsed()
    text = pl.col("text")
    ev = lines.filter(text.str.contains(_EVENT)).with_columns(
        dtype=text.str.json_path_match("$.detail-type"), t=text.str.json_path_match("$.time"),
        iid=text.str.json_path_match("$.detail.instance-id"), state=text.str.json_path_match("$.detail.state"))
    kinds = pl.DataFrame({"dtype": list(_KINDS), "kind": [k for k, _, _ in _KINDS.values()],
                          "failure_mode": [m for _, m, _ in _KINDS.values()],
                          "severity": [s for _, _, s in _KINDS.values()]},
                         schema={"dtype": pl.String, "kind": pl.String, "failure_mode": pl.String,
                                 "severity": pl.String})
    ev = ev.join(kinds, on="dtype", how="left")
    good = pl.col("kind").is_not_null() & pl.col("iid").is_not_null() & pl.col("t").is_not_null()
    out.unparsed += ev.filter(~good).height
    ev = ev.filter(good)
    out.add("events", ev.select(
        pl.col("line").cast(pl.Int64),
        pl.col("t").str.to_datetime("%Y-%m-%dT%H:%M:%S%#z", time_unit="us", strict=False).dt.replace_time_zone(None)
        .alias("ts"),
        pl.lit(None, pl.String).alias("host"), "kind", "failure_mode", "severity",
        pl.concat_str([pl.col("dtype"), pl.lit(": "), pl.col("iid"),
                       pl.when(pl.col("state").is_not_null()).then(pl.lit(" ") + pl.col("state")).otherwise(pl.lit(""))]
                      ).alias("text"),
    ))
    # describe-instances: each `"InstanceId"` line opens an instance; its DNS name and end reason follow it
    desc = lines.filter(~text.str.contains(_EVENT)).sort("line").with_columns(
        iid=text.str.extract(_ID, 1).forward_fill(), dns=text.str.extract(_DNS, 1), why=text.str.extract(_REASON, 1))
    facts = pl.concat([
        desc.filter(pl.col("dns").is_not_null() & pl.col("iid").is_not_null()).select(
            "line", host="dns", key=pl.lit("cloud_instance_id"), value="iid"),
        desc.filter(pl.col("why").is_not_null() & pl.col("iid").is_not_null()).select(
            "line", host=pl.lit(None, pl.String), key=pl.lit("cloud_state_reason"),
            value=pl.concat_str([pl.col("iid"), pl.lit(" "), pl.col("why")])),
    ])
    out.add("facts", facts.with_columns(pl.col("line").cast(pl.Int64), ts=pl.lit(None, pl.Datetime("us"))))
    return out
