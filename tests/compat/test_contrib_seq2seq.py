"""tf.contrib.seq2seq under tf2npu run: attention, decoding and losses against TF 1.15's maths.

The NumPy definitions are in tests/compat/tf115_reference.py; their source is prepended to
each TF scenario, which runs in its own interpreter (activate() swaps the tensorflow module).
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable

import numpy as np
import pytest
from tests.compat import tf115_reference as ref

from tf2npu.compat.contrib import table

REF = inspect.getsource(ref).replace("from __future__ import annotations\n", "")


def with_ref(script: str) -> str:
    return REF + textwrap.dedent(script)


def test_reference_gather_tree_backtracks_and_pads() -> None:
    # One entry, two beams, three steps; beam 1 came from beam 0 at the last step.
    step_ids = np.array([[[1, 2]], [[3, 4]], [[5, 9]]])
    parents = np.array([[[0, 0]], [[1, 0]], [[0, 0]]])
    got = ref.gather_tree(step_ids, parents, np.array([3]), end_token=9)
    assert got[:, 0].tolist() == [[2, 2], [3, 3], [5, 9]]
    short = ref.gather_tree(step_ids, parents, np.array([2]), end_token=9)
    assert short[:, 0].tolist() == [[2, 1], [3, 4], [9, 9]]


def test_seq2seq_table_lists_tf115s_public_names() -> None:
    names = set(table.symbols_of("seq2seq"))
    tf115 = set(
        [
            "sequence_loss",
            "Decoder",
            "dynamic_decode",
            "BasicDecoder",
            "BasicDecoderOutput",
            "BeamSearchDecoder",
            "BeamSearchDecoderOutput",
            "BeamSearchDecoderState",
            "Helper",
            "CustomHelper",
            "FinalBeamSearchDecoderOutput",
            "gather_tree",
            "GreedyEmbeddingHelper",
            "InferenceHelper",
            "SampleEmbeddingHelper",
            "ScheduledEmbeddingTrainingHelper",
            "ScheduledOutputTrainingHelper",
            "TrainingHelper",
            "BahdanauAttention",
            "LuongAttention",
            "hardmax",
            "AttentionWrapperState",
            "AttentionWrapper",
            "AttentionMechanism",
            "tile_batch",
            "safe_cumprod",
            "monotonic_attention",
            "BahdanauMonotonicAttention",
            "LuongMonotonicAttention",
        ]
    )
    assert names == tf115


@pytest.mark.tf
@pytest.mark.slow
def test_attention_scores_match_tf115(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        rng = np.random.RandomState(0)
        memory = rng.randn(2, 4, 3).astype(np.float32)
        lengths = np.array([4, 2], np.int32)
        query = rng.randn(2, 5).astype(np.float32)
        prev = np.zeros((2, 4), np.float32)
        cases = {
            "bahdanau": s2s.BahdanauAttention(5, memory, lengths, normalize=True),
            "luong": s2s.LuongAttention(5, memory, lengths, scale=True),
        }
        with tf.variable_scope("att"):
            got = {k: m(tf.constant(query), tf.constant(prev))[0] for k, m in cases.items()}
        values = {v.op.name: v for v in tf.global_variables()}
        print(sorted((k, v.shape.as_list()) for k, v in values.items()))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(values["att/luong_attention/attention_g"].assign(1.7))
            sess.run(values["att/bahdanau_attention/attention_b"].assign([.1, -.2, .3, 0., .5]))
            v = {k: sess.run(t) for k, t in values.items()}
            b_got, l_got = sess.run([got["bahdanau"], got["luong"]])
        keys_b = memory @ v["memory_layer/kernel"]
        score_b = bahdanau_score(query @ v["att/bahdanau_attention/query_layer/kernel"], keys_b,
                                 v["att/bahdanau_attention/attention_v"],
                                 v["att/bahdanau_attention/attention_g"],
                                 v["att/bahdanau_attention/attention_b"])
        score_l = luong_score(query, memory @ v["memory_layer_1/kernel"], 1.7)
        print(np.allclose(b_got, masked_softmax(score_b, lengths), atol=1e-5),
              np.allclose(l_got, masked_softmax(score_l, lengths), atol=1e-5))
        print(float(v["att/bahdanau_attention/attention_g"]) == np.float32(np.sqrt(1 / 5)),
              b_got[1, 2:].tolist(), l_got[1, 2:].tolist())
        """)
    )
    assert out.splitlines() == [
        "[('att/bahdanau_attention/attention_b', [5]), ('att/bahdanau_attention/attention_g', []), "
        "('att/bahdanau_attention/attention_v', [5]), "
        "('att/bahdanau_attention/query_layer/kernel', [5, 5]), "
        "('att/luong_attention/attention_g', []), ('memory_layer/kernel', [3, 5]), "
        "('memory_layer_1/kernel', [3, 5])]",
        "True True",
        "True [0.0, 0.0] [0.0, 0.0]",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_attention_wrapper_step_matches_tf115(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        rng = np.random.RandomState(1)
        memory = rng.randn(2, 3, 4).astype(np.float32)
        x = rng.randn(2, 2).astype(np.float32)
        luong = s2s.LuongAttention(6, memory)
        cell = tf.nn.rnn_cell.BasicRNNCell(6)
        wrapper = s2s.AttentionWrapper(cell, luong, attention_layer_size=5, alignment_history=True)
        bare = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(6), s2s.LuongAttention(6, memory),
                                    output_attention=False, name="bare")
        state = wrapper.zero_state(2, tf.float32)
        out1, state1 = wrapper(tf.constant(x), state)
        out2, state2 = wrapper(tf.constant(x), state1)
        bare_out, bare_state = bare(tf.constant(x), bare.zero_state(2, tf.float32))
        print(wrapper.output_size, bare.output_size, bare_state.attention.shape.as_list())
        names = [v.op.name for v in tf.global_variables()]
        print(names)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            v = dict(zip(names, sess.run(tf.global_variables())))
            got1, got2, hist, t2, got_bare = sess.run(
                [out1, out2, state2.alignment_history.stack(), state2.time, bare_out])
        keys = memory @ v["memory_layer/kernel"]
        h = np.zeros((2, 6)); attention = np.zeros((2, 5)); outs, aligns = [], []
        for _ in range(2):
            inp = np.concatenate([x, attention], 1)
            h = np.tanh(np.concatenate([inp, h], 1) @ v["attention_wrapper/basic_rnn_cell/kernel"]
                        + v["attention_wrapper/basic_rnn_cell/bias"])
            a = softmax(luong_score(h, keys))
            context = np.einsum("bt,btd->bd", a, memory)
            attention = np.concatenate([h, context], 1) @ v["attention_wrapper/attention_layer/kernel"]
            outs.append(attention); aligns.append(a)
        print(np.allclose(got1, outs[0], atol=1e-5), np.allclose(got2, outs[1], atol=1e-5),
              np.allclose(hist, aligns, atol=1e-5), hist.shape, t2)
        print(got_bare.shape)
        """)
    )
    assert out.splitlines() == [
        "5 6 [2, 4]",
        "['memory_layer/kernel', 'memory_layer_1/kernel', "
        "'attention_wrapper/basic_rnn_cell/kernel', 'attention_wrapper/basic_rnn_cell/bias', "
        "'attention_wrapper/attention_layer/kernel', 'bare/basic_rnn_cell/kernel', "
        "'bare/basic_rnn_cell/bias']",
        "True True True (2, 2, 3) 2",
        "(2, 6)",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_attention_wrapper_arguments_and_errors(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        memory = tf.zeros([2, 3, 4])
        mechs = [s2s.BahdanauAttention(5, memory), s2s.LuongAttention(4, memory)]
        cell = tf.nn.rnn_cell.GRUCell(4)
        multi = s2s.AttentionWrapper(cell, mechs, attention_layer_size=[3, 2],
                                     cell_input_fn=lambda inputs, attention: inputs,
                                     initial_cell_state=tf.ones([2, 4]))
        state = multi.zero_state(2, tf.float32)
        output, next_state = multi(tf.zeros([2, 4]), state)
        print(output.shape.as_list(), len(next_state.alignments), type(next_state).__name__)
        cloned = state.clone(cell_state=tf.fill([2, 4], 2.0))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(state.cell_state)[0].tolist(), sess.run(cloned.cell_state)[0, 0])
        attempts = {
            "mechanism": lambda: s2s.AttentionWrapper(cell, "luong"),
            "sizes": lambda: s2s.AttentionWrapper(cell, mechs, attention_layer_size=[3]),
            "both": lambda: s2s.AttentionWrapper(cell, mechs[0], attention_layer_size=3,
                                                 attention_layer=tf.layers.Dense(3)),
            "clone": lambda: state.clone(cell_state=tf.zeros([2, 7])),
            "state": lambda: multi(tf.zeros([2, 4]), tf.zeros([2, 4])),
        }
        for label, attempt in attempts.items():
            try:
                attempt()
            except (TypeError, ValueError) as err:
                print(label, type(err).__name__, " ".join(str(err).split()))
    """)
    lines = out.splitlines()
    assert lines[:2] == ["[2, 5] 2 AttentionWrapperState", "[1.0, 1.0, 1.0, 1.0] 2.0"]
    expected = [
        "mechanism TypeError attention_mechanism must be an AttentionMechanism or list",
        "sizes ValueError If provided, attention_layer_size must contain exactly one",
        "both ValueError Only one of attention_layer_size and attention_layer should",
        "clone ValueError The shape of the AttentionWrapperState is expected to be",
        "state TypeError Expected state to be instance of AttentionWrapperState.",
    ]
    assert len(lines) == 2 + len(expected)
    for line, start in zip(lines[2:], expected, strict=True):
        # Keras' autograph may put "in user code: ..." before the message.
        label, kind, text = start.split(" ", 2)
        assert line.startswith(f"{label} {kind} "), line
        assert text in line, line


