"""Masked-LM plus next-sentence pretraining of the tiny encoder with a TPUEstimator on the CPU.

tf2npu's own end-to-end test script, written in the style of TF 1.x research pretraining scripts
(flags, tf.contrib.tpu estimator, TFRecord input with tf.contrib.data, init_from_checkpoint).
Without --input_file it writes a small synthetic TFRecord file into the output directory, so it
runs anywhere. It ends by printing ``final_loss=<float>`` (the evaluation loss).
"""

import os

import modeling
import numpy as np
import optimization
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS

flags.DEFINE_string("config_file", None, "JSON EncoderConfig; default: the tiny flags below.")
flags.DEFINE_string("input_file", None, "TFRecord files (comma-separated glob patterns).")
flags.DEFINE_string("output_dir", None, "Checkpoints and synthetic data go here.")
flags.DEFINE_string("init_checkpoint", None, "Checkpoint to warm-start the encoder from.")
flags.DEFINE_integer("vocab_size", 100, "Vocabulary size.")
flags.DEFINE_integer("hidden_size", 64, "Encoder width.")
flags.DEFINE_integer("num_hidden_layers", 2, "Encoder depth.")
flags.DEFINE_integer("num_attention_heads", 2, "Attention heads.")
flags.DEFINE_integer("max_seq_length", 32, "Tokens per example.")
flags.DEFINE_integer("max_predictions_per_seq", 5, "Masked positions per example.")
flags.DEFINE_integer("train_batch_size", 8, "Training batch size.")
flags.DEFINE_integer("eval_batch_size", 8, "Evaluation batch size.")
flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate.")
flags.DEFINE_integer("num_train_steps", 20, "Training steps.")
flags.DEFINE_integer("num_warmup_steps", 2, "Warmup steps.")
flags.DEFINE_integer("max_eval_steps", 2, "Evaluation batches.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint interval.")
flags.DEFINE_integer("iterations_per_loop", 1, "Steps per TPU loop.")
flags.DEFINE_integer("synthetic_examples", 64, "Examples written when --input_file is absent.")
flags.DEFINE_bool("use_tpu", False, "Run on a TPU.")
flags.DEFINE_string("tpu_name", None, "TPU to use when --use_tpu.")
flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.")
flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.")
flags.DEFINE_string("master", None, "TensorFlow master URL.")
flags.DEFINE_integer("num_tpu_cores", 8, "TPU cores.")

FEATURES = ("ids", "mask", "segments", "mlm_positions", "mlm_targets", "mlm_weights",
            "next_sentence")


def write_synthetic_records(path, count, seq, predictions, vocab, seed=12345):
    rng = np.random.RandomState(seed)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    with tf.python_io.TFRecordWriter(path) as writer:
        for _ in range(count):
            length = rng.randint(seq // 2, seq + 1)
            ids = modeling.random_ids(rng, [seq], vocab)
            ids[length:] = 0
            mask = [1] * length + [0] * (seq - length)
            segments = [0] * (length // 2) + [1] * (seq - length // 2)
            positions = sorted(rng.choice(length, predictions, replace=False))
            features = {
                "ids": ints(ids), "mask": ints(mask), "segments": ints(segments),
                "mlm_positions": ints(positions),
                "mlm_targets": ints(ids[positions]),
                "mlm_weights": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0] * predictions)),
                "next_sentence": ints([rng.randint(0, 2)]),
            }
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())


def gather_positions(sequence, positions):
    """Rows of [batch, seq, width] at [batch, k] positions, as [batch * k, width]."""
    batch, seq, width = modeling.static_or_dynamic_shape(sequence)
    offsets = tf.reshape(tf.range(0, batch, dtype=tf.int32) * seq, [-1, 1])
    flat = tf.reshape(positions + offsets, [-1])
    return tf.gather(tf.reshape(sequence, [batch * seq, width]), flat)


