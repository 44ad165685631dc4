"""The fusion rules, one module each; importing this package registers them all.

Order matters only between rules sharing a root op type: the fusion pass tries them in this
order (``RULES`` keeps registration order).
"""

from tf2npu.graph.fusion.rules import (
    adam_apply_one,
    adam_apply_one_with_decay,
    conv2d_batchnorm_fold,
    conv2d_biasadd,
    dropout_do_mask,
    gelu_tanh,
    layer_norm,
    matmul_biasadd,
    softmax_cross_entropy,
)

__all__ = [
    "adam_apply_one",
    "adam_apply_one_with_decay",
    "conv2d_batchnorm_fold",
    "conv2d_biasadd",
    "dropout_do_mask",
    "gelu_tanh",
    "layer_norm",
    "matmul_biasadd",
    "softmax_cross_entropy",
]
