"""All git plumbing: ``-z`` output, batched reads, quarantine-safe; patches as git applies them, merges,
revision ranges, what a push brings.
"""
