"""tpu_estimator: TPUEstimator / tpu.RunConfig / TPUEstimatorSpec on the use_tpu=False path."""

import pytest

from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import MigrateOptions
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

H = "from npu_bridge.npu_init import *\n"
TF = "import tensorflow as tf\n"
RULE = "tpu_estimator"


def findings(before: str, options: MigrateOptions | None = None) -> list[tuple[int, Severity, str]]:
    migrated = migrate_text(before, options)
    return [(f.line, f.severity, f.message) for f in rule_findings(migrated, RULE)]


def messages(before: str, severity: Severity, options: MigrateOptions | None = None) -> list[str]:
    return [m for _, s, m in findings(before, options) if s is severity]


# -- BERT (google-research/bert run_classifier.py, run_pretraining.py, run_squad.py) -------------
BERT_MAIN = """\
import tensorflow as tf


def main(_):
  tpu_cluster_resolver = None
  if FLAGS.use_tpu and FLAGS.tpu_name:
    tpu_cluster_resolver = tf.contrib.cluster_resolver.TPUClusterResolver(
        FLAGS.tpu_name, zone=FLAGS.tpu_zone, project=FLAGS.gcp_project)

  is_per_host = tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2
  run_config = tf.contrib.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      master=FLAGS.master,
      model_dir=FLAGS.output_dir,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      tpu_config=tf.contrib.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop,
          num_shards=FLAGS.num_tpu_cores,
          per_host_input_for_training=is_per_host))

  # If TPU is not available, this will fall back to normal Estimator on CPU
  # or GPU.
  estimator = tf.contrib.tpu.TPUEstimator(
      use_tpu=FLAGS.use_tpu,
      model_fn=model_fn,
      config=run_config,
      train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size,
      predict_batch_size=FLAGS.predict_batch_size)
"""

BERT_MAIN_AFTER = """\
from npu_bridge.npu_init import *
import tensorflow as tf


def main(_):

  is_per_host = tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2
  run_config = NPURunConfig(
      model_dir=FLAGS.output_dir,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps)

  # If TPU is not available, this will fall back to normal Estimator on CPU
  # or GPU.
  estimator = NPUEstimator(
      model_fn=model_fn,
      config=run_config,
      params=dict(batch_size=FLAGS.train_batch_size, use_tpu=False))
"""

BERT_MODEL_FN = """\
import tensorflow as tf


def model_fn_builder(init_checkpoint, use_tpu):
  def model_fn(features, labels, mode, params):  # pylint: disable=unused-argument
    scaffold_fn = None
    if init_checkpoint:
      if use_tpu:

        def tpu_scaffold():
          tf.train.init_from_checkpoint(init_checkpoint, assignment_map)
          return tf.train.Scaffold()

        scaffold_fn = tpu_scaffold
      else:
        tf.train.init_from_checkpoint(init_checkpoint, assignment_map)

    output_spec = None
    if mode == tf.estimator.ModeKeys.TRAIN:
      output_spec = tf.contrib.tpu.TPUEstimatorSpec(
          mode=mode,
          loss=total_loss,
          train_op=train_op,
          scaffold_fn=scaffold_fn)
    elif mode == tf.estimator.ModeKeys.EVAL:

      def metric_fn(per_example_loss, label_ids, logits, is_real_example):
        return {"eval_loss": tf.metrics.mean(values=per_example_loss)}

      eval_metrics = (metric_fn,
                      [per_example_loss, label_ids, logits, is_real_example])
      output_spec = tf.contrib.tpu.TPUEstimatorSpec(
          mode=mode,
          loss=total_loss,
          eval_metrics=eval_metrics,
          scaffold_fn=scaffold_fn)
    else:
      output_spec = tf.contrib.tpu.TPUEstimatorSpec(
          mode=mode,
          predictions={"probabilities": probabilities},
          scaffold_fn=scaffold_fn)
    return output_spec

  return model_fn
"""

BERT_MODEL_FN_AFTER = H + BERT_MODEL_FN.replace(
    "tf.contrib.tpu.TPUEstimatorSpec(", "NPUEstimatorSpec("
).replace("scaffold_fn=scaffold_fn)", "scaffold=scaffold_fn() if scaffold_fn else None)").replace(
    "eval_metrics=eval_metrics,", "eval_metric_ops=eval_metrics[0](*eval_metrics[1]),"
)


def test_bert_main():
    assert_migrates(BERT_MAIN, BERT_MAIN_AFTER)


