"""Ingest: evidence files in, typed rows in the store.

The walk and the plan (`driver`), parsing in worker processes (`parse`, `pool`, `groups`, `groups_text`,
`pack`), writing (`write`), the bundle's layout and metadata (`bundle`, `metadata`, `inventory`), and what
is derived from the rows as they are written (`attempts`, `training_health`). Imports the collectors and the
store, nothing of the analysis. This file stays empty: ingest's worker processes import `parse` and `pool`
through it and must not pay for the rest.
"""
