"""Migration data kept apart from the rules that apply it (e.g. the table of plain renames)."""