def masked_lm_loss(config, sequence, table, positions, targets, weights):
    with tf.variable_scope("mlm_head"):
        x = gather_positions(sequence, positions)
        x = tf.layers.dense(x, config.width, activation=modeling.activation_by_name(config.act),
                            kernel_initializer=modeling.init_for(config.init_stddev))
        x = modeling.norm(x)
        bias = tf.get_variable("vocab_bias", [config.vocab_size],
                               initializer=tf.zeros_initializer())
        log_probs = tf.nn.log_softmax(tf.nn.bias_add(tf.matmul(x, table, transpose_b=True), bias))
        one_hot = tf.one_hot(tf.reshape(targets, [-1]), depth=config.vocab_size, dtype=tf.float32)
        per_example = -tf.reduce_sum(log_probs * one_hot, axis=[-1])
        weights = tf.reshape(weights, [-1])
        loss = tf.reduce_sum(weights * per_example) / (tf.reduce_sum(weights) + 1e-5)
    return loss, per_example, log_probs


def next_sentence_loss(config, pooled, labels):
    with tf.variable_scope("nsp_head"):
        kernel = tf.get_variable("kernel", [2, config.width],
                                 initializer=modeling.init_for(config.init_stddev))
        bias = tf.get_variable("bias", [2], initializer=tf.zeros_initializer())
        log_probs = tf.nn.log_softmax(tf.nn.bias_add(tf.matmul(pooled, kernel, transpose_b=True),
                                                     bias))
        one_hot = tf.one_hot(tf.reshape(labels, [-1]), depth=2, dtype=tf.float32)
        per_example = -tf.reduce_sum(one_hot * log_probs, axis=-1)
    return tf.reduce_mean(per_example), per_example, log_probs


def build_model_fn(config, init_checkpoint, base_rate, total_steps, warmup_steps, use_tpu):
    def model_fn(features, labels, mode, params):
        tf.logging.info("features: %s", ", ".join(sorted(features)))
        training = mode == tf.estimator.ModeKeys.TRAIN
        encoder = modeling.Encoder(config, training, features["ids"], features["mask"],
                                   features["segments"], one_hot=use_tpu)
        mlm, mlm_per_example, mlm_log_probs = masked_lm_loss(
            config, encoder.sequence, encoder.token_table, features["mlm_positions"],
            features["mlm_targets"], features["mlm_weights"])
        nsp, nsp_per_example, nsp_log_probs = next_sentence_loss(
            config, encoder.pooled, features["next_sentence"])
        total = mlm + nsp

        scaffold_fn = None
        if init_checkpoint:
            trainable = tf.trainable_variables()
            assignment, _ = modeling.checkpoint_assignment(trainable, init_checkpoint)
            if use_tpu:
                def scaffold_fn():
                    tf.train.init_from_checkpoint(init_checkpoint, assignment)
                    return tf.train.Scaffold()
            else:
                tf.train.init_from_checkpoint(init_checkpoint, assignment)
            print(f"warm_started={len(assignment)}/{len(trainable)}")

        if training:
            train_op = optimization.make_train_op(total, base_rate, total_steps, warmup_steps,
                                                  use_tpu)
            return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=total, train_op=train_op,
                                                   scaffold_fn=scaffold_fn)
        if mode == tf.estimator.ModeKeys.EVAL:
            def metric_fn(mlm_per_example, mlm_log_probs, targets, weights, nsp_per_example,
                          nsp_log_probs, nsp_labels):
                weights = tf.reshape(weights, [-1])
                # shape[-1] is a v1 Dimension here, which tf.reshape converts.
                mlm_log_probs = tf.reshape(mlm_log_probs, [-1, mlm_log_probs.shape[-1]])
                mlm_guess = tf.argmax(mlm_log_probs, axis=-1, output_type=tf.int32)
                nsp_guess = tf.argmax(nsp_log_probs, axis=-1, output_type=tf.int32)
                return {
                    "mlm_accuracy": tf.metrics.accuracy(tf.reshape(targets, [-1]), mlm_guess,
                                                        weights=weights),
                    "mlm_loss": tf.metrics.mean(mlm_per_example, weights=weights),
                    "nsp_accuracy": tf.metrics.accuracy(tf.reshape(nsp_labels, [-1]),
                                                        nsp_guess),
                    "nsp_loss": tf.metrics.mean(nsp_per_example),
                }

            metrics = (metric_fn, [mlm_per_example, mlm_log_probs, features["mlm_targets"],
                                   features["mlm_weights"], nsp_per_example, nsp_log_probs,
                                   features["next_sentence"]])
            return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=total, eval_metrics=metrics,
                                                   scaffold_fn=scaffold_fn)
        raise ValueError(f"only TRAIN and EVAL are supported, got mode {mode}")

    return model_fn