def test_bert_main_findings():
    got = findings(BERT_MAIN)
    assert [(line, sev) for line, sev, _ in got] == [
        (7, Severity.INFO),  # TPUClusterResolver removed: only passed as cluster=
        (11, Severity.INFO),  # TPU-only RunConfig arguments
        (17, Severity.INFO),  # iterations_per_loop not carried over
        (23, Severity.INFO),  # TPU-only TPUEstimator arguments
        (24, Severity.WARNING),  # use_tpu=FLAGS.use_tpu
        (28, Severity.WARNING),  # eval_batch_size differs
        (29, Severity.WARNING),  # predict_batch_size differs
    ]
    text = " ".join(m for _, _, m in got)
    assert "TPU-only argument(s) removed: cluster, master, tpu_config" in text
    assert (
        "TPUClusterResolver call removed: tpu_cluster_resolver was only passed as cluster=" in text
    )
    assert "TPU-only argument(s) removed: use_tpu, train_batch_size, eval_batch_size" in text
    assert "iterations_per_loop=FLAGS.iterations_per_loop) not carried over" in text
    assert "evaluate() now gets params['batch_size'] = FLAGS.train_batch_size" in text


def test_bert_iterations_per_loop_fix_names_the_keyword():
    migrated = migrate_text(BERT_MAIN)
    (finding,) = [f for f in rule_findings(migrated, RULE) if "iterations_per_loop" in f.message]
    assert "add iterations_per_loop=FLAGS.iterations_per_loop to this NPURunConfig" in finding.fix


def test_bert_iterations_per_loop_with_mix_compile_stays_one():
    migrated = migrate_text(BERT_MAIN, MigrateOptions(mix_compile=True))
    (finding,) = [f for f in rule_findings(migrated, RULE) if "iterations_per_loop" in f.message]
    assert "mix_compile_mode=True requires iterations_per_loop=1" in finding.fix
    assert "iterations_per_loop" not in migrated.output.decode().split("NPURunConfig(")[1]


def test_bert_main_with_npu_options():
    after = BERT_MAIN_AFTER.replace(
        "save_checkpoints_steps=FLAGS.save_checkpoints_steps)",
        "save_checkpoints_steps=FLAGS.save_checkpoints_steps,\n"
        "      precision_mode='allow_mix_precision', mix_compile_mode=True)",
    )
    options = MigrateOptions(precision_mode="allow_mix_precision", mix_compile=True)
    assert_migrates(BERT_MAIN, after, options)


def test_bert_model_fn():
    assert_migrates(BERT_MODEL_FN, BERT_MODEL_FN_AFTER)
    assert findings(BERT_MODEL_FN) == []


def test_bert_optimization_cross_shard_optimizer_is_reported():
    before = (
        TF + "def create_optimizer(loss, use_tpu):\n"
        "  optimizer = AdamWeightDecayOptimizer(learning_rate=0.1)\n"
        "  if use_tpu:\n"
        "    optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)\n"
        "  return optimizer\n"
    )
    assert_migrates(before, before)
    assert findings(before) == [
        (5, Severity.INFO, "CrossShardOptimizer left as is: it needs a TPU (it only runs when "
         "use_tpu is true)")
    ]  # fmt: skip


# -- ALBERT / other spellings --------------------------------------------------------------------
def test_albert_contrib_tpu_alias():
    before = (
        "import tensorflow.compat.v1 as tf\n"
        "from tensorflow.contrib import tpu as contrib_tpu\n"
        "run_config = contrib_tpu.RunConfig(\n"
        "    cluster=tpu_cluster_resolver,\n"
        "    master=FLAGS.master,\n"
        "    model_dir=FLAGS.output_dir,\n"
        "    save_checkpoints_steps=int(FLAGS.save_checkpoints_steps),\n"
        "    keep_checkpoint_max=0,\n"
        "    tpu_config=contrib_tpu.TPUConfig(\n"
        "        iterations_per_loop=iterations_per_loop,\n"
        "        num_shards=FLAGS.num_tpu_cores,\n"
        "        per_host_input_for_training=is_per_host))\n"
        "estimator = contrib_tpu.TPUEstimator(\n"
        "    use_tpu=FLAGS.use_tpu,\n"
        "    model_fn=model_fn,\n"
        "    config=run_config,\n"
        "    train_batch_size=FLAGS.train_batch_size,\n"
        "    eval_batch_size=FLAGS.eval_batch_size,\n"
        "    predict_batch_size=FLAGS.predict_batch_size)\n"
    )
    after = (
        H + "import tensorflow.compat.v1 as tf\n"
        "from tensorflow.contrib import tpu as contrib_tpu\n"
        "run_config = NPURunConfig(\n"
        "    model_dir=FLAGS.output_dir,\n"
        "    save_checkpoints_steps=int(FLAGS.save_checkpoints_steps),\n"
        "    keep_checkpoint_max=0)\n"
        "estimator = NPUEstimator(\n"
        "    model_fn=model_fn,\n"
        "    config=run_config,\n"
        "    params=dict(batch_size=FLAGS.train_batch_size, use_tpu=False))\n"
    )
    assert_migrates(before, after)


