"""``python -m tf2npu``: the same command line as the ``tf2npu`` executable."""

from __future__ import annotations

import sys

from tf2npu.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
