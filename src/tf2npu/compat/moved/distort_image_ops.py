"""``tensorflow.contrib.image.python.ops.distort_image_ops`` under ``tf2npu run``.

TF 1.15 contrib's ``adjust_hsv_in_yiq`` and ``random_hsv_in_yiq`` ran a custom kernel
(``AdjustHsvInYiq``) that TF 2.15 does not ship. Scripts often import this module without
calling it (AlexNet's preprocessing does), so importing works; calling either function raises
:class:`~tf2npu.compat.errors.ContribAttributeError` naming the symbol and the replacement.
"""

from __future__ import annotations

from typing import Any, NoReturn

from tf2npu.compat.errors import ContribAttributeError

__all__ = ["adjust_hsv_in_yiq", "random_hsv_in_yiq"]


def _refuse(name: str) -> NoReturn:
    raise ContribAttributeError(
        f"tf.contrib.image.{name} is not provided by tf2npu run: TF 2.15 has no AdjustHsvInYiq "
        f"kernel; use tensorflow-addons' tfa.image.{name} (same arguments), or tf.image."
        f"adjust_hue/adjust_saturation/adjust_brightness (HSV, not YIQ)"
    )


def adjust_hsv_in_yiq(image: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Refused with advice: TF 2.15 has no kernel for it."""
    _refuse("adjust_hsv_in_yiq")


def random_hsv_in_yiq(image: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Refused with advice: TF 2.15 has no kernel for it."""
    _refuse("random_hsv_in_yiq")