@pytest.mark.parametrize(
    "prefix",
    ["tf.estimator.tpu", "tf.compat.v1.estimator.tpu", "tf.contrib.tpu"],
)
def test_spellings(prefix):
    before = (
        TF + f"c = {prefix}.RunConfig(model_dir='/m', save_checkpoints_steps=10)\n"
        f"e = {prefix}.TPUEstimator(model_fn, config=c, use_tpu=False, train_batch_size=8)\n"
        f"s = {prefix}.TPUEstimatorSpec(mode, loss=l, scaffold_fn=None)\n"
    )
    after = (
        H + TF + "c = NPURunConfig(model_dir='/m', save_checkpoints_steps=10)\n"
        "e = NPUEstimator(model_fn, config=c, params=dict(batch_size=8, use_tpu=False))\n"
        "s = NPUEstimatorSpec(mode, loss=l, scaffold=None)\n"
    )
    assert_migrates(before, after)


def test_implementation_module_spellings():
    before = (
        "from tensorflow.python.tpu import tpu_config, tpu_estimator\n"
        "c = tpu_config.RunConfig(model_dir='/m', save_checkpoints_steps=10)\n"
        "e = tpu_estimator.TPUEstimator(model_fn, config=c, use_tpu=False)\n"
    )
    after = (
        H + "from tensorflow.python.tpu import tpu_config, tpu_estimator\n"
        "c = NPURunConfig(model_dir='/m', save_checkpoints_steps=10)\n"
        "e = NPUEstimator(model_fn, config=c, params=dict(use_tpu=False))\n"
    )
    assert_migrates(before, after)


# -- tpu.RunConfig -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "c = tf.contrib.tpu.RunConfig(tpu_cfg, model_dir='/m', save_checkpoints_secs=60)\n",
            "c = NPURunConfig(model_dir='/m', save_checkpoints_secs=60)\n",
        ),
        (
            "c = tf.contrib.tpu.RunConfig(master='', model_dir=d, save_checkpoints_steps=5,\n"
            "                             session_config=cfg, keep_checkpoint_max=3)\n",
            "c = NPURunConfig(model_dir=d, save_checkpoints_steps=5,\n"
            "                             session_config=cfg, keep_checkpoint_max=3)\n",
        ),
        (
            "c = tf.contrib.tpu.RunConfig(model_dir=d, save_checkpoints_steps=5, "
            "train_distribute=strategy, evaluation_master=m, cluster=r)\n",
            "c = NPURunConfig(model_dir=d, save_checkpoints_steps=5, train_distribute=strategy)\n",
        ),
        (
            "c = tf.contrib.tpu.RunConfig(tpu_config=tf.contrib.tpu.TPUConfig(10))\n",
            "c = NPURunConfig()\n",
        ),
    ],
)
def test_run_config(before, after):
    assert_migrates(TF + before, H + TF + after)


def test_run_config_without_checkpoint_setting_is_reported():
    got = messages(TF + "c = tf.contrib.tpu.RunConfig(model_dir='/m')\n", Severity.INFO)
    assert got == [
        "NPURunConfig saves a checkpoint every 100 steps when neither save_checkpoints_steps "
        "nor save_checkpoints_secs is set (RunConfig: every 600 s)"
    ]


def test_run_config_argument_npu_run_config_lacks_is_removed():
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(model_dir='/m', save_checkpoints_steps=1, protocol='grpc')\n"
    )
    assert_migrates(before, H + TF + "c = NPURunConfig(model_dir='/m', save_checkpoints_steps=1)\n")
    assert messages(before, Severity.WARNING) == [
        "RunConfig argument protocol= removed: NPURunConfig does not take it"
    ]


def test_run_config_tpu_config_variable():
    before = (
        TF + "tpu_config = tf.contrib.tpu.TPUConfig(iterations_per_loop=100, num_shards=8)\n"
        "c = tf.contrib.tpu.RunConfig(model_dir='/m', save_checkpoints_steps=100,\n"
        "                             tpu_config=tpu_config)\n"
    )
    after = (
        H + TF + "tpu_config = tf.contrib.tpu.TPUConfig(iterations_per_loop=100, num_shards=8)\n"
        "c = NPURunConfig(model_dir='/m', save_checkpoints_steps=100)\n"
    )
    assert_migrates(before, after)
    got = findings(before)
    assert (2, Severity.INFO, "TPUConfig(iterations_per_loop=100) not carried over: TPUEstimator "
            "ignores it when use_tpu is False, and on the NPU it would run that many steps per "
            "session.run") in got  # fmt: skip


