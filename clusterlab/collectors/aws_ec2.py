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
once terminated, why (`"StateReason": {"Code": "Server.SpotInstanceTermination", ...}`). The same answer in the CLI's
other outputs (`--output text` / `table`, a `--query` of a few columns) puts an instance's id and its private DNS
name on one row, its end reason on that row or on the `STATEREASON` row after it:

    i-0a9c373eb9e041ebe	ip-10-2-199-70.us-east-2.compute.internal	spot	terminated
    INSTANCES	0	x86_64	...	i-0a9c373eb9e041ebe	p5.48xlarge	...	ip-10-2-199-70.ec2.internal	10.2.199.70	...
    STATEREASON	Server.SpotInstanceTermination	Server.SpotInstanceTermination: Spot instance termination

An event names an instance id, not a host: it is stored hostless with the id in its text; the id's host and the
reason it ended are facts (`cloud_instance_id`, `cloud_state_reason`) that `clusterlab.ingest.cloud_hosts` joins
after the ingest. The state change of an instance the cloud reclaimed becomes the preemption; the two-minute notice
before it is a warning (the job runs on until the VM goes), a rebalance recommendation only information. Where no
state change is on record (a rule that forwards the warnings alone), the reclaim is still due when the notice says:
EC2 takes the VM `NOTICE_LEAD_S` after its warning (`clusterlab.ingest.cloud_hosts` makes that reclaim after the
ingest).
"""

from __future__ import annotations

import polars as pl

from clusterlab.collectors._base import Context, Parsed, search

NAME = "aws_ec2"
EXCLUSIVE = True
FILL_HOST = False
SNIFF_HINT = (b"aws.ec2", b"reservations", b".compute.internal", b".ec2.internal")

_EVENT = r"\"detail-type\"\s*:\s*\"EC2 [^\"]+\""
_ID = r"^\s*\"InstanceId\"\s*:\s*\"(i-[0-9a-f]{8,17})\""
_DNS = r"^\s*\"PrivateDnsName\"\s*:\s*\"([A-Za-z0-9][\w-]*)[.\"]"
_REASON = r"^\s*\"Code\"\s*:\s*\"((?:Server|Client)\.[\w.]+)\""
# the text / table outputs: an instance's id and its private DNS name (EC2's own `ip-a-b-c-d.<region>.compute.internal`
# or `.ec2.internal`) on one row, in either order; its end reason (a StateReason code) on that row or the next
_ROW_ID = r"(?:^|[\s|])(i-[0-9a-f]{8,17})(?:[\s|]|$)"
_ROW_DNS = r"(?:^|[\s|])(ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})\.(?:[a-z0-9-]+\.compute|ec2)\.internal(?:[\s|]|$)"
_ROW_REASON = r"(?:^|[\s|])((?:Server|Client)\.[A-Z]\w+(?:\.\w+)*)(?::|[\s|]|$)"
PATTERN = "|".join([_EVENT, _ID, _DNS, _REASON, _ROW_DNS, _ROW_REASON])
# NOTE: an instance's id, the key its events and its description share
INSTANCE_ID = r"\b(i-[0-9a-f]{8,17})\b"

# EC2's notice comes two minutes before it stops or terminates the spot instance
NOTICE_LEAD_S = 120
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
        search(text, r"\"InstanceId\"\s*:") or search(text, _ROW_ID + ".*" + _ROW_DNS + "|" + _ROW_DNS + ".*" + _ROW_ID)


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
    out.add("facts", pl.concat([facts, _text_rows(desc)]).with_columns(pl.col("line").cast(pl.Int64),
                                                                       ts=pl.lit(None, pl.Datetime("us"))))
    return out


def _text_rows(desc: pl.DataFrame) -> pl.DataFrame:
    """The id, host and end reason of the instances of a text / table answer (rows no JSON key opens)."""
    text = pl.col("text")
    rows = desc.filter(~text.str.contains(r"^\s*[{}\[\]\"]")).with_columns(
        rid=text.str.extract(_ROW_ID, 1), rdns=text.str.extract(_ROW_DNS, 1), rwhy=text.str.extract(_ROW_REASON, 1))
    # a reason row (`STATEREASON ...`) belongs to the instance row above it
    rows = rows.with_columns(rid=pl.when(pl.col("rdns").is_not_null()).then(pl.col("rid")).forward_fill())
    return pl.concat([
        rows.filter(pl.col("rdns").is_not_null() & pl.col("rid").is_not_null()).select(
            "line", host="rdns", key=pl.lit("cloud_instance_id"), value="rid"),
        rows.filter(pl.col("rwhy").is_not_null() & pl.col("rid").is_not_null()).select(
            "line", host=pl.lit(None, pl.String), key=pl.lit("cloud_state_reason"),
            value=pl.concat_str([pl.col("rid"), pl.lit(" "), pl.col("rwhy")])),
    ])
