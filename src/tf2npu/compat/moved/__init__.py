"""TF 1.15-era module paths and names that real scripts import and TF 2.15 lost.

Real TF 1 code imports private paths (``tensorflow.python.keras.layers.LSTM``,
``tensorflow.python.data.experimental.ops.threadpool``) and the standalone Keras 2.2 module
layout (``keras.layers.convolutional``). :mod:`.table` lists each such path with the TF 2.15
object that is the same thing; :mod:`.module` serves them through a ``sys.meta_path`` finder,
and names with no TF 2.15 equivalent fail with an error naming the symbol and the fix.
"""
