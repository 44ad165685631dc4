"""Test helpers for tf2npu's own tests (and for users who add rules)."""