def test_run_config_iterations_per_loop_one_is_not_reported():
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1, "
        "tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=1))\n"
    )
    assert not [m for _, _, m in findings(before) if "iterations_per_loop" in m]


def test_run_config_precision_mode_replaces_an_existing_value():
    before = TF + "c = tf.contrib.tpu.RunConfig(precision_mode='force_fp16', master='')\n"
    after = H + TF + "c = NPURunConfig(precision_mode='force_fp32')\n"
    assert_migrates(before, after, MigrateOptions(precision_mode="force_fp32"))


def test_run_config_npu_options_appended_when_nothing_is_removed():
    before = TF + "c = tf.contrib.tpu.RunConfig(model_dir='/m', save_checkpoints_steps=1)\n"
    after = (
        H
        + TF
        + ("c = NPURunConfig(model_dir='/m', save_checkpoints_steps=1, mix_compile_mode=True)\n")
    )
    assert_migrates(before, after, MigrateOptions(mix_compile=True))


@pytest.mark.parametrize(
    "call", ["tf.contrib.tpu.RunConfig(**kwargs)", "tf.contrib.tpu.RunConfig(*args)"]
)
def test_run_config_with_unpacking_is_left_and_reported(call):
    before = TF + f"c = {call}\n"
    assert_migrates(before, before)
    (warning,) = messages(before, Severity.WARNING)
    assert warning.startswith("tpu.RunConfig(*args/**kwargs) not rewritten")


# -- TPUEstimator --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (  # the leading removed arguments of a one-line call
            "e = tf.contrib.tpu.TPUEstimator(use_tpu=False, train_batch_size=8, model_fn=f, "
            "config=c)\n",
            "e = NPUEstimator(model_fn=f, config=c, params=dict(batch_size=8, use_tpu=False))\n",
        ),
        (  # the user's params are kept and merged
            "e = tf.contrib.tpu.TPUEstimator(model_fn=f, config=c, use_tpu=False,\n"
            "                                params={'layers': 2}, train_batch_size=32)\n",
            "e = NPUEstimator(model_fn=f, config=c,\n"
            "                                params=dict({'layers': 2}, batch_size=32, "
            "use_tpu=False))\n",
        ),
        (
            "e = tf.contrib.tpu.TPUEstimator(f, config=c, params=None, use_tpu=False)\n",
            "e = NPUEstimator(f, config=c, params=dict(use_tpu=False))\n",
        ),
        (  # positional arguments: the TPU-only ones go, warm_start_from gets its name
            "e = tf.contrib.tpu.TPUEstimator(f, '/m', c, None, False, 32, 8, 8, None, True, "
            "True, True, ws)\n",
            "e = NPUEstimator(f, '/m', c, dict(batch_size=32, use_tpu=False), "
            "warm_start_from=ws)\n",
        ),
        (
            "e = tf.contrib.tpu.TPUEstimator(model_fn=f, config=c, use_tpu=False, "
            "warm_start_from='/ckpt', eval_on_tpu=False, export_to_tpu=False)\n",
            "e = NPUEstimator(model_fn=f, config=c, warm_start_from='/ckpt', "
            "params=dict(use_tpu=False))\n",
        ),
        (  # TPUEstimator requires a config; NPUEstimator gets an NPURunConfig
            "e = tf.contrib.tpu.TPUEstimator(model_fn=f, use_tpu=False)\n",
            "e = NPUEstimator(model_fn=f, params=dict(use_tpu=False), config=NPURunConfig())\n",
        ),
        (
            "e = tf.contrib.tpu.TPUEstimator(f, config=None, use_tpu=False)\n",
            "e = NPUEstimator(f, config=NPURunConfig(), params=dict(use_tpu=False))\n",
        ),
        (  # only an eval batch size: that is the one TPUEstimator passed
            "e = tf.contrib.tpu.TPUEstimator(f, config=c, use_tpu=False, eval_batch_size=4)\n",
            "e = NPUEstimator(f, config=c, params=dict(batch_size=4, use_tpu=False))\n",
        ),
    ],
)
def test_estimator(before, after):
    before = TF + "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n" + before
    after = H + TF + "c = NPURunConfig(save_checkpoints_steps=1)\n" + after
    assert_migrates(before, after)


def test_estimator_without_config_gets_the_npu_options():
    before = TF + "e = tf.contrib.tpu.TPUEstimator(model_fn=f, use_tpu=False)\n"
    after = (
        H
        + TF
        + (
            "e = NPUEstimator(model_fn=f, params=dict(use_tpu=False), "
            "config=NPURunConfig(precision_mode='force_fp16'))\n"
        )
    )
    assert_migrates(before, after, MigrateOptions(precision_mode="force_fp16"))


