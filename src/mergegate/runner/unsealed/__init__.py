"""Properties a person marked ``isolation: shared``: production runs in the evaluator's own process.

A list of guards instead of a boundary; rows say ``isolation: shared`` and an agent's
admit that rests on one is held for review (``unsealed_pass``).
"""
