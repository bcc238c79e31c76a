"""One module per ``gate`` command: ``configure(parser)`` and ``run(args) -> int``."""
