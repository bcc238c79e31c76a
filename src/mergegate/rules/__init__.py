"""The seeds' pure decisions: verdicts and freezes, admission, the differential, the unified verdict, the
scorecard, path classes and globs.  Standard library and each other only: no file, no git, no process.
"""