def build_input_fn(patterns, seq, predictions, training, workers=4):
    spec = {
        "ids": tf.FixedLenFeature([seq], tf.int64),
        "mask": tf.FixedLenFeature([seq], tf.int64),
        "segments": tf.FixedLenFeature([seq], tf.int64),
        "mlm_positions": tf.FixedLenFeature([predictions], tf.int64),
        "mlm_targets": tf.FixedLenFeature([predictions], tf.int64),
        "mlm_weights": tf.FixedLenFeature([predictions], tf.float32),
        "next_sentence": tf.FixedLenFeature([1], tf.int64),
    }

    def decode(record):
        example = tf.parse_single_example(record, spec)
        # tf.Example holds int64; int32 is what the model's index arithmetic wants.
        return {k: tf.to_int32(v) if v.dtype == tf.int64 else v for k, v in example.items()}

    def input_fn(params):
        files = []
        for pattern in patterns.split(","):
            files.extend(tf.gfile.Glob(pattern))
        if training:
            d = tf.data.Dataset.from_tensor_slices(tf.constant(files)).repeat()
            d = d.shuffle(buffer_size=len(files))
            d = d.apply(tf.contrib.data.parallel_interleave(
                tf.data.TFRecordDataset, sloppy=training, cycle_length=min(workers, len(files))))
            d = d.shuffle(buffer_size=100)
        else:
            d = tf.data.TFRecordDataset(files).repeat()
        return d.apply(tf.contrib.data.map_and_batch(
            decode, batch_size=params["batch_size"], num_parallel_batches=workers,
            drop_remainder=True))

    return input_fn


def tiny_config():
    if FLAGS.config_file:
        return modeling.EncoderConfig.from_json_file(FLAGS.config_file)
    return modeling.EncoderConfig(
        vocab_size=FLAGS.vocab_size, width=FLAGS.hidden_size, depth=FLAGS.num_hidden_layers,
        heads=FLAGS.num_attention_heads, ffn_width=2 * FLAGS.hidden_size,
        max_positions=max(64, FLAGS.max_seq_length))


def main(_):
    tf.logging.set_verbosity(tf.logging.INFO)
    config = tiny_config()
    output_dir = FLAGS.output_dir
    tf.gfile.MakeDirs(output_dir)
    input_file = FLAGS.input_file
    if not input_file:
        input_file = os.path.join(output_dir, "synthetic.tfrecord")
        write_synthetic_records(input_file, FLAGS.synthetic_examples, FLAGS.max_seq_length,
                                FLAGS.max_predictions_per_seq, config.vocab_size)

    resolver = None
    if FLAGS.use_tpu and FLAGS.tpu_name:
        resolver = tf.contrib.cluster_resolver.TPUClusterResolver(
            FLAGS.tpu_name, zone=FLAGS.tpu_zone, project=FLAGS.gcp_project)
    per_host = tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2
    run_config = tf.contrib.tpu.RunConfig(
        cluster=resolver,
        master=FLAGS.master,
        model_dir=output_dir,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        tpu_config=tf.contrib.tpu.TPUConfig(
            iterations_per_loop=FLAGS.iterations_per_loop,
            num_shards=FLAGS.num_tpu_cores,
            per_host_input_for_training=per_host))
    model_fn = build_model_fn(config, FLAGS.init_checkpoint, FLAGS.learning_rate,
                              FLAGS.num_train_steps, FLAGS.num_warmup_steps, FLAGS.use_tpu)
    estimator = tf.contrib.tpu.TPUEstimator(
        use_tpu=FLAGS.use_tpu,
        model_fn=model_fn,
        config=run_config,
        train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size)

    estimator.train(input_fn=build_input_fn(input_file, FLAGS.max_seq_length,
                                            FLAGS.max_predictions_per_seq, training=True),
                    max_steps=FLAGS.num_train_steps)
    result = estimator.evaluate(
        input_fn=build_input_fn(input_file, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
                                training=False),
        steps=FLAGS.max_eval_steps)
    with tf.gfile.GFile(os.path.join(output_dir, "eval_results.txt"), "w") as writer:
        for key in sorted(result):
            tf.logging.info("  %s = %s", key, result[key])
            writer.write(f"{key} = {result[key]}\n")
    print(f"global_step={result['global_step']}")
    print(f"final_loss={float(result['loss'])!r}")


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    tf.app.run()
