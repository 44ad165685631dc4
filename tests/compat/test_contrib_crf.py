"""tf.contrib.crf under tf2npu run: CRF scores and decoding against brute-force enumeration."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from tf2npu.compat.contrib.crf import viterbi_decode

TRANSITIONS = np.array([[0.5, -1.0, 0.2], [0.3, 0.1, -0.4], [-0.2, 0.6, 0.0]], np.float32)
SCORES = np.array([[1.0, 0.0, 0.5], [0.2, 0.9, -0.3], [0.0, -0.5, 1.2]], np.float32)


def path_score(scores: np.ndarray, path: tuple[int, ...]) -> float:
    unary = sum(scores[t, tag] for t, tag in enumerate(path))
    return float(unary + sum(TRANSITIONS[a, b] for a, b in itertools.pairwise(path)))


def test_viterbi_decode_finds_the_best_path() -> None:
    paths = list(itertools.product(range(3), repeat=3))
    best = max(paths, key=lambda p: path_score(SCORES, p))
    tags, score = viterbi_decode(SCORES, TRANSITIONS)
    assert tags == list(best)
    assert score == pytest.approx(path_score(SCORES, best), abs=1e-5)


@pytest.mark.tf
@pytest.mark.slow
def test_crf_graph_functions_match_enumeration(run_tf1: Callable[[str], str]) -> None:
    out = run_tf1("""
        import itertools
        import numpy as np
        import tensorflow as tf
        trans = np.array([[0.5, -1.0, 0.2], [0.3, 0.1, -0.4], [-0.2, 0.6, 0.0]], np.float32)
        rng = np.random.RandomState(0)
        x = rng.randn(3, 4, 3).astype(np.float32)
        lengths = np.array([4, 2, 0], np.int64)
        tags = np.array([[0, 2, 1, 1], [1, 0, 2, 2], [2, 2, 2, 2]], np.int32)

        def score(b, path):
            s = sum(x[b, t, k] for t, k in enumerate(path))
            return s + sum(trans[a, c] for a, c in zip(path, path[1:]))

        want_ll, want_tags, want_best = [], [], []
        for b, n in enumerate(lengths):
            paths = list(itertools.product(range(3), repeat=int(n)))
            norm = np.log(sum(np.exp(score(b, p)) for p in paths)) if n else 0.0
            want_ll.append((score(b, tuple(tags[b, :n])) if n else 0.0) - norm)
            best = max(paths, key=lambda p: score(b, p))
            want_tags.append(list(best) + [0] * (4 - len(best)))
            want_best.append(score(b, best))
        want_tags[2][0] = int(np.argmax(x[2, 0]))  # TF 1.15: length 0 still decodes step 0
        want_best[2] = float(np.max(x[2, 0]))

        ll, t_var = tf.contrib.crf.crf_log_likelihood(tf.constant(x), tf.constant(tags),
                                                      tf.constant(lengths))
        decoded, best = tf.contrib.crf.crf_decode(tf.constant(x), t_var, tf.constant(lengths))
        with tf.Session() as sess:
            sess.run(t_var.assign(trans))
            got_ll, got_tags, got_best = sess.run([ll, decoded, best])
        print(t_var.op.name, t_var.shape.as_list())
        print(np.allclose(got_ll, want_ll, atol=1e-4), got_tags.tolist() == want_tags)
        print(np.allclose(got_best, want_best, atol=1e-4))
    """)
    assert out.splitlines() == ["transitions [3, 3]", "True True", "True"]