def test_estimator_bert_layout_with_params_given():
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        "estimator = tf.contrib.tpu.TPUEstimator(\n"
        "    use_tpu=False,\n"
        "    model_fn=model_fn,\n"
        "    config=c,\n"
        "    params={'a': 1},  # hyper-parameters\n"
        "    train_batch_size=32,\n"
        "    eval_batch_size=32)\n"
    )
    after = (
        H
        + TF
        + (
            "c = NPURunConfig(save_checkpoints_steps=1)\n"
            "estimator = NPUEstimator(\n"
            "    model_fn=model_fn,\n"
            "    config=c,\n"
            "    params=dict({'a': 1}, batch_size=32, use_tpu=False),  # hyper-parameters\n"
            ")\n"
        )
    )
    assert_migrates(before, after)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "e = tf.contrib.tpu.TPUEstimator(f, config=c,  # the config\n"
            "    use_tpu=False, train_batch_size=8)\n",
            "e = NPUEstimator(f, config=c,  # the config\n"
            "    params=dict(batch_size=8, use_tpu=False))\n",
        ),
        (
            "e = tf.contrib.tpu.TPUEstimator(f, config=c, params={},  # p\n"
            "    use_tpu=False, eval_on_tpu=False)\n",
            "e = NPUEstimator(f, config=c, params=dict({}, use_tpu=False)  # p\n    )\n",
        ),
    ],
)
def test_estimator_comment_after_a_kept_argument_is_kept(before, after):
    before = TF + "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n" + before
    after = H + TF + "c = NPURunConfig(save_checkpoints_steps=1)\n" + after
    assert_migrates(before, after)


def test_estimator_same_eval_batch_size_is_not_reported():
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        "e = tf.contrib.tpu.TPUEstimator(f, config=c, use_tpu=False, train_batch_size=b, "
        "eval_batch_size=b, predict_batch_size=None)\n"
    )
    assert messages(before, Severity.WARNING) == []


@pytest.mark.parametrize(
    ("use_tpu", "expected"),
    [
        ("", "use_tpu defaults to True: this estimator ran on a TPU"),
        (", use_tpu=True", "use_tpu=True: this estimator ran on a TPU"),
        (", use_tpu=FLAGS.use_tpu", "use_tpu=FLAGS.use_tpu removed: the NPU port follows"),
    ],
)
def test_estimator_use_tpu_warnings(use_tpu, expected):
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        f"e = tf.contrib.tpu.TPUEstimator(f, config=c{use_tpu})\n"
    )
    (warning,) = messages(before, Severity.WARNING)
    assert warning.startswith(expected)


def test_estimator_params_not_provably_a_dict_is_reported():
    before = TF + (
        "def build(hparams):\n"
        "    c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        "    return tf.contrib.tpu.TPUEstimator(f, config=c, use_tpu=False, params=hparams)\n"
    )
    after = (
        H
        + TF
        + (
            "def build(hparams):\n"
            "    c = NPURunConfig(save_checkpoints_steps=1)\n"
            "    return NPUEstimator(f, config=c, params=dict(hparams, use_tpu=False))\n"
        )
    )
    assert_migrates(before, after)
    assert messages(before, Severity.WARNING) == [
        "params=hparams is merged with dict(...): this assumes it is a dict"
    ]


def test_estimator_params_variable_bound_to_a_dict_is_not_reported():
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        "p = dict(layers=2)\n"
        "e = tf.contrib.tpu.TPUEstimator(f, config=c, use_tpu=False, params=p)\n"
    )
    assert messages(before, Severity.WARNING) == []


def test_estimator_config_from_elsewhere_is_reported():
    before = TF + (
        "def build(run_config):\n"
        "    return tf.contrib.tpu.TPUEstimator(f, config=run_config, use_tpu=False)\n"
    )
    after = (
        H
        + TF
        + (
            "def build(run_config):\n"
            "    return NPUEstimator(f, config=run_config, params=dict(use_tpu=False))\n"
        )
    )
    assert_migrates(before, after)
    assert messages(before, Severity.WARNING) == [
        "NPUEstimator requires an NPURunConfig, and config=run_config is not built in this file"
    ]


def test_estimator_config_from_local_function_is_proven():
    """XLNet's configure_tpu(): a local function returning a tpu.RunConfig."""
    before = TF + (
        "def configure_tpu():\n"
        "    run_config = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        "    return run_config\n"
        "e = tf.contrib.tpu.TPUEstimator(f, config=configure_tpu(), use_tpu=False)\n"
    )
    assert messages(before, Severity.WARNING) == []


def test_estimator_embedding_config_spec_is_reported():
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        "e = tf.contrib.tpu.TPUEstimator(f, config=c, use_tpu=False, embedding_config_spec=s)\n"
    )
    assert messages(before, Severity.WARNING) == [
        "embedding_config_spec removed: TPU embeddings have no NPU equivalent"
    ]