@pytest.mark.tf
@pytest.mark.slow
def test_dynamic_decode_lengths_impute_and_iterations(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        rng = np.random.RandomState(2)
        inputs = tf.constant(rng.randn(2, 4, 3).astype(np.float32))
        cell = tf.nn.rnn_cell.GRUCell(3)
        def decode(**kwargs):
            helper = s2s.TrainingHelper(inputs, [4, 2])
            decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32))
            return s2s.dynamic_decode(decoder, **kwargs)
        with tf.variable_scope("d", reuse=tf.AUTO_REUSE):
            plain = decode()
            imputed = decode(impute_finished=True)
            capped = decode(maximum_iterations=3, output_time_major=True)
        rnn_out, rnn_state = tf.nn.dynamic_rnn(
            cell, inputs, [4, 2], dtype=tf.float32, scope="d/decoder"
        )
        print(sorted({v.op.name for v in tf.global_variables()}))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            (p_out, p_state, p_len), (i_out, i_state, i_len), (c_out, _, c_len), r_out, r_state = \
                sess.run([plain, imputed, capped, rnn_out, rnn_state])
        print(p_len.tolist(), i_len.tolist(), c_len.tolist(), c_out.rnn_output.shape)
        print(np.allclose(i_out.rnn_output, r_out, atol=1e-6),
              np.allclose(i_state, r_state, atol=1e-6),
              np.abs(p_out.rnn_output[1, 2:]).max() > 0, np.abs(i_out.rnn_output[1, 2:]).max())
        try:
            s2s.dynamic_decode(cell)
        except TypeError as err:
            print(str(err).split(",")[0])
    """)
    assert out.splitlines() == [
        "['d/decoder/gru_cell/candidate/bias', 'd/decoder/gru_cell/candidate/kernel', "
        "'d/decoder/gru_cell/gates/bias', 'd/decoder/gru_cell/gates/kernel']",
        "[4, 2] [4, 2] [3, 2] (3, 2, 3)",
        "True True True 0.0",
        "Expected decoder to be type Decoder",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_inference_helpers(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq

        class Counter(tf.nn.rnn_cell.RNNCell):
            # Emits logits favouring word (t + 1) at step t, whatever the input.
            @property
            def state_size(self):
                return 1
            @property
            def output_size(self):
                return 5
            def call(self, inputs, state):
                logits = tf.one_hot(tf.cast(state[:, 0], tf.int32) + 1, 5) * 10.0
                return logits, state + 1

        cell = Counter()
        start = tf.zeros([2], tf.int32)
        greedy = s2s.GreedyEmbeddingHelper(tf.eye(5), start, end_token=3)
        g_out, _, g_len = s2s.dynamic_decode(
            s2s.BasicDecoder(cell, greedy, tf.zeros([2, 1])), maximum_iterations=6)
        sample = s2s.SampleEmbeddingHelper(tf.eye(5), start, 3, softmax_temperature=0.01, seed=1)
        s_out, _, _ = s2s.dynamic_decode(
            s2s.BasicDecoder(cell, sample, tf.zeros([2, 1])), maximum_iterations=6)
        infer = s2s.InferenceHelper(
            sample_fn=lambda o: tf.argmax(o, -1, output_type=tf.int32), sample_shape=[],
            sample_dtype=tf.int32, start_inputs=tf.zeros([2, 5]),
            end_fn=lambda ids: tf.equal(ids, 2), next_inputs_fn=lambda ids: tf.one_hot(ids, 5))
        i_out, _, i_len = s2s.dynamic_decode(s2s.BasicDecoder(cell, infer, tf.zeros([2, 1])))
        custom = s2s.CustomHelper(
            lambda: (tf.constant([False, False]), tf.zeros([2, 5])),
            lambda time, outputs, state: tf.argmax(outputs, -1, output_type=tf.int32),
            lambda time, outputs, state, sample_ids: (tf.fill([2], time >= 1), outputs, state))
        c_out, _, c_len = s2s.dynamic_decode(s2s.BasicDecoder(cell, custom, tf.zeros([2, 1])))
        with tf.Session() as sess:
            for ids, lengths in ((g_out.sample_id, g_len), (s_out.sample_id, None),
                                 (i_out.sample_id, i_len), (c_out.sample_id, c_len)):
                print(sess.run(ids).tolist(), None if lengths is None else sess.run(lengths).tolist())
        try:
            s2s.GreedyEmbeddingHelper(tf.eye(5), [[0]], 3)
        except ValueError as err:
            print(err)
    """)
    assert out.splitlines() == [
        "[[1, 2, 3], [1, 2, 3]] [3, 3]",
        "[[1, 2, 3], [1, 2, 3]] None",
        "[[1, 2], [1, 2]] [2, 2]",
        "[[1, 2], [1, 2]] [2, 2]",
        "start_tokens must be a vector",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_scheduled_helpers_mix_inputs_by_probability(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        inputs = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 4, 3))
        emb = tf.constant(np.full((3, 3), -1.0, np.float32))
        cell = tf.nn.rnn_cell.BasicRNNCell(3)

        def first_inputs(helper):
            decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32))
            outputs, _, _ = s2s.dynamic_decode(decoder)
            return outputs.sample_id

        with tf.variable_scope("s", reuse=tf.AUTO_REUSE):
            never = s2s.ScheduledEmbeddingTrainingHelper(inputs, [4, 4], emb, 0.0)
            always = s2s.ScheduledEmbeddingTrainingHelper(inputs, [4, 4], emb, 1.0, seed=3)
            out_never = s2s.ScheduledOutputTrainingHelper(inputs, [4, 4], 0.0)
            out_always = s2s.ScheduledOutputTrainingHelper(inputs, [4, 4], 1.0)
            ids = [first_inputs(h) for h in (never, always, out_never, out_always)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(ids)
        print(got[0].tolist(), bool((got[1] >= 0).all()), got[2].tolist(), got[3].tolist())
        try:
            s2s.ScheduledOutputTrainingHelper(inputs, [4, 4], [[0.5]])
        except ValueError as err:
            print(str(err).split(". ")[0])
    """)
    assert out.splitlines() == [
        "[[-1, -1, -1, -1], [-1, -1, -1, -1]] True [[0, 0, 0, 0], [0, 0, 0, 0]] "
        "[[1, 1, 1, 1], [1, 1, 1, 1]]",
        "sampling_probability must be either a scalar or a vector",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_gather_tree_matches_tf115_backtracking(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        rng = np.random.RandomState(3)
        step_ids = rng.randint(0, 6, size=(5, 3, 4)).astype(np.int32)
        parents = rng.randint(0, 4, size=(5, 3, 4)).astype(np.int32)
        lengths = np.array([5, 3, 0], np.int32)
        got = tf.contrib.seq2seq.gather_tree(step_ids, parents, lengths, 5)
        bad = parents.copy(); bad[1, 0, :] = 7   # out of range: -1 there, end_token below
        got_bad = tf.contrib.seq2seq.gather_tree(step_ids, bad, [5, 5, 5], 6)  # 6: no end
        with tf.Session() as sess:
            g, gb = sess.run([got, got_bad])
        print(np.array_equal(g, gather_tree(step_ids, parents, lengths, 5)))
        # The parent read at step 1 is out of range: step 0 is -1, the later steps are kept.
        print(g[:, 2].tolist() == [[5] * 4] * 5, gb[0, 0].tolist(),
              np.array_equal(gb[1:], gather_tree(step_ids, parents, [5, 5, 5], 6)[1:]))
        tiled = tf.contrib.seq2seq.tile_batch(tf.constant([[1, 2], [3, 4]]), 2)
        nested = tf.contrib.seq2seq.tile_batch((tf.zeros([3, 5]), tf.zeros([3])), 4)
        with tf.Session() as sess:
            print(sess.run(tiled).tolist(), tiled.shape.as_list(),
                  [t.shape.as_list() for t in nested])
        """)
    )
    lines = out.splitlines()
    assert lines[0] == "True"
    assert lines[1] == "True [-1, -1, -1, -1] True"
    assert lines[2] == "[[1, 2], [1, 2], [3, 4], [3, 4]] [4, 2] [[12, 5], [12]]"


