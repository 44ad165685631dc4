"""tf.contrib.rnn under tf2npu run: TF 1.15's cells, their variables and their maths.

Numbers are checked against tests/compat/tf115_reference.py (TF 1.15's formulas in NumPy),
whose source is prepended to each TF scenario.
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


def test_reference_lstm_step_gates_in_icfo_order() -> None:
    # One unit, x=0, h=0: the gates are the biases; i, c, f, o = 0, 1, 0, 0.
    zero = np.zeros((1, 1))
    b = np.array([0.0, 1.0, 0.0, 0.0])
    c, h = ref.lstm_block_step(zero, np.ones((1, 1)), zero, np.zeros((2, 4)), b, forget_bias=1.0)
    want_c = 0.5 * np.tanh(1.0) + ref.sigmoid(1.0) * 1.0
    assert c[0, 0] == pytest.approx(want_c)
    assert h[0, 0] == pytest.approx(0.5 * np.tanh(want_c))


def test_rnn_table_keeps_the_aliases_and_adds_the_contrib_cells() -> None:
    rnn = table.symbols_of("rnn")
    assert rnn["LSTMCell"].target == "tf.compat.v1.nn.rnn_cell.LSTMCell"
    assert rnn["LSTMBlockFusedCell"].target == "tf2npu.compat.contrib.rnn.block:LSTMBlockFusedCell"
    assert rnn["LayerNormBasicLSTMCell"].target.endswith("rnn.cells:LayerNormBasicLSTMCell")
    assert "stack_bidirectional_dynamic_rnn" in rnn


def test_a_cell_tf2npu_lacks_names_what_to_use() -> None:
    text = table.advice_for("rnn", "GridLSTMCell")
    assert text.startswith("tf.contrib.rnn.GridLSTMCell is not provided by tf2npu run")
    assert "tf.compat.v1.nn.rnn_cell.LSTMCell/GRUCell" in text
    assert "tf.keras.layers.ConvLSTM1D/2D/3D" in table.advice_for("rnn", "ConvLSTMCell")


@pytest.mark.tf
@pytest.mark.slow
def test_lstm_block_cell_matches_tf115_gates(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        rng = np.random.RandomState(0)
        x = rng.randn(3, 4).astype(np.float32)
        c0, h0 = (rng.randn(3, 5).astype(np.float32) for _ in range(2))
        for label, kwargs in (("plain", {}), ("clip", {"cell_clip": 0.3}),
                              ("peep", {"use_peephole": True, "forget_bias": 0.5})):
            with tf.variable_scope(label):
                cell = tf.contrib.rnn.LSTMBlockCell(5, **kwargs)
                h, (c, h2) = cell(tf.constant(x), tf.nn.rnn_cell.LSTMStateTuple(c0, h0))
            names = sorted(v.op.name for v in cell.variables)
            with tf.Session() as sess:
                sess.run(tf.variables_initializer(cell.variables))
                got_c, got_h = sess.run([c, h])
                values = dict(zip([v.op.name for v in cell.variables],
                                  sess.run(cell.variables)))
            peep = None
            if kwargs.get("use_peephole"):
                peep = tuple(values[f"{label}/lstm_cell/w_{g}_diag"] for g in "ifo")
            want_c, want_h = lstm_block_step(
                x, c0, h0, values[f"{label}/lstm_cell/kernel"], values[f"{label}/lstm_cell/bias"],
                kwargs.get("forget_bias", 1.0), kwargs.get("cell_clip", -1.0), peep)
            print(label, names, np.allclose(got_c, want_c, atol=1e-5),
                  np.allclose(got_h, want_h, atol=1e-5), float(np.abs(got_c).max()) <= np.float32(0.3))
        """)
    )
    assert out.splitlines() == [
        "plain ['plain/lstm_cell/bias', 'plain/lstm_cell/kernel'] True True False",
        "clip ['clip/lstm_cell/bias', 'clip/lstm_cell/kernel'] True True True",
        "peep ['peep/lstm_cell/bias', 'peep/lstm_cell/kernel', 'peep/lstm_cell/w_f_diag', "
        "'peep/lstm_cell/w_i_diag', 'peep/lstm_cell/w_o_diag'] True True False",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_fused_cell_equals_the_step_cell_and_trains(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        rng = np.random.RandomState(1)
        x = rng.randn(4, 2, 3).astype(np.float32)          # time-major
        lengths = np.array([4, 2], np.int32)
        fused = tf.contrib.rnn.LSTMBlockFusedCell(5, forget_bias=0.7)
        outputs, (c, h) = fused(tf.constant(x), dtype=tf.float32, sequence_length=lengths)
        loss = tf.reduce_sum(outputs ** 2)
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        print(sorted((v.op.name, v.shape.as_list()) for v in tf.trainable_variables()))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, b = sess.run([fused._kernel, fused._bias])
            got_out, got_c, got_h, before = sess.run([outputs, c, h, loss])
            sess.run(step)
            after = sess.run(loss)
        want = np.zeros((4, 2, 5), np.float32)
        finals = []
        for k in range(2):
            ck, hk = np.zeros((1, 5)), np.zeros((1, 5))
            for t in range(lengths[k]):
                ck, hk = lstm_block_step(x[t, k:k + 1], ck, hk, w, b, 0.7)
                want[t, k] = hk[0]
            finals.append((ck[0], hk[0]))
        print(np.allclose(got_out, want, atol=1e-5))
        print(np.allclose(got_c, [f[0] for f in finals], atol=1e-5),
              np.allclose(got_h, [f[1] for f in finals], atol=1e-5))
        print(after < before)
        """)
    )
    assert out.splitlines() == [
        "[('lstm_fused_cell/bias', [20]), ('lstm_fused_cell/kernel', [8, 20])]",
        "True",
        "True True",
        "True",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_block_cell_gradients_match_finite_differences(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        from tensorflow.python.ops import gradient_checker
        rng = np.random.RandomState(2)
        x = tf.constant(rng.randn(2, 3), tf.float32)  # the kernels take float16/float32 only
        state = tf.constant(rng.randn(2, 4), tf.float32)
        lstm = tf.contrib.rnn.LSTMBlockCell(4, use_peephole=True)
        h, (c, _) = lstm(x, (state, state))
        gru = tf.contrib.rnn.GRUBlockCell(4)
        g, _ = gru(x, state)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            errors = []
            for y in (h, c, g):
                for inp in [x, state]:
                    errors.append(gradient_checker.compute_gradient_error(
                        inp, inp.shape.as_list(), y, y.shape.as_list()))
            for var in lstm.trainable_variables + gru.trainable_variables:
                y = g if var in gru.trainable_variables else h
                errors.append(gradient_checker.compute_gradient_error(
                    var, var.shape.as_list(), y, y.shape.as_list()))
        print(len(errors), max(errors) < 2e-3)
    """)
    assert out.splitlines() == ["15 True"]


@pytest.mark.tf
@pytest.mark.slow
def test_gru_block_cells_match_tf115_and_name_variables(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        rng = np.random.RandomState(3)
        x = rng.randn(2, 3).astype(np.float32)
        h0 = rng.randn(2, 4).astype(np.float32)
        cells = {"v1": tf.contrib.rnn.GRUBlockCell(4),
                 "v2": tf.contrib.rnn.GRUBlockCellV2(num_units=4)}
        for label, cell in cells.items():
            with tf.variable_scope(label):
                h, _ = cell(tf.constant(x), tf.constant(h0))
            with tf.Session() as sess:
                sess.run(tf.variables_initializer(cell.variables))
                got, (w_ru, b_ru, w_c, b_c) = sess.run([h, cell.variables])
            want = gru_block_step(x, h0, w_ru, b_ru, w_c, b_c)
            print([v.op.name for v in cell.variables], b_ru.min() == 1.0,
                  np.allclose(got, want, atol=1e-5))
        try:
            tf.contrib.rnn.GRUBlockCell(4, cell_size=4)
        except ValueError as err:
            print(err)
        """)
    )
    assert out.splitlines() == [
        "['v1/gru_cell/w_ru', 'v1/gru_cell/b_ru', 'v1/gru_cell/w_c', 'v1/gru_cell/b_c'] True True",
        "['v2/gru_cell/gates/kernel', 'v2/gru_cell/gates/bias', 'v2/gru_cell/candidate/kernel', "
        "'v2/gru_cell/candidate/bias'] True True",
        "Exactly one of num_units or cell_size must be provided.",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_fused_adaptor_and_time_reversal(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import numpy as np
        import tensorflow as tf
        rng = np.random.RandomState(4)
        x = tf.constant(rng.randn(5, 2, 3).astype(np.float32))
        lengths = tf.constant([5, 3])
        cell = tf.nn.rnn_cell.GRUCell(4)
        static = tf.contrib.rnn.FusedRNNCellAdaptor(cell)
        dynamic = tf.contrib.rnn.FusedRNNCellAdaptor(cell, use_dynamic_rnn=True)
        s_out, s_state = static(x, dtype=tf.float32, sequence_length=lengths, scope="gru")
        d_out, d_state = dynamic(x, dtype=tf.float32, sequence_length=lengths, scope="gru")
        back = tf.contrib.rnn.TimeReversedFusedRNN(dynamic)
        b_out, b_state = back(x, dtype=tf.float32, sequence_length=lengths, scope="gru")
        rev = tf.reverse_sequence(x, lengths, 0, 1)
        r_out, r_state = dynamic(rev, dtype=tf.float32, sequence_length=lengths, scope="gru")
        listed, _ = static(tf.unstack(x), dtype=tf.float32, scope="gru")
        print([v.op.name for v in tf.trainable_variables()], type(listed).__name__, len(listed))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            so, ss, do, ds, bo, bs, ro, rs = sess.run(
                [s_out, s_state, d_out, d_state, b_out, b_state, r_out, r_state])
        ro_back = np.stack([np.concatenate([ro[:n, k][::-1], ro[n:, k]]) for k, n in
                            enumerate([5, 3])], 1)
        print(np.allclose(so, do, atol=1e-6), np.allclose(ss, ds, atol=1e-6))
        print(np.allclose(bo, ro_back, atol=1e-6), np.allclose(bs, rs, atol=1e-6))
    """)
    assert out.splitlines() == [
        "['gru/gru_cell/gates/kernel', 'gru/gru_cell/gates/bias', 'gru/gru_cell/candidate/kernel', "
        "'gru/gru_cell/candidate/bias'] list 5",
        "True True",
        "True True",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_wrappers_and_contrib_cells_have_tf115_variable_names(
    run_tf1: Callable[[str], str],
) -> None:
    out = run_tf1("""
        import tensorflow as tf
        rnn = tf.contrib.rnn
        x = tf.zeros([2, 3, 4])
        ids = tf.zeros([2, 3, 1], tf.int32)
        cells = {
            "out": (rnn.OutputProjectionWrapper(rnn.LSTMBlockCell(5), 7), x),
            "inp": (rnn.InputProjectionWrapper(tf.nn.rnn_cell.GRUCell(5), 6), x),
            "emb": (rnn.EmbeddingWrapper(tf.nn.rnn_cell.GRUCell(5), 10, 3), ids),
            "hwy": (rnn.HighwayWrapper(tf.nn.rnn_cell.GRUCell(4)), x),
            "att": (rnn.AttentionCellWrapper(tf.nn.rnn_cell.GRUCell(4), attn_length=2), x),
            "ln": (rnn.LayerNormBasicLSTMCell(3, layer_norm=False), x),
            "cifg": (rnn.CoupledInputForgetGateLSTMCell(3, use_peepholes=True, num_proj=2), x),
            "nas": (rnn.NASCell(3, use_bias=True), x),
            "ugrnn": (rnn.UGRNNCell(3), x),
            "indy": (rnn.IndyLSTMCell(3), x),
        }
        for label, (cell, inputs) in cells.items():
            outputs, _ = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32, scope=label)
            made = [v for v in tf.trainable_variables() if v.op.name.startswith(label + "/")]
            print(label, outputs.shape.as_list(),
                  " ".join(f"{v.op.name[len(label) + 1 :]}{v.shape.as_list()}" for v in made))
    """)
    assert out.splitlines() == [
        "out [2, 3, 7] output_projection_wrapper/lstm_cell/kernel[9, 20] "
        "output_projection_wrapper/lstm_cell/bias[20] output_projection_wrapper/kernel[5, 7] "
        "output_projection_wrapper/bias[7]",
        "inp [2, 3, 5] input_projection_wrapper/kernel[4, 6] input_projection_wrapper/bias[6] "
        "input_projection_wrapper/gru_cell/gates/kernel[11, 10] "
        "input_projection_wrapper/gru_cell/gates/bias[10] "
        "input_projection_wrapper/gru_cell/candidate/kernel[11, 5] "
        "input_projection_wrapper/gru_cell/candidate/bias[5]",
        "emb [2, 3, 5] embedding_wrapper/embedding[10, 3] "
        "embedding_wrapper/gru_cell/gates/kernel[8, 10] embedding_wrapper/gru_cell/gates/bias[10] "
        "embedding_wrapper/gru_cell/candidate/kernel[8, 5] "
        "embedding_wrapper/gru_cell/candidate/bias[5]",
        "hwy [2, 3, 4] gru_cell/gates/kernel[8, 8] gru_cell/gates/bias[8] "
        "gru_cell/candidate/kernel[8, 4] gru_cell/candidate/bias[4] carry_w[4, 4] carry_b[4]",
        "att [2, 3, 4] attention_cell_wrapper/kernel[8, 4] attention_cell_wrapper/bias[4] "
        "attention_cell_wrapper/gru_cell/gates/kernel[8, 8] "
        "attention_cell_wrapper/gru_cell/gates/bias[8] "
        "attention_cell_wrapper/gru_cell/candidate/kernel[8, 4] "
        "attention_cell_wrapper/gru_cell/candidate/bias[4] "
        "attention_cell_wrapper/attention/attn_w[1, 1, 4, 4] "
        "attention_cell_wrapper/attention/attn_v[4] attention_cell_wrapper/attention/kernel[4, 4] "
        "attention_cell_wrapper/attention/bias[4] "
        "attention_cell_wrapper/attn_output_projection/kernel[8, 4] "
        "attention_cell_wrapper/attn_output_projection/bias[4]",
        "ln [2, 3, 3] layer_norm_basic_lstm_cell/kernel[7, 12] layer_norm_basic_lstm_cell/bias[12]",
        # TF 1.15 names even a single shard: W_0, W_P_0.
        "cifg [2, 3, 2] coupled_input_forget_gate_lstm_cell/W_0[6, 9] "
        "coupled_input_forget_gate_lstm_cell/B[9] coupled_input_forget_gate_lstm_cell/W_F_diag[3] "
        "coupled_input_forget_gate_lstm_cell/W_O_diag[3] "
        "coupled_input_forget_gate_lstm_cell/W_P_0[3, 2]",
        "nas [2, 3, 3] nas_cell/recurrent_kernel[3, 24] nas_cell/kernel[4, 24] nas_cell/bias[24]",
        "ugrnn [2, 3, 3] ugrnn_cell/kernel[7, 6] ugrnn_cell/bias[6]",
        "indy [2, 3, 3] indy_lstm_cell/kernel_w[4, 12] indy_lstm_cell/kernel_u[1, 12] "
        "indy_lstm_cell/bias[12]",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_layer_norm_lstm_cell_matches_tf115(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1(
        with_ref("""
        import numpy as np
        import tensorflow as tf
        rng = np.random.RandomState(5)
        x, c0, h0 = (rng.randn(2, 3).astype(np.float32) for _ in range(3))
        cell = tf.contrib.rnn.LayerNormBasicLSTMCell(3, forget_bias=0.5, norm_gain=1.5,
                                                     norm_shift=0.1)
        h, (c, _) = cell(tf.constant(x), tf.nn.rnn_cell.LSTMStateTuple(c0, h0))
        kernel = [v for v in tf.global_variables() if v.op.name.endswith("/kernel")][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, got_c, got_h = sess.run([kernel, c, h])

        def norm(v):
            mean, var = v.mean(-1, keepdims=True), v.var(-1, keepdims=True)
            return (v - mean) / np.sqrt(var + 1e-12) * 1.5 + 0.1

        i, j, f, o = np.split(np.concatenate([x, h0], 1) @ w, 4, axis=1)
        want_c = norm(c0 * sigmoid(norm(f) + 0.5) + sigmoid(norm(i)) * np.tanh(norm(j)))
        want_h = np.tanh(want_c) * sigmoid(norm(o))
        print(kernel.op.name, len(tf.global_variables()))
        print(np.allclose(got_c, want_c, atol=1e-5), np.allclose(got_h, want_h, atol=1e-5))
        """)
    )
    assert out.splitlines() == ["layer_norm_basic_lstm_cell/kernel 11", "True True"]


@pytest.mark.tf
@pytest.mark.slow
def test_stack_bidirectional_scopes_and_errors(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        rnn = tf.contrib.rnn
        x = tf.zeros([2, 3, 4])
        cells = lambda: [rnn.LSTMBlockCell(5), rnn.LSTMBlockCell(6)]
        out, fw, bw = rnn.stack_bidirectional_dynamic_rnn(cells(), cells(), x, dtype=tf.float32)
        print(out.shape.as_list(), len(fw), len(bw))
        steps, sfw, sbw = rnn.stack_bidirectional_rnn(
            cells(), cells(), tf.unstack(x, axis=1), dtype=tf.float32, scope="static")
        print(len(steps), steps[0].shape.as_list())
        print(sorted({v.op.name.rsplit("/", 1)[0] for v in tf.trainable_variables()}))
        for bad in ([rnn.LSTMBlockCell(5)], []):
            try:
                rnn.stack_bidirectional_dynamic_rnn(cells(), bad, x, dtype=tf.float32)
            except ValueError as err:
                print(err)
    """)
    assert out.splitlines() == [
        "[2, 3, 12] 2 2",
        "3 [2, 12]",
        "['stack_bidirectional_rnn/cell_0/bidirectional_rnn/bw/lstm_cell', "
        "'stack_bidirectional_rnn/cell_0/bidirectional_rnn/fw/lstm_cell', "
        "'stack_bidirectional_rnn/cell_1/bidirectional_rnn/bw/lstm_cell', "
        "'stack_bidirectional_rnn/cell_1/bidirectional_rnn/fw/lstm_cell', "
        "'static/cell_0/bw/lstm_cell', 'static/cell_0/fw/lstm_cell', "
        "'static/cell_1/bw/lstm_cell', 'static/cell_1/fw/lstm_cell']",
        "Forward and Backward cells must have the same depth.",
        "Must specify at least one bw cell for BidirectionalRNN.",
    ]


@pytest.mark.tf
@pytest.mark.slow
def test_missing_rnn_name_raises_with_advice(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import tensorflow as tf
        for name in ("GridLSTMCell", "NoSuchCell"):
            try:
                getattr(tf.contrib.rnn, name)
            except AttributeError as err:
                print(type(err).__name__, str(err).split(" (")[0])
        print(tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell)
    """)
    assert out.splitlines() == [
        "ContribAttributeError tf.contrib.rnn.GridLSTMCell is not provided by tf2npu run",
        "ContribAttributeError tf.contrib.rnn.NoSuchCell is not provided by tf2npu run",
        "True",
    ]