@pytest.mark.parametrize(
    "call", ["tf.contrib.tpu.TPUEstimator(**kw)", "tf.contrib.tpu.TPUEstimator(f, *rest)"]
)
def test_estimator_with_unpacking_is_left_and_reported(call):
    before = TF + f"e = {call}\n"
    assert_migrates(before, before)
    assert messages(before, Severity.WARNING)[0].startswith("TPUEstimator(*args/**kwargs)")


def test_plain_estimator_on_a_tpu_run_config_becomes_npu_estimator():
    """The estimator rule sees a tpu.RunConfig as a run config: this rule makes it an NPU one."""
    before = TF + (
        "c = tf.contrib.tpu.RunConfig(save_checkpoints_steps=1)\n"
        "e = tf.estimator.Estimator(model_fn, config=c)\n"
    )
    after = (
        H
        + TF
        + ("c = NPURunConfig(save_checkpoints_steps=1)\ne = NPUEstimator(model_fn, config=c)\n")
    )
    assert_migrates(before, after)


# -- TPUEstimatorSpec ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics=(metric_fn, [a, b]))\n",
            "s = NPUEstimatorSpec(mode, loss=l, eval_metric_ops=metric_fn(a, b))\n",
        ),
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics=(fn, (a,)))\n",
            "s = NPUEstimatorSpec(mode, loss=l, eval_metric_ops=fn(a,))\n",
        ),
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics=[fn, []])\n",
            "s = NPUEstimatorSpec(mode, loss=l, eval_metric_ops=fn())\n",
        ),
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l,\n"
            "    eval_metrics=(metric_fn, {'labels': y, 'logits': z}))\n",
            "s = NPUEstimatorSpec(mode, loss=l,\n"
            "    eval_metric_ops=metric_fn(**{'labels': y, 'logits': z}))\n",
        ),
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics=(\n"
            "    lambda y, z: {'acc': tf.metrics.accuracy(y, z)}, [y, z]))\n",
            "s = NPUEstimatorSpec(mode, loss=l, eval_metric_ops=(lambda y, z: "
            "{'acc': tf.metrics.accuracy(y, z)})(y, z))\n",
        ),
        (  # the tensors keep their layout and comments
            "s = tf.contrib.tpu.TPUEstimatorSpec(\n"
            "    mode, loss=l, eval_metrics=(metric_fn, [\n"
            "        labels,  # int32\n"
            "        logits,\n"
            "    ]))\n",
            "s = NPUEstimatorSpec(\n"
            "    mode, loss=l, eval_metric_ops=metric_fn(\n"
            "        labels,  # int32\n"
            "        logits,\n"
            "    ))\n",
        ),
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics=None)\n",
            "s = NPUEstimatorSpec(mode, loss=l, eval_metric_ops=None)\n",
        ),
        (  # positional: eval_metrics is the fifth, scaffold_fn the seventh parameter
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, None, l, op, (fn, [x]), None, sf, hc)\n",
            "s = NPUEstimatorSpec(mode, None, l, op, eval_metric_ops=fn(x), "
            "export_outputs=None, scaffold=sf() if sf else None, host_call=hc)\n",
        ),
        (  # what NPUEstimatorSpec also takes is kept as it is
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, train_op=op, host_call=(f, [g]),\n"
            "    training_hooks=[h], evaluation_hooks=e, prediction_hooks=p, "
            "export_outputs=o)\n",
            "s = NPUEstimatorSpec(mode, loss=l, train_op=op, host_call=(f, [g]),\n"
            "    training_hooks=[h], evaluation_hooks=e, prediction_hooks=p, "
            "export_outputs=o)\n",
        ),
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, scaffold_fn=self.scaffold_fn)\n",
            "s = NPUEstimatorSpec(mode, loss=l, "
            "scaffold=self.scaffold_fn() if self.scaffold_fn else None)\n",
        ),
        (
            "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, scaffold_fn=lambda: tf.train."
            "Scaffold())\n",
            "s = NPUEstimatorSpec(mode, loss=l, scaffold=(lambda: tf.train.Scaffold())())\n",
        ),
    ],
)
def test_spec(before, after):
    assert_migrates(TF + before, H + TF + after)


def test_spec_scaffold_fn_always_a_function():
    before = TF + (
        "def model_fn(features, labels, mode, params):\n"
        "    def scaffold_fn():\n"
        "        return tf.train.Scaffold()\n"
        "    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, scaffold_fn=scaffold_fn)\n"
    )
    after = (
        H
        + TF
        + (
            "def model_fn(features, labels, mode, params):\n"
            "    def scaffold_fn():\n"
            "        return tf.train.Scaffold()\n"
            "    return NPUEstimatorSpec(mode, loss=l, scaffold=scaffold_fn())\n"
        )
    )
    assert_migrates(before, after)


