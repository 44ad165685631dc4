"""Exit codes, in one place."""

OK = 0
"""Everything worked."""
FINDINGS = 1
"""The command ran, but some input failed or a finding is at error level."""
USAGE = 2
"""Bad command-line use or configuration; nothing was done."""
INTERRUPTED = 130
"""Stopped with Ctrl-C."""
