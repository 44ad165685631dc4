"""tf2npu's ``tf.contrib``: TF 1.15 contrib symbols mapped to TF 2.15 or implemented here.

:mod:`.table` lists what is provided (and what is not, with advice); :mod:`.module` turns the
table into the ``tensorflow.contrib.*`` module objects; the other modules hold the few
implementations TF 2.15 lacks (``layers``, ``hparams``, ``data``, ``lookup``, ``framework``).
Nothing here imports TensorFlow at import time.
"""