def test_spec_scaffold_fn_expression_is_left_and_reported():
    before = TF + "s = tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, scaffold_fn=make())\n"
    assert_migrates(before, before)
    assert messages(before, Severity.ERROR)[0].startswith(
        "TPUEstimatorSpec not rewritten: scaffold_fn is an expression"
    )


def test_spec_with_unpacking_is_left_and_reported():
    before = TF + "s = tf.contrib.tpu.TPUEstimatorSpec(mode, **spec_args)\n"
    assert_migrates(before, before)
    assert messages(before, Severity.ERROR)[0].startswith("TPUEstimatorSpec(*args/**kwargs)")


def test_spec_eval_metrics_dict_variable():
    before = TF + (
        "def model_fn(features, labels, mode, params):\n"
        "    eval_metrics = (metric_fn, {'labels': labels})\n"
        "    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics=eval_metrics)\n"
    )
    after = (
        H
        + TF
        + (
            "def model_fn(features, labels, mode, params):\n"
            "    eval_metrics = (metric_fn, {'labels': labels})\n"
            "    return NPUEstimatorSpec(mode, loss=l, "
            "eval_metric_ops=eval_metrics[0](**eval_metrics[1]))\n"
        )
    )
    assert_migrates(before, after)


HELPER = (
    "\n\n"
    "def npu_eval_metric_ops(eval_metrics):\n"
    '    """TPUEstimatorSpec eval_metrics=(metric_fn, tensors) as eval_metric_ops (by tf2npu)."""\n'
    "    if eval_metrics is None:\n"
    "        return None\n"
    "    metric_fn, tensors = eval_metrics\n"
    "    if isinstance(tensors, dict):\n"
    "        return metric_fn(**tensors)\n"
    "    return metric_fn(*tensors)\n"
    "\n"
)


def test_spec_eval_metrics_that_may_be_none_uses_the_helper():
    """The common TPU pattern: ``eval_metrics = None``, set only in EVAL mode."""
    before = TF + (
        "def model_fn(features, labels, mode, params):\n"
        "    eval_metrics = None\n"
        "    if mode == tf.estimator.ModeKeys.EVAL:\n"
        "        eval_metrics = (metric_fn, [labels, logits])\n"
        "    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics=eval_metrics)\n"
    )
    after = (
        H
        + TF
        + HELPER
        + (
            "def model_fn(features, labels, mode, params):\n"
            "    eval_metrics = None\n"
            "    if mode == tf.estimator.ModeKeys.EVAL:\n"
            "        eval_metrics = (metric_fn, [labels, logits])\n"
            "    return NPUEstimatorSpec(mode, loss=l, "
            "eval_metric_ops=npu_eval_metric_ops(eval_metrics))\n"
        )
    )
    assert_migrates(before, after)


@pytest.mark.parametrize(
    "value",
    ["metrics", "build_metrics()", "(metric_fn, tensors)", "(metric_fn,  # fn\n    [a])"],
)
def test_spec_eval_metrics_not_visible_uses_the_helper(value):
    before = TF + (
        "def model_fn(features, labels, mode, params, metrics):\n"
        f"    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=l, eval_metrics={value})\n"
    )
    after = (
        H
        + TF
        + HELPER
        + (
            "def model_fn(features, labels, mode, params, metrics):\n"
            f"    return NPUEstimatorSpec(mode, loss=l, eval_metric_ops=npu_eval_metric_ops({value}))\n"
        )
    )
    assert_migrates(before, after)


def test_spec_helper_added_once_per_file():
    before = TF + (
        "a = tf.contrib.tpu.TPUEstimatorSpec(mode, eval_metrics=m1)\n"
        "b = tf.contrib.tpu.TPUEstimatorSpec(mode, eval_metrics=m2)\n"
    )
    out = migrate_text(before).output.decode()
    assert out.count("def npu_eval_metric_ops(") == 1


# -- reports on other TPU APIs -------------------------------------------------------------------
def test_cluster_resolver_unguarded_is_a_warning():
    before = TF + "r = tf.contrib.cluster_resolver.TPUClusterResolver(FLAGS.tpu_name)\n"
    assert_migrates(before, before)
    assert findings(before) == [
        (2, Severity.WARNING, "TPUClusterResolver left as is: it looks up a Cloud TPU when it is "
         "created (failing on an NPU machine), and NPURunConfig takes no cluster")
    ]  # fmt: skip