@pytest.mark.tf
@pytest.mark.slow
def test_beam_search_matches_tf115_scoring(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        rng = np.random.RandomState(4)
        V, K, B, END = 6, 3, 2, 1
        M = rng.randn(V, V).astype(np.float32) * 2      # logits = M[previous word] + bias[t]
        bias = rng.randn(8, V).astype(np.float32)

        class Table(tf.nn.rnn_cell.RNNCell):
            @property
            def state_size(self):
                return 1
            @property
            def output_size(self):
                return V
            def call(self, inputs, state):
                t = tf.cast(state[:, 0], tf.int32)
                return tf.matmul(inputs, M) + tf.gather(bias, t), state + 1

        start = np.array([0, 2], np.int32)
        decoder = s2s.BeamSearchDecoder(Table(), tf.eye(V), start, END,
                                        tf.zeros([B * K, 1]), K, length_penalty_weight=0.6)
        outputs, state, lengths = s2s.dynamic_decode(decoder, maximum_iterations=6)
        with tf.Session() as sess:
            ids, raw, got_len, got_lp = sess.run(
                [outputs.predicted_ids, outputs.beam_search_decoder_output, state.lengths,
                 state.log_probs])

        log_probs = np.full((B, K), -np.inf, np.float32); log_probs[:, 0] = 0
        finished = np.zeros((B, K), bool); blen = np.zeros((B, K), np.int64)
        prev = np.tile(start[:, None], [1, K])
        words_t, parents_t, scores_t = [], [], []
        for t in range(6):
            logits = M[prev] + bias[t]
            scores, words, parents, log_probs, blen, finished = beam_step(
                log_probs, logits, finished, blen, END, 0.6)
            words_t.append(words); parents_t.append(parents); scores_t.append(scores)
            prev = words
            if finished.all():
                break
        want = gather_tree(np.array(words_t), np.array(parents_t), blen.max(1), END)
        print(ids.shape, np.array_equal(ids, want.transpose(1, 0, 2)))
        print(np.allclose(raw.scores, np.array(scores_t).transpose(1, 0, 2), atol=1e-4),
              np.array_equal(raw.parent_ids, np.array(parents_t).transpose(1, 0, 2)),
              np.array_equal(got_len, blen), np.allclose(got_lp, log_probs, atol=1e-4))
        """)
    )
    lines = out.splitlines()
    assert lines[0].endswith("True"), lines
    assert lines[1] == "True True True True"


@pytest.mark.tf
@pytest.mark.slow
def test_coverage_penalty_follows_tf115(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        from tf2npu.compat.contrib.seq2seq import beam_search
        log_probs = np.array([[[-1.0, -2.0]]], np.float32)           # [batch, beam, vocab]
        lengths = np.array([[[3, 4]]], np.int64)
        acc = np.array([[[0.5, 0.0, 2.0]]], np.float32)              # [batch, beam, memory]
        finished = np.array([[True]])
        scores = beam_search._scores(log_probs, lengths, 0.5, 0.2, finished, acc)
        open_ = beam_search._scores(log_probs, lengths, 0.5, 0.2, ~finished, acc)
        with tf.Session() as sess:
            got, got_open = sess.run([scores, open_])
        lp = ((5.0 + lengths) / 6.0) ** 0.5
        coverage = np.log(0.5) + np.log(1.0) + np.log(1.0)           # 0 -> 1, clipped at 1
        print(np.allclose(got, log_probs / lp + 0.2 * coverage),
              np.allclose(got_open, log_probs / lp))
    """)
    assert out.splitlines() == ["True True"]


