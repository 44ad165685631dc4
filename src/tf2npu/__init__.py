"""tf2npu: move TensorFlow 1.x training scripts onto Ascend NPUs; run, check and debug anywhere.

Importing this package never imports TensorFlow.
"""

__version__ = "0.1.0"
