"""Exit codes, in one place."""

OK = 0
"""Everything worked."""
FINDINGS = 1
"""The command ran, but some input failed or a finding is at error level."""
USAGE = 2
"""Bad command-line use or configuration; nothing was done."""
INCONCLUSIVE = 3
"""The command ran, but its input cannot give a verdict (``verify``: the original's runs do not
repeat, so a pass would only mean "within its noise")."""
INTERRUPTED = 130
"""Stopped with Ctrl-C."""