def test_cross_shard_optimizer_in_the_else_of_a_negated_flag_is_guarded():
    before = TF + (
        "if not params['use_tpu']:\n"
        "    opt = base\n"
        "else:\n"
        "    opt = tf.tpu.CrossShardOptimizer(base)\n"
    )
    assert [s for _, s, _ in findings(before)] == [Severity.INFO]


def test_cross_shard_optimizer_unguarded_is_a_warning():
    before = TF + ("if not use_tpu:\n    opt = tf.contrib.tpu.CrossShardOptimizer(base)\n")
    assert [s for _, s, _ in findings(before)] == [Severity.WARNING]


def test_tpu_keras_apis_are_reported():
    before = TF + (
        "strategy = tf.contrib.tpu.TPUDistributionStrategy(resolver)\n"
        "model = tf.contrib.tpu.keras_to_tpu_model(model, strategy=strategy)\n"
    )
    assert_migrates(before, before)
    assert [s for _, s, _ in findings(before)] == [Severity.WARNING, Severity.WARNING]


def test_tpu_estimator_subclass_is_reported():
    before = TF + "class MyEstimator(tf.contrib.tpu.TPUEstimator):\n    pass\n"
    assert_migrates(before, before)
    assert messages(before, Severity.WARNING) == ["a subclass of TPUEstimator is not migrated"]


# -- left alone ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        # the user's own classes and methods with the same names
        "class TPUEstimator:\n    pass\ne = TPUEstimator(use_tpu=False, model_fn=f)\n",
        "e = my.tpu.TPUEstimator(use_tpu=False, model_fn=f)\n",
        "c = settings.RunConfig(master='', tpu_config=x)\n",
        "s = lib.TPUEstimatorSpec(mode, scaffold_fn=sf)\n",
        # a parameter named tf is not TensorFlow
        "def build(tf):\n    return tf.contrib.tpu.TPUEstimator(model_fn=f, use_tpu=False)\n",
        # TPU constants and configs that are not used by an estimator are harmless
        TF + "per_host = tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2\n",
        TF + "tpu_config = tf.contrib.tpu.TPUConfig(iterations_per_loop=100)\n",
    ],
)
def test_unchanged(source):
    assert_migrates(source, source)
    assert findings(source) == []


def test_crlf_line_endings_are_kept():
    assert_migrates(BERT_MAIN.replace("\n", "\r\n"), BERT_MAIN_AFTER.replace("\n", "\r\n"))
    assert_migrates(BERT_MODEL_FN.replace("\n", "\r\n"), BERT_MODEL_FN_AFTER.replace("\n", "\r\n"))


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # a resolver built from a --tpu flag defaulting to "" (XLNet-style), used only as cluster=
        (TF + "resolver = tf.contrib.cluster_resolver.TPUClusterResolver(FLAGS.tpu)\n"
              "config = tf.contrib.tpu.RunConfig(cluster=resolver, model_dir=d)\n",
         H + TF + "config = NPURunConfig(model_dir=d)\n"),
        # the only statement of a block that stays: pass keeps it valid
        (TF + "def f():\n    if use_tpu:\n        r = tf.contrib.cluster_resolver.TPUClusterResolver(t)\n"
              "    else:\n        r = None\n"
              "    return tf.contrib.tpu.RunConfig(cluster=r, model_dir=d)\n",
         H + TF + "def f():\n    if use_tpu:\n        pass\n"
              "    else:\n        pass\n"
              "    return NPURunConfig(model_dir=d)\n"),
        # an if whose test calls a function stays, with pass
        (TF + "r = None\nif ok():\n    r = tf.contrib.cluster_resolver.TPUClusterResolver(t)\n"
              "config = tf.contrib.tpu.RunConfig(cluster=r, model_dir=d)\n",
         H + TF + "if ok():\n    pass\nconfig = NPURunConfig(model_dir=d)\n"),
    ],
)  # fmt: skip
def test_resolver_only_passed_as_cluster_is_removed(before, after):
    migrated = assert_migrates(before, after)
    assert any(
        "TPUClusterResolver call removed" in f.message for f in rule_findings(migrated, RULE)
    )


@pytest.mark.parametrize(
    "source",
    [
        # also used elsewhere: kept
        TF + "r = tf.contrib.cluster_resolver.TPUClusterResolver(t)\nprint(r.master())\n"
             "config = tf.contrib.tpu.RunConfig(cluster=r, model_dir=d)\n",
        # another kind of binding (a parameter default, a call result): kept
        TF + "r = tf.contrib.cluster_resolver.TPUClusterResolver(t)\nr = make()\n"
             "config = tf.contrib.tpu.RunConfig(cluster=r, model_dir=d)\n",
    ],
)  # fmt: skip
def test_resolver_with_other_uses_is_kept(source):
    assert "TPUClusterResolver(t)" in migrate_text(source).output.decode()
