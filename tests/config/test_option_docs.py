"""docs/options.md shows every option exactly as the table defines it."""

from pathlib import Path

import pytest

from tf2npu.config.option_docs import render_table, update
from tf2npu.config.options import OPTIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "options.md"


def test_docs_are_generated_from_the_current_table():
    text = DOC.read_text(encoding="utf-8")
    assert update(text) == text, "run: python tools/gen_option_docs.py"


def test_every_option_has_a_row():
    rendered = render_table()
    for name in OPTIONS:
        assert f"| `{name}` |" in rendered
    assert "| `precision_mode` | string | unset | `force_fp32`, " in rendered
    assert (
        "| `iterations_per_loop` | int | `1` | integer >= 1 | honoured | steps per sess.run |"
        in rendered
    )
    assert (
        "| `buffer_optimize` | string | `l2_optimize` | `l2_optimize`, `off_optimize` | no effect | device L2 |"
        in rendered
    )


def test_update_needs_the_markers():
    with pytest.raises(ValueError, match="lacks the options markers"):
        update("# no markers\n")
