"""tf2npu: move TensorFlow 1.x training scripts onto Ascend NPUs, and run, check and debug them anywhere.

Importing this package never imports TensorFlow.
"""

__version__ = "0.1.0"
