"""mergegate: decide whether an agent-written patch may merge."""

__version__ = "0.1.0"
