"""The narrow call protocol between the trusted evaluator and the subject (stdlib only, both sides)."""
