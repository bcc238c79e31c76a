"""The files the gate owns and reads: the policy (``gate.yaml``), the catalog, the freeze ledger, the
manifest, fixture digests, evidence packets, rows and contracts; strict YAML and JSON, atomic writes.
"""
