"""The trusted evaluator: never imports production code."""
