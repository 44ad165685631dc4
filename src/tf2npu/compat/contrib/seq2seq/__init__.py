"""``tf.contrib.seq2seq`` for ``tf2npu run``: TF 1.15's graph-mode decoders, written for tf2npu.

TF 2.15 has no seq2seq (TF Addons' is Keras-first, names its variables differently and is
end-of-life), so these modules follow TF 1.15's definitions on the v1 graph API, with the same
classes, arguments, results and **variable names**, so TF 1.15 checkpoints restore:

* :mod:`.attention` — the attention mechanisms (Bahdanau, Luong, their monotonic forms),
  ``hardmax``, ``safe_cumprod``, ``monotonic_attention``;
* :mod:`.wrapper` — ``AttentionWrapper`` and ``AttentionWrapperState``;
* :mod:`.decoder` — ``Decoder``, ``dynamic_decode``, ``BasicDecoder``;
* :mod:`.helpers` — the ``Helper`` family feeding ``BasicDecoder``;
* :mod:`.beam_search` — ``BeamSearchDecoder``, ``tile_batch``, ``gather_tree``;
* :mod:`.loss` — ``sequence_loss``.

They import TensorFlow when first imported; the contrib table resolves them only when a script
touches ``tf.contrib.seq2seq``.
"""
