"""One node, named three ways: its short host name, its DNS name, and its address.

Kubernetes names a node by its cloud DNS name (`ip-10-1-17-158.us-west-2.compute.internal`,
`gke-a3-pool-1a2b.c.proj.internal`), while its kernel log (journalctl, syslog) and the inventory use the short name
(`ip-10-1-17-158`): a name whose first label is a host known by that short name is that host.

Ray names a node by its address only: the prefix it puts before each line a worker printed (`(RayTrainWorker pid=N,
ip=10.1.17.158) ...`), a worker group's table (`- (node_id=..., ip=10.1.17.158, pid=N) world_rank=0, ...`), the GCS's
"... and address: 10.1.17.158 ...". A row without a host that names an address so is the node of that address: the
known host whose name is the address (AWS's private DNS name `ip-10-1-17-158`, a host listed by its IP), or the
known host whose NCCL bootstrap used it (`Bootstrap : Using eth0:10.1.17.158<0>`). An address two hosts claim names
neither. Run after every ingest, before the attempts are cut (their hosts are the rows' hosts); idempotent.
"""

from __future__ import annotations

import duckdb

# the tables whose rows name a host
_TABLES = ("events", "steps", "rank_steps", "checkpoints", "nccl_ranks", "facts", "telemetry")
_IPV4 = r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}"
# where a row's text names the node by its address: Ray's worker prefix or worker-table entry
_RAY_IP = (r"^\s*(?:- )?\([\w.-]+,? (?:rank=\d+, )?(?:node_id=[0-9a-f]+, )?"
           r"(?:ip=(" + _IPV4 + r"), pid=\d+|pid=\d+, ip=(" + _IPV4 + r"))\)")
# hosts known by their short name: the inventory's nodes and the hosts rows name without a domain
_SHORT = """
    SELECT host FROM nodes
    UNION SELECT DISTINCT host FROM events WHERE host IS NOT NULL AND NOT contains(host, '.')
"""


def resolve(con: duckdb.DuckDBPyConnection) -> None:
    """Short names for DNS names of known hosts, and hosts for the rows that name a node by its address only."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE _short_hosts AS {_SHORT}")
    if not con.execute("SELECT 1 FROM _short_hosts LIMIT 1").fetchall():
        return
    for t in _TABLES:
        # NOTE: a dotted quad is an address, not a DNS name: its first label names no host
        con.execute(f"""
            UPDATE {t} SET host = split_part(host, '.', 1)
            WHERE contains(host, '.') AND NOT regexp_full_match(host, '{_IPV4}')
              AND split_part(host, '.', 1) IN (SELECT host FROM _short_hosts)""")
    con.execute(rf"""
        CREATE OR REPLACE TEMP TABLE _ip_hosts AS
        SELECT ip, any_value(host) AS host FROM (
            SELECT DISTINCT replace(regexp_extract(host, '^ip-(\d+-\d+-\d+-\d+)$', 1), '-', '.') AS ip, host
            FROM _short_hosts WHERE regexp_full_match(host, 'ip-\d+-\d+-\d+-\d+')
            UNION SELECT host, host FROM _short_hosts WHERE regexp_full_match(host, '{_IPV4}')
            UNION SELECT DISTINCT regexp_extract(value, ':({_IPV4})(?:<|$)', 1), host FROM facts
            WHERE key = 'nccl_bootstrap_if' AND host IN (SELECT host FROM _short_hosts)
        ) WHERE ip <> '' GROUP BY ip HAVING count(DISTINCT host) = 1""")
    if not con.execute("SELECT 1 FROM _ip_hosts LIMIT 1").fetchall():
        return
    named = (f"nullif(coalesce(nullif(regexp_extract(text, '{_RAY_IP}', 1), ''), "
             f"regexp_extract(text, '{_RAY_IP}', 2)), '')")
    con.execute(f"""
        UPDATE events SET host = m.host FROM _ip_hosts m
        WHERE events.host IS NULL AND m.ip = coalesce({named}, json_extract_string(events.detail, '$.node_ip'))""")
    for t in ("steps", "checkpoints", "facts"):
        # NOTE: a step line or a fact keeps no text: the collector left the address it named in place of the host
        con.execute(f"""
            UPDATE {t} SET host = m.host FROM _ip_hosts m
            WHERE {t}.host = m.ip""")
    # an actor's death names its node by Ray's node id, which the worker group's table tied to an address
    con.execute(r"""
        UPDATE events SET host = m.host FROM (
            SELECT value AS node_id, any_value(host) AS host FROM facts WHERE key = 'ray_node_ip'
            GROUP BY value HAVING count(DISTINCT host) = 1) m
        WHERE events.host IS NULL AND regexp_extract(events.text, 'Node Id: ([0-9a-f]+)', 1) = m.node_id""")
