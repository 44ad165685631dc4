"""Which ``tf.contrib`` symbols ``tf2npu run`` provides, and what it says about the others.

Knowledge as data (STYLE habit 2): the module objects registered under
``tensorflow.contrib.*``, the errors for what is missing and the table in
``docs/tf1-compat.md`` are all generated from :data:`PROVIDED` and :data:`NOT_PROVIDED`.

A target is either a public TF 2.15 name (``tf.compat.v1...``; resolved by attribute walk from
the ``tensorflow`` module) or ``package.module:attr`` for code tf2npu writes itself where TF
2.15 has no equivalent with TF 1.15 contrib semantics.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Symbol:
    """``tf.contrib.<module>.<name>`` resolves to ``target``; ``note`` states any difference."""

    module: str
    name: str
    target: str
    note: str = ""


@dataclass(frozen=True)
class Missing:
    """A contrib module (``name`` is None) or symbol that is not provided, and what to do."""

    module: str
    name: str | None
    advice: str


@dataclass(frozen=True)
class Alias:
    """A contrib module whose TF 1.15 code lives on as a separate package with the same API."""

    module: str
    package: str
    note: str


_IMPL = "tf2npu.compat.contrib"


def _same(
    module: str, prefix: str, names: str, note: str = "", sep: str = "."
) -> tuple[Symbol, ...]:
    """Symbols whose target has the same name under ``prefix`` (``sep`` ':' for a module)."""
    return tuple(Symbol(module, n, f"{prefix}{sep}{n}", note) for n in names.split())


_V1_DATA = "tf.compat.v1.data.experimental"
_LOOKUP_OPS = "tensorflow.python.ops.lookup_ops"
_SUMMARY_V2 = "tensorflow.python.ops.summary_ops_v2"
_RNN = f"{_IMPL}.rnn"
_SEQ2SEQ = f"{_IMPL}.seq2seq"

PROVIDED: tuple[Symbol, ...] = (
    # contrib.layers: BERT/ALBERT modeling.py and typical slim-free trainers.
    Symbol(
        "layers",
        "layer_norm",
        f"{_IMPL}.layers:layer_norm",
        "same variables (<scope>/beta, <scope>/gamma; default scope LayerNorm) and axes",
    ),
    Symbol(
        "layers",
        "fully_connected",
        f"{_IMPL}.layers:fully_connected",
        "variables <scope>/weights, <scope>/biases (default scope fully_connected)",
    ),
    Symbol("layers", "flatten", f"{_IMPL}.layers:flatten"),
    Symbol(
        "layers",
        "batch_norm",
        f"{_IMPL}.batch_norm:batch_norm",
        "TF 1.15 defaults and names (<scope>/beta, moving_mean, moving_variance; gamma only "
        "with scale=True); batch_weights, zero_debias_moving_mean=True and custom "
        "updates_collections raise an error",
    ),
    Symbol("layers", "xavier_initializer", f"{_IMPL}.layers:xavier_initializer"),
    Symbol("layers", "xavier_initializer_conv2d", f"{_IMPL}.layers:xavier_initializer"),
    Symbol(
        "layers",
        "variance_scaling_initializer",
        f"{_IMPL}.layers:variance_scaling_initializer",
        "built on tf.compat.v1.variance_scaling_initializer with the scale adjusted so the "
        "truncated-normal stddev is sqrt(1.3 * factor / n) as in TF 1.15 contrib",
    ),
    Symbol("layers", "l1_regularizer", f"{_IMPL}.layers:l1_regularizer"),
    Symbol("layers", "l2_regularizer", f"{_IMPL}.layers:l2_regularizer"),
    Symbol("layers", "l1_l2_regularizer", f"{_IMPL}.layers:l1_l2_regularizer"),
    # contrib.tpu: BERT/ALBERT run_*.py and optimization.py; CPU path is use_tpu=False.
    *_same(
        "tpu",
        "tf.compat.v1.estimator.tpu",
        "TPUEstimator TPUEstimatorSpec RunConfig TPUConfig InputPipelineConfig",
        "use_tpu=False trains/evaluates on the host CPU; use_tpu=True needs a TPU",
    ),
    *_same(
        "tpu",
        "tf.compat.v1.tpu",
        "CrossShardOptimizer bfloat16_scope shard rewrite replicate batch_parallel "
        "initialize_system shutdown_system outside_compilation cross_replica_sum",
        "builds TPU ops: running them needs a TPU (BERT/ALBERT use them only when use_tpu)",
    ),
    # contrib.cluster_resolver: constructed by BERT/ALBERT only when use_tpu and tpu_name.
    Symbol(
        "cluster_resolver",
        "TPUClusterResolver",
        f"{_IMPL}.cluster_resolver:TPUClusterResolver",
        'TF 2.15\'s resolver; tpu="" means no TPU as in TF 1.15 (master "", cluster_spec None)',
    ),
    *_same(
        "cluster_resolver",
        "tf.compat.v1.distribute.cluster_resolver",
        "ClusterResolver SimpleClusterResolver TFConfigClusterResolver "
        "GCEClusterResolver KubernetesClusterResolver SlurmClusterResolver UnionResolver",
    ),
    # contrib.data: input pipelines of BERT/ALBERT and Estimator trainers.
    *_same(
        "data",
        _V1_DATA,
        "map_and_batch parallel_interleave shuffle_and_repeat unbatch ignore_errors "
        "prefetch_to_device copy_to_device group_by_window group_by_reducer Reducer "
        "bucket_by_sequence_length sample_from_datasets choose_from_datasets Counter "
        "TFRecordWriter CsvDataset SqlDataset make_batched_features_dataset "
        "make_csv_dataset get_single_element scan rejection_resample enumerate_dataset "
        "unique dense_to_sparse_batch parse_example_dataset AUTOTUNE",
    ),
    Symbol(
        "data",
        "batch_and_drop_remainder",
        f"{_IMPL}.data:batch_and_drop_remainder",
        "Dataset.batch(batch_size, drop_remainder=True)",
    ),
    Symbol(
        "data",
        "padded_batch_and_drop_remainder",
        f"{_IMPL}.data:padded_batch_and_drop_remainder",
        "Dataset.padded_batch(..., drop_remainder=True)",
    ),
    # contrib.lookup
    Symbol("lookup", "HashTable", f"{_LOOKUP_OPS}:HashTable"),
    *_same(
        "lookup",
        "tf.compat.v1.lookup",
        "KeyValueTensorInitializer TextFileInitializer TextFileIndex StaticHashTable",
    ),
    Symbol("lookup", "MutableHashTable", "tf.compat.v1.lookup.experimental.MutableHashTable"),
    Symbol("lookup", "MutableDenseHashTable", "tf.compat.v1.lookup.experimental.DenseHashTable"),
    Symbol("lookup", "tables_initializer", "tf.compat.v1.tables_initializer"),
    Symbol("lookup", "index_table_from_file", f"{_LOOKUP_OPS}:index_table_from_file"),
    Symbol(
        "lookup",
        "index_table_from_tensor",
        f"{_IMPL}.lookup:index_table_from_tensor",
        "first argument is `mapping` as in TF 1.15 contrib (TF 2.15: vocabulary_list)",
    ),
    Symbol(
        "lookup",
        "index_to_string_table_from_file",
        f"{_LOOKUP_OPS}:index_to_string_table_from_file",
    ),
    Symbol(
        "lookup",
        "index_to_string_table_from_tensor",
        f"{_IMPL}.lookup:index_to_string_table_from_tensor",
        "first argument is `mapping` as in TF 1.15 contrib (TF 2.15: vocabulary_list)",
    ),
    Symbol("lookup", "IdTableWithHashBuckets", f"{_LOOKUP_OPS}:IdTableWithHashBuckets"),
    Symbol("lookup", "HasherSpec", f"{_LOOKUP_OPS}:HasherSpec"),
    Symbol("lookup", "FastHashSpec", f"{_LOOKUP_OPS}:FastHashSpec"),
    Symbol("lookup", "StrongHashSpec", f"{_LOOKUP_OPS}:StrongHashSpec"),
    # contrib.training
    Symbol(
        "training",
        "HParams",
        f"{_IMPL}.hparams:HParams",
        "tf2npu's own implementation of TF 1.15 semantics; no to_proto/from_proto",
    ),
    # contrib.framework
    Symbol(
        "framework", "get_or_create_global_step", "tf.compat.v1.train.get_or_create_global_step"
    ),
    Symbol("framework", "get_global_step", "tf.compat.v1.train.get_global_step"),
    Symbol("framework", "get_variables", f"{_IMPL}.framework:get_variables"),
    Symbol("framework", "get_model_variables", f"{_IMPL}.framework:get_model_variables"),
    Symbol("framework", "get_variables_to_restore", f"{_IMPL}.framework:get_variables_to_restore"),
    Symbol(
        "framework",
        "nest",
        f"{_IMPL}.nest:NEST",
        "TF 2.15's tensorflow.python.util.nest, with TF 1.15's is_sequence (= is_nested)",
    ),
    # checkpoint_utils, which TF 1.15 exported from contrib.framework and tf.train alike
    # (Transformer-XL's avg_checkpoints.py).
    *_same(
        "framework",
        "tf.compat.v1.train",
        "list_variables load_checkpoint load_variable init_from_checkpoint",
    ),
    # tf-slim keeps contrib.framework's arg_scope module as it was (slim re-exported it).
    *_same(
        "framework",
        "tf_slim.ops.arg_scope",
        "arg_scope add_arg_scope has_arg_scope arg_scoped_arguments",
        "tf-slim's arg_scope module, which is TF 1.15 contrib.framework's",
        sep=":",
    ),
    # contrib.summary: TPU host_call summaries; TF 2.15 keeps these graph-mode functions.
    *_same(
        "summary",
        _SUMMARY_V2,
        "create_file_writer always_record_summaries never_record_summaries "
        "record_summaries_every_n_global_steps should_record_summaries scalar histogram "
        "image audio generic graph import_event initialize flush "
        "summary_writer_initializer_op eval_dir",
        sep=":",
    ),
    Symbol("summary", "all_summary_ops", "tf.compat.v1.summary.all_v2_summary_ops"),
    # contrib.rnn
    *_same(
        "rnn",
        "tf.compat.v1.nn.rnn_cell",
        "RNNCell BasicRNNCell BasicLSTMCell LSTMCell GRUCell MultiRNNCell DropoutWrapper "
        "ResidualWrapper DeviceWrapper LSTMStateTuple",
    ),
    *_same("rnn", "tf.compat.v1.nn", "static_rnn static_bidirectional_rnn static_state_saving_rnn"),
    # contrib.rnn, TF 1.15's own cells: NMT-era encoders and decoders, fused LSTMs.
    Symbol(
        "rnn",
        "LayerRNNCell",
        f"{_RNN}.base:LayerRNNCell",
        "TF 2.15's v1 LayerRNNCell (keras.src.layers.rnn.legacy_cells), the class TF 1.15 had",
    ),
    *_same(
        "rnn",
        f"{_RNN}.block",
        "LSTMBlockCell LSTMBlockFusedCell LSTMBlockWrapper GRUBlockCell GRUBlockCellV2",
        "TF 1.15's classes on TF 2.15's LSTMBlockCell/BlockLSTM/GRUBlockCell kernels; same "
        "variables (lstm_cell/kernel, lstm_fused_cell/kernel, gru_cell/w_ru...)",
        sep=":",
    ),
    *_same(
        "rnn",
        f"{_RNN}.fused",
        "FusedRNNCell FusedRNNCellAdaptor TimeReversedFusedRNN",
        "tf2npu's own implementation of TF 1.15's fused-cell interface",
        sep=":",
    ),
    *_same(
        "rnn",
        f"{_RNN}.wrappers",
        "InputProjectionWrapper OutputProjectionWrapper EmbeddingWrapper HighwayWrapper "
        "AttentionCellWrapper",
        "tf2npu's own implementation of TF 1.15's wrappers; same variable names",
        sep=":",
    ),
    *_same(
        "rnn",
        f"{_RNN}.cells",
        "LayerNormBasicLSTMCell CoupledInputForgetGateLSTMCell NASCell UGRNNCell IndyLSTMCell",
        "tf2npu's own implementation of the TF 1.15 maths; same variable names",
        sep=":",
    ),
    *_same(
        "rnn",
        f"{_RNN}.stack",
        "stack_bidirectional_rnn stack_bidirectional_dynamic_rnn",
        "tf2npu's own implementation; scopes stack_bidirectional_rnn/cell_<i> as in TF 1.15",
        sep=":",
    ),
    *_same("rnn", f"{_RNN}.base", "transpose_batch_time best_effort_input_batch_size", sep=":"),
    # contrib.seq2seq: NMT, chatbots, summarisers (graph mode, TF 1.15's variable names).
    *_same(
        "seq2seq",
        f"{_SEQ2SEQ}.attention",
        "AttentionMechanism BahdanauAttention LuongAttention BahdanauMonotonicAttention "
        "LuongMonotonicAttention hardmax safe_cumprod monotonic_attention",
        "tf2npu's own implementation of the TF 1.15 maths; same variables (memory_layer/kernel, "
        "bahdanau_attention/attention_v...)",
        sep=":",
    ),
    *_same(
        "seq2seq",
        f"{_SEQ2SEQ}.wrapper",
        "AttentionWrapper AttentionWrapperState",
        "tf2npu's own implementation of TF 1.15's wrapper; same variables "
        "(attention_wrapper/attention_layer/kernel)",
        sep=":",
    ),
    *_same(
        "seq2seq",
        f"{_SEQ2SEQ}.decoder",
        "Decoder dynamic_decode BasicDecoder BasicDecoderOutput",
        "tf2npu's own implementation (v1 while_loop, as TF 1.15)",
        sep=":",
    ),
    *_same(
        "seq2seq",
        f"{_SEQ2SEQ}.helpers",
        "Helper CustomHelper TrainingHelper GreedyEmbeddingHelper SampleEmbeddingHelper "
        "ScheduledEmbeddingTrainingHelper ScheduledOutputTrainingHelper InferenceHelper",
        "tf2npu's own implementation of TF 1.15's helpers",
        sep=":",
    ),
    *_same(
        "seq2seq",
        f"{_SEQ2SEQ}.beam_search",
        "BeamSearchDecoder BeamSearchDecoderOutput BeamSearchDecoderState "
        "FinalBeamSearchDecoderOutput tile_batch gather_tree",
        "tf2npu's own implementation; gather_tree is built from graph ops (TF 2.15 has no "
        "GatherTree kernel)",
        sep=":",
    ),
    Symbol("seq2seq", "sequence_loss", f"{_SEQ2SEQ}.loss:sequence_loss"),
    # contrib.crf: BERT/BiLSTM-CRF taggers (NER).
    *_same(
        "crf",
        f"{_IMPL}.crf",
        "crf_log_likelihood crf_sequence_score crf_log_norm crf_unary_score "
        "crf_binary_score crf_decode viterbi_decode",
        "tf2npu's own implementation of the TF 1.15 maths; crf_decode pads with tag 0",
        sep=":",
    ),
    # contrib.estimator: early stopping and evaluator hooks (TF 1.15 moved them to
    # tf.estimator.experimental), the canned Estimators that take a head, extenders.
    *_same(
        "estimator",
        "tf.compat.v1.estimator.experimental",
        "stop_if_no_increase_hook stop_if_no_decrease_hook stop_if_higher_hook "
        "stop_if_lower_hook make_early_stopping_hook InMemoryEvaluatorHook call_logit_fn "
        "dnn_logit_fn_builder linear_logit_fn_builder",
    ),
    Symbol(
        "estimator",
        "read_eval_metrics",
        "tensorflow_estimator.python.estimator.early_stopping:read_eval_metrics",
    ),
    *_same(
        "estimator",
        "tf.compat.v1.estimator",
        "add_metrics DNNEstimator LinearEstimator DNNLinearCombinedEstimator BaselineEstimator",
    ),
    *_same(
        "estimator",
        f"{_IMPL}.estimator",
        "binary_classification_head multi_class_head regression_head",
        "TF 2.15's v1 _Head builders with contrib's default loss_reduction=SUM_OVER_BATCH_SIZE "
        "(the core builders sum over the batch)",
        sep=":",
    ),
    *_same(
        "estimator",
        f"{_IMPL}.estimator",
        "clip_gradients_by_norm forward_features",
        "tf2npu's own implementation of TF 1.15's (optimizer named ClipByNorm<name>)",
        sep=":",
    ),
    # contrib.learn: what outlived it (ModeKeys in Estimator model_fns, RunConfig, the CSV
    # loaders of the iris tutorials).
    Symbol(
        "learn",
        "ModeKeys",
        f"{_IMPL}.learn:ModeKeys",
        "TRAIN/EVAL/INFER: 'train', 'eval', 'infer', equal to tf.estimator.ModeKeys' values",
    ),
    Symbol(
        "learn",
        "RunConfig",
        f"{_IMPL}.learn:RunConfig",
        "tf.estimator.RunConfig plus contrib's master, num_cores, log_device_placement, "
        "gpu_memory_fraction (these three only build the tf_config property, as in TF 1.15)",
    ),
    Symbol(
        "learn",
        "datasets",
        f"{_IMPL}.learn:datasets",
        "datasets.base only: Dataset, Datasets, load_csv_with_header, load_csv_without_header",
    ),
    # contrib.metrics: streaming_mean has tf.compat.v1.metrics.mean's signature; the others
    # take (predictions, labels) where tf.metrics takes (labels, predictions).
    Symbol("metrics", "streaming_mean", "tf.compat.v1.metrics.mean"),
    *_same(
        "metrics",
        f"{_IMPL}.metrics",
        "streaming_accuracy streaming_precision streaming_recall streaming_auc "
        "streaming_mean_squared_error streaming_mean_absolute_error",
        "tf.compat.v1.metrics.<name> called with contrib's (predictions, labels) order",
        sep=":",
    ),
    *_same(
        "metrics",
        f"{_IMPL}.metrics",
        "streaming_concat streaming_pearson_correlation",
        "tf2npu's own implementation (ALBERT's STS-B evaluation); streaming_concat "
        "accepts max_size with no effect",
        sep=":",
    ),
)

ALIASES: tuple[Alias, ...] = (
    Alias(
        "slim",
        "tf_slim",
        "tf-slim (pip install tf-slim) is Google's continuation of tf.contrib.slim: same API "
        "and variable names; used when installed, otherwise an error says to install it",
    ),
)

_SLIM = (
    "install tf-slim (pip install tf-slim) and `import tf_slim as slim`, which keeps "
    "slim's API and variable names"
)

_LEARN_LOOP = (
    "write a model_fn returning tf.estimator.EstimatorSpec for tf.compat.v1.estimator.Estimator "
    "and train with tf.estimator.train_and_evaluate(estimator, TrainSpec(...), EvalSpec(...)), "
    "which replaced contrib.learn's Estimator, Experiment and learn_runner"
)
_TOWERS = (
    "replicate_model_fn copied model_fn onto several GPUs in one graph; TF 2.15 has no "
    "equivalent: use one device per process (tf2npu run --ranks N, with the optimizer wrapped "
    "in npu_bridge's NPUDistributedOptimizer) or tf.distribute.MirroredStrategy through "
    "tf.estimator.RunConfig(train_distribute=...)"
)
_V2_HEADS = (
    "TF 2.15 has it only as the v2 head tf.estimator.{v2}, whose create_estimator_spec takes "
    "optimizer= and trainable_variables= (not train_op_fn=); port the model_fn to it"
)

NOT_PROVIDED: tuple[Missing, ...] = (
    Missing("slim", None, _SLIM),
    Missing(
        "layers",
        "optimize_loss",
        "build the train op with tf.compat.v1.train.<Optimizer>().minimize(loss, "
        "global_step=tf.compat.v1.train.get_or_create_global_step())",
    ),
    Missing(
        "opt",
        None,
        "TF 2.15 has no tf.contrib.opt; for AdamWOptimizer/LazyAdamOptimizer write the "
        "optimizer as a tf.compat.v1.train.Optimizer subclass (as BERT's "
        "AdamWeightDecayOptimizer does) or use an optimizer from tf.compat.v1.train",
    ),
    Missing(
        "distribute",
        None,
        "use tf.distribute (e.g. tf.distribute.MirroredStrategy) with "
        "tf.estimator.RunConfig(train_distribute=...)",
    ),
    *(
        Missing("learn", name, _LEARN_LOOP)
        for name in ("Experiment", "learn_runner", "Estimator", "SKCompat", "ModelFnOps")
    ),
    *(Missing("estimator", name, _TOWERS) for name in ("replicate_model_fn", "TowerOptimizer")),
    *(
        Missing("estimator", name, _V2_HEADS.format(v2=v2))
        for name, v2 in (
            ("poisson_regression_head", "PoissonRegressionHead"),
            ("logistic_regression_head", "LogisticRegressionHead"),
            ("multi_label_head", "MultiLabelHead"),
            ("multi_head", "MultiHead"),
        )
    ),
    *(
        Missing("estimator", name, f"call estimator.{method}(...) on the Estimator itself")
        for name, method in (
            ("export_saved_model_for_mode", "export_saved_model"),
            ("export_all_saved_models", "experimental_export_all_saved_models"),
        )
    ),
    *(
        Missing(
            "estimator",
            name,
            "build the sequence model with tf.keras RNN layers in a "
            "model_fn (tf.compat.v1.estimator.Estimator)",
        )
        for name in ("RNNClassifier", "RNNEstimator")
    ),
    Missing(
        "predictor",
        None,
        "load the SavedModel with tf.compat.v1.saved_model.load(sess, tags, export_dir)",
    ),
    Missing("image", None, "use tf.image (most ops), or tensorflow-addons' tfa.image"),
    Missing(
        "training",
        "bucket_by_sequence_length",
        "use tf.data.experimental.bucket_by_sequence_length on a tf.data pipeline",
    ),
    *(
        Missing(
            "rnn",
            name,
            "tf2npu does not provide this TF 1.15 contrib cell; use tf.compat.v1.nn.rnn_cell."
            "LSTMCell/GRUCell or a cell from tf.contrib.rnn's provided names (docs/tf1-compat.md)",
        )
        for name in [
            "TimeFreqLSTMCell",
            "GridLSTMCell",
            "BidirectionalGridLSTMCell",
            "IntersectionRNNCell",
            "PhasedLSTMCell",
            "GLSTMCell",
            "SRUCell",
            "IndRNNCell",
            "IndyGRUCell",
            "CompiledWrapper",
        ]
    ),
    *(
        Missing(
            "rnn",
            name,
            "not provided by tf2npu; tf.keras.layers.ConvLSTM1D/2D/3D compute the same "
            "recurrence as a Keras layer (its variables are named differently)",
        )
        for name in ["ConvLSTMCell", "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell"]
    ),
)


def provided_modules() -> tuple[str, ...]:
    """The contrib submodules that exist under ``tf2npu run``, in table order."""
    seen: dict[str, None] = {}
    for sym in PROVIDED:
        seen.setdefault(sym.module, None)
    return tuple(seen)


def alias_of(module: str) -> Alias | None:
    """The package standing in for contrib ``module``, if there is one."""
    return next((a for a in ALIASES if a.module == module), None)


def symbols_of(module: str) -> dict[str, Symbol]:
    """The provided symbols of one contrib submodule, by name."""
    return {s.name: s for s in PROVIDED if s.module == module}


def advice_for(module: str, name: str | None) -> str:
    """The message for a contrib module or symbol that is not provided."""
    for miss in NOT_PROVIDED:
        if miss.module == module and miss.name == name:
            if name is None:
                return f"tf.contrib.{module} is not provided by tf2npu run; {miss.advice}"
            return (
                f"tf.contrib.{module}.{name} is not provided by tf2npu run (TF 2.15 has no "
                f"equivalent with TF 1.15 semantics); {miss.advice}"
            )
    for miss in NOT_PROVIDED:
        if miss.module == module and miss.name is None:
            what = f"tf.contrib.{module}" + (f".{name}" if name else "")
            return f"{what} is not provided by tf2npu run; {miss.advice}"
    if name is None:
        return (
            f"tf.contrib.{module} is not provided by tf2npu run (TF 2.15 has no tf.contrib); "
            f"use its TF 2.15 successor (tf.compat.v1.*, tf.* or an add-on package) or see "
            f"docs/tf1-compat.md for the provided modules: {', '.join(provided_modules())}"
        )
    names = ", ".join(sorted(symbols_of(module)))
    return (
        f"tf.contrib.{module}.{name} is not provided by tf2npu run (no TF 2.15 equivalent "
        f"in the tf2npu contrib table); the provided tf.contrib.{module} names are: "
        f"{names}; replace the call with its TF 2.15 successor"
    )