@pytest.mark.tf
@pytest.mark.slow
def test_sequence_loss_hardmax_and_monotonic(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        rng = np.random.RandomState(5)
        logits = rng.randn(2, 3, 4).astype(np.float32)
        targets = rng.randint(0, 4, (2, 3)).astype(np.int32)
        weights = np.array([[1, 1, 0], [1, 0, 0]], np.float32)
        args = [tf.constant(a) for a in (logits, targets, weights)]  # tensors, as TF 1.15 needs
        mean = s2s.sequence_loss(*args)
        per_t = s2s.sequence_loss(*args, average_across_timesteps=False)
        summed = s2s.sequence_loss(*args, average_across_timesteps=False,
                                   average_across_batch=False, sum_over_timesteps=True,
                                   sum_over_batch=True)
        hard = s2s.hardmax([[1.0, 3.0, 2.0], [0.0, -1.0, -2.0]])
        p = rng.uniform(0.1, 0.9, (2, 5)).astype(np.float32)
        prev = np.eye(5, dtype=np.float32)[[0, 2]]
        modes = [s2s.monotonic_attention(p, prev, m) for m in ("recursive", "parallel")]
        with tf.Session() as sess:
            m, pt, sm, h, (rec, par) = sess.run([mean, per_t, summed, hard, modes])
        xent = -np.take_along_axis(log_softmax(logits), targets[..., None], -1)[..., 0] * weights
        want_rec = np.zeros_like(p)
        for b in range(2):
            carry = 0.0
            for i in range(5):
                carry = carry * (1 - p[b, i - 1]) if i else 0.0
                carry += prev[b, i]
                want_rec[b, i] = p[b, i] * carry
        print(np.isclose(m, sequence_loss(logits, targets, weights), atol=1e-6),
              np.allclose(pt, xent.sum(0) / np.maximum(weights.sum(0), 1e-30) * (weights.sum(0) > 0),
                          atol=1e-6),
              np.isclose(sm, xent.sum() / 3, atol=1e-6))
        print(h.tolist(), np.allclose(rec, want_rec, atol=1e-6), np.allclose(par, want_rec, atol=1e-4))
        try:
            s2s.sequence_loss(*args, sum_over_timesteps=True)
        except ValueError as err:
            print(err)
        """)
    )
    assert out.splitlines() == [
        "True True True",
        "[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]] True True",
        "average_across_timesteps and sum_over_timesteps cannot be set to True at same time.",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_training_step_through_attention_decoder(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        s2s = tf.contrib.seq2seq
        rng = np.random.RandomState(6)
        src = tf.constant(rng.randint(1, 8, (3, 5)))
        tgt_in = tf.constant(rng.randint(1, 8, (3, 4)))
        tgt_out = tf.constant(rng.randint(1, 8, (3, 4)))
        src_len, tgt_len = tf.constant([5, 4, 2]), tf.constant([4, 3, 1])
        with tf.variable_scope("seq2seq"):
            emb = tf.get_variable("embedding", [8, 6])
            with tf.variable_scope("encoder"):
                enc_out, enc_state = tf.nn.dynamic_rnn(
                    tf.contrib.rnn.LSTMBlockCell(6), tf.nn.embedding_lookup(emb, src), src_len,
                    dtype=tf.float32)
            with tf.variable_scope("decoder") as scope:
                mech = s2s.BahdanauAttention(6, enc_out, src_len, normalize=True)
                cell = s2s.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(6), mech,
                                            attention_layer_size=6, name="attention")
                init = cell.zero_state(3, tf.float32).clone(cell_state=enc_state)
                helper = s2s.TrainingHelper(tf.nn.embedding_lookup(emb, tgt_in), tgt_len)
                decoder = s2s.BasicDecoder(cell, helper, init,
                                           output_layer=tf.layers.Dense(8, name="output_projection"))
                outputs, _, _ = s2s.dynamic_decode(decoder, scope=scope)
        weights = tf.sequence_mask(tgt_len, 4, dtype=tf.float32)
        logits = tf.pad(outputs.rnn_output, [[0, 0], [0, 4 - tf.shape(outputs.rnn_output)[1]], [0, 0]])
        loss = s2s.sequence_loss(logits, tgt_out, weights)
        grads = tf.gradients(loss, tf.trainable_variables())
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        for v in tf.trainable_variables():
            print(v.op.name, v.shape.as_list())
        print(all(g is not None for g in grads))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run(loss)
            for _ in range(5):
                sess.run(train)
            print(sess.run(loss) < first)
    """)
    assert out.splitlines() == [
        "seq2seq/embedding [8, 6]",
        "seq2seq/encoder/rnn/lstm_cell/kernel [12, 24]",
        "seq2seq/encoder/rnn/lstm_cell/bias [24]",
        "seq2seq/decoder/memory_layer/kernel [6, 6]",
        "seq2seq/decoder/attention/lstm_cell/kernel [18, 24]",
        "seq2seq/decoder/attention/lstm_cell/bias [24]",
        "seq2seq/decoder/attention/bahdanau_attention/query_layer/kernel [6, 6]",
        "seq2seq/decoder/attention/bahdanau_attention/attention_v [6]",
        "seq2seq/decoder/attention/bahdanau_attention/attention_g []",
        "seq2seq/decoder/attention/bahdanau_attention/attention_b [6]",
        "seq2seq/decoder/attention/attention_layer/kernel [12, 6]",
        "seq2seq/decoder/output_projection/kernel [6, 8]",
        "seq2seq/decoder/output_projection/bias [8]",
        "True",
        "True",
    ]
