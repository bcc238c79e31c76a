"""``gate check`` and what it is made of: the canaries, the differential run of both trees, the evidence,
adoption of a suite and ``gate doctor``'s health checks.
"""
