"""``tf.contrib.rnn`` for ``tf2npu run``: TF 1.15's block, fused and contrib cells.

* :mod:`.base` — what the cells share: TF 2.15's v1 ``RNNCell``/``LayerRNNCell`` classes,
  zero states, the time/batch transpose, the ``_Linear`` map contrib's wrappers build;
* :mod:`.block` — ``LSTMBlockCell``, ``LSTMBlockFusedCell``, ``LSTMBlockWrapper``,
  ``GRUBlockCell``/``GRUBlockCellV2`` on TF 2.15's ``LSTMBlockCell``/``BlockLSTM``/
  ``GRUBlockCell`` kernels (the same kernels TF 1.15 ran), with their gradients;
* :mod:`.fused` — ``FusedRNNCell``, ``FusedRNNCellAdaptor``, ``TimeReversedFusedRNN``;
* :mod:`.wrappers` — ``InputProjectionWrapper``, ``OutputProjectionWrapper``,
  ``EmbeddingWrapper``, ``HighwayWrapper``, ``AttentionCellWrapper``;
* :mod:`.cells` — ``LayerNormBasicLSTMCell``, ``CoupledInputForgetGateLSTMCell``,
  ``NASCell``, ``UGRNNCell``, ``IndyLSTMCell``;
* :mod:`.stack` — ``stack_bidirectional_rnn``, ``stack_bidirectional_dynamic_rnn``.

Variable names and shapes are TF 1.15's, so its checkpoints restore. The modules import
TensorFlow when first imported; the contrib table resolves them only when a script uses them.
"""
