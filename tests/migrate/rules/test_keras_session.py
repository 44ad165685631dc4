"""keras_session: the Keras NPU session, clear_session, and distributed Keras optimizers."""

from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import Distributed, MigrateOptions
from tf2npu.testing.migration import assert_migrates, migrate_text, rule_findings

IMPORT = "from npu_bridge.npu_init import *\n"
STRATEGY = MigrateOptions(distributed=Distributed.TF_STRATEGY)

KERAS_MAIN = (
    "import tensorflow as tf\n"
    "from tensorflow import keras\n\n\n"
    "def main():\n"
    "    model = keras.Sequential([keras.layers.Dense(1)])\n"
    "    model.fit(x, y)\n\n\n"
)


def test_main_block_gets_the_session_and_closes_it_in_finally():
    before = KERAS_MAIN + 'if __name__ == "__main__":\n    # run it\n    main()\n'
    after = (
        IMPORT + KERAS_MAIN + 'if __name__ == "__main__":\n'
        "    npu_keras_sess = set_keras_session_npu_config()\n"
        "    try:\n        # run it\n        main()\n"
        "    finally:\n        close_session(npu_keras_sess)\n"
    )
    migrated = assert_migrates(before, after)
    assert [c.rule for c in migrated.result.changes] == ["npu_import", "keras_session"]


def test_tf_app_run_is_wrapped_so_the_session_is_closed_on_sys_exit():
    before = KERAS_MAIN + 'if __name__ == "__main__":\n    tf.app.run(main)\n'
    after = (
        IMPORT + KERAS_MAIN + 'if __name__ == "__main__":\n'
        "    npu_keras_sess = set_keras_session_npu_config()\n"
        "    try:\n        tf.app.run(main)\n"
        "    finally:\n        close_session(npu_keras_sess)\n"
    )
    assert_migrates(before, after)


def test_model_subclass_and_compile_count_as_building_a_model():
    before = (
        "import tensorflow as tf\n\n"
        "class Net(tf.keras.Model):\n    pass\n\n"
        "if __name__ == '__main__':\n    Net().compile('sgd', 'mse')\n"
    )
    after = (
        IMPORT + "import tensorflow as tf\n\n"
        "class Net(tf.keras.Model):\n    pass\n\n"
        "if __name__ == '__main__':\n"
        "    npu_keras_sess = set_keras_session_npu_config()\n"
        "    try:\n        Net().compile('sgd', 'mse')\n"
        "    finally:\n        close_session(npu_keras_sess)\n"
    )
    assert_migrates(before, after)


def test_precision_mode_reaches_the_keras_session():
    before = KERAS_MAIN + 'if __name__ == "__main__":\n    main()\n'
    migrated = migrate_text(before, MigrateOptions(precision_mode="allow_mix_precision"))
    out = migrated.output.decode()
    assert "npu_keras_sess = set_keras_session_npu_config(config=npu_session_config())\n" in out
    assert out.index("def npu_session_config(") < out.index("npu_keras_sess =")


def test_standalone_keras_gets_the_session_through_its_own_backend():
    body = (
        "from keras import backend as K\nfrom keras.models import Sequential\n\n"
        "def main():\n    model = Sequential()\n    model.fit(x, y)\n\n"
    )
    before = body + "if __name__ == '__main__':\n    main()\n"
    after = (
        IMPORT + body + "if __name__ == '__main__':\n"
        "    npu_keras_sess = set_keras_session_npu_config()\n"
        "    K.set_session(npu_keras_sess)\n"
        "    try:\n        main()\n"
        "    finally:\n        close_session(npu_keras_sess)\n"
    )
    assert_migrates(before, after)


def test_standalone_keras_module_import_is_used_for_the_backend():
    before = (
        "import keras\n\nif __name__ == '__main__':\n    keras.models.load_model('m').fit(x, y)\n"
    )
    out = migrate_text(before).output.decode()
    assert "    keras.backend.set_session(npu_keras_sess)\n" in out


def test_standalone_keras_without_a_backend_name_is_reported():
    before = (
        "from keras.models import Sequential\n\n"
        "if __name__ == '__main__':\n    Sequential().fit(x, y)\n"
    )
    migrated = migrate_text(before)
    assert "set_keras_session_npu_config()" in migrated.output.decode()
    [finding] = rule_findings(migrated, "keras_session")
    assert finding.severity is Severity.WARNING
    assert "keras.backend.set_session(npu_keras_sess)" in finding.fix


def test_existing_set_session_gets_the_npu_config_from_session_config_only():
    before = (
        "import tensorflow as tf\nfrom tensorflow.keras import backend as K\n\n"
        "def main():\n"
        "    K.set_session(tf.Session(config=tf.ConfigProto()))\n"
        "    model = tf.keras.Sequential()\n    model.fit(x, y)\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    after = (
        IMPORT + "import tensorflow as tf\nfrom tensorflow.keras import backend as K\n\n"
        "def main():\n"
        "    K.set_session(tf.Session(config=npu_config_proto(config_proto=tf.ConfigProto())))\n"
        "    model = tf.keras.Sequential()\n    model.fit(x, y)\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    migrated = assert_migrates(before, after)
    assert not rule_findings(migrated, "keras_session")


def test_set_session_with_a_session_variable_or_with_block_is_accepted():
    before = (
        "import tensorflow as tf\nimport keras.backend as K\n"
        "sess = tf.Session()\nK.set_session(sess)\n"
        "with tf.Session() as s:\n    K.set_session(s)\n"
        "keras_model = K.foo\n"
    )
    migrated = migrate_text(before)
    assert not rule_findings(migrated, "keras_session")
    assert "set_keras_session_npu_config" not in migrated.output.decode()


def test_set_session_with_a_foreign_session_is_reported():
    before = (
        "import tensorflow as tf\nfrom tensorflow.keras import backend as K\n"
        "K.set_session(make_session())\nmodel = tf.keras.Sequential()\n"
    )
    migrated = migrate_text(before)
    [finding] = rule_findings(migrated, "keras_session")
    assert finding.severity is Severity.INFO and finding.line == 3
    assert "set_keras_session_npu_config" not in migrated.output.decode()


def test_clear_session_becomes_npu_clear_session():
    before = "import tensorflow.compat.v1 as tf1\ntf1.keras.backend.clear_session()\n"
    after = IMPORT + "import tensorflow.compat.v1 as tf1\nnpu_clear_session()\n"
    assert_migrates(before, after)


def test_standalone_clear_session_is_reported_not_rewritten():
    before = "import keras\nkeras.backend.clear_session()\n"
    migrated = assert_migrates(before, before)
    [finding] = rule_findings(migrated, "keras_session")
    assert "set_session" in finding.fix


def test_library_file_without_main_block_is_reported():
    before = (
        "import tensorflow as tf\n\n"
        "def build():\n    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
    )
    migrated = assert_migrates(before, before)
    [finding] = rule_findings(migrated, "keras_session")
    assert finding.severity is Severity.INFO and finding.line == 4
    assert "--entry" in finding.fix


def test_library_file_names_the_entry_script_when_given():
    before = "import tensorflow as tf\nm = tf.keras.Sequential()\n"
    options = MigrateOptions(entry="train.py")
    migrated = migrate_text(before, options, path="model.py")
    [finding] = rule_findings(migrated, "keras_session")
    assert "train.py" in finding.fix


def test_entry_script_without_main_block_gets_the_session_around_its_body():
    before = (
        '"""Train."""\nimport tensorflow as tf\n\n'
        "def build():\n    return tf.keras.Sequential()\n\n"
        "model = build()\nmodel.fit(x, y)\n"
    )
    out = migrate_text(before, MigrateOptions(entry="t.py")).output.decode()
    assert (
        "\nnpu_keras_sess = set_keras_session_npu_config()\n"
        "model = build()\nmodel.fit(x, y)\nclose_session(npu_keras_sess)\n"
    ) in out
    assert out.index("def build") < out.index("npu_keras_sess =")
    assert migrate_text(out, MigrateOptions(entry="t.py")).output.decode() == out


def test_entry_script_ending_in_sys_exit_closes_in_finally():
    before = (
        "import sys\nimport tensorflow as tf\ntf.keras.Sequential().fit(x, y)\nsys.exit(\n    0)\n"
    )
    out = migrate_text(before, MigrateOptions(entry="t.py")).output.decode()
    assert "\nnpu_keras_sess = set_keras_session_npu_config()\n" in out
    assert out.endswith(
        "tf.keras.Sequential().fit(x, y)\n"
        "try:\n    sys.exit(\n        0)\nfinally:\n    close_session(npu_keras_sess)\n"
    )
    assert migrate_text(out, MigrateOptions(entry="t.py")).output.decode() == out


def test_entry_script_with_precision_mode_defines_the_helper_first():
    before = "import tensorflow as tf\nmodel = tf.keras.Sequential()\nmodel.fit(x, y)\n"
    options = MigrateOptions(entry="t.py", precision_mode="force_fp32")
    migrated = migrate_text(before, options)
    out = migrated.output.decode()
    assert out.index("def npu_session_config(") < out.index("npu_keras_sess = ")
    assert out.endswith("model.fit(x, y)\nclose_session(npu_keras_sess)\n")
    again = migrate_text(out, options)
    assert again.output.decode() == out


def test_one_line_main_block_is_reported():
    before = KERAS_MAIN + 'if __name__ == "__main__": main()\n'
    migrated = assert_migrates(before, before)
    [finding] = rule_findings(migrated, "keras_session")
    assert finding.severity is Severity.WARNING


def test_keras_layers_alone_do_not_need_a_session():
    before = (
        "import tensorflow as tf\n\n"
        "def model_fn(features):\n    return tf.keras.layers.Dense(1)(features)\n\n"
        "if __name__ == '__main__':\n    run()\n"
    )
    migrated = assert_migrates(before, before)
    assert not rule_findings(migrated, "keras_session")


def test_fit_of_a_non_keras_file_is_untouched():
    before = (
        "import tensorflow as tf\nfrom sklearn import svm\n\n"
        "if __name__ == '__main__':\n    clf = svm.SVC()\n    clf.fit(x, y)\n"
    )
    migrated = assert_migrates(before, before, STRATEGY)
    assert not rule_findings(migrated, "keras_session")


# -- --distributed tf_strategy ------------------------------------------------------------------
def test_compile_optimizer_and_fit_callbacks_are_distributed_with_tf_strategy():
    before = (
        "import tensorflow as tf\n"
        "model = tf.keras.Sequential()\n"
        "model.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss='mse')\n"
        "model.fit(x, y, callbacks=[cb])\n"
        "model.fit_generator(gen, 10)\n"
    )
    after = (
        IMPORT + "import tensorflow as tf\n"
        "model = tf.keras.Sequential()\n"
        "model.compile(optimizer=npu_distributed_optimizer_wrapper("
        "tf.keras.optimizers.Adam(0.1)), loss='mse')\n"
        "model.fit(x, y, callbacks=npu_callbacks_append(callbacks_list=[cb]))\n"
        "model.fit_generator(gen, 10, callbacks=npu_callbacks_append())\n"
    )
    assert_migrates(before, after, MigrateOptions(distributed=Distributed.TF_STRATEGY, entry="x"))


def test_string_and_default_optimizers_are_distributed_for_models_from_functions():
    before = (
        "import tensorflow as tf\n\n"
        "def build():\n    m = tf.keras.models.Sequential()\n    return m\n\n"
        "def main():\n    model = build()\n    model.compile('adam', 'mse')\n"
        "    model.compile(loss='mse')\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    migrated = migrate_text(before, STRATEGY)
    out = migrated.output.decode()
    assert "model.compile(npu_distributed_optimizer_wrapper('adam'), 'mse')" in out
    default = 'optimizer=npu_distributed_optimizer_wrapper("rmsprop")'
    assert f"model.compile(loss='mse', {default})" in out
    assert migrate_text(out, STRATEGY).output.decode() == out


def test_optimizers_already_distributed_are_left_alone():
    before = (
        "import tensorflow as tf\nimport horovod.keras as hvd\n"
        "model = tf.keras.Sequential()\n"
        "opt = tf.keras.optimizers.SGD(0.1)\nopt = hvd.DistributedOptimizer(opt)\n"
        "model.compile(optimizer=opt, loss='mse', callbacks=None)\n"
        "model.compile(optimizer=npu_distributed_optimizer_wrapper('sgd'))\n"
        "model.fit(x, y, callbacks=npu_callbacks_append())\n"
    )
    migrated = migrate_text(before, STRATEGY)
    out = migrated.output.decode()
    assert "model.compile(optimizer=opt, loss='mse', callbacks=None)\n" in out
    assert "npu_distributed_optimizer_wrapper(npu_distributed_optimizer_wrapper" not in out
    assert "npu_callbacks_append(callbacks_list=npu_callbacks_append" not in out


def test_unproven_models_and_odd_callbacks_are_reported():
    before = (
        "import tensorflow as tf\n"
        "def train(model):\n    model.compile('adam', 'mse')\n    model.fit(x, y)\n"
        "m = tf.keras.Sequential()\nm.fit(x, y, callbacks=(cb,))\n"
    )
    migrated = assert_migrates(before, before, STRATEGY)
    found = [(f.line, f.severity) for f in rule_findings(migrated, "keras_session")]
    assert (3, Severity.WARNING) in found  # compile on an unknown receiver
    assert (4, Severity.INFO) in found  # fit on an unknown receiver
    assert (6, Severity.WARNING) in found  # a tuple of callbacks


def test_standalone_keras_string_optimizer_is_reported_not_wrapped():
    before = (
        "import keras\nm = keras.models.Sequential()\n"
        "m.compile('adam', 'mse')\nm.compile(keras.optimizers.Adam())\n"
    )
    migrated = migrate_text(before, STRATEGY)
    out = migrated.output.decode()
    assert "m.compile('adam', 'mse')\n" in out
    assert "m.compile(npu_distributed_optimizer_wrapper(keras.optimizers.Adam()))\n" in out
    assert any("tf.keras optimizer" in f.message for f in rule_findings(migrated, "keras_session"))


def test_optimizers_are_not_wrapped_without_tf_strategy():
    before = (
        "import tensorflow as tf\nm = tf.keras.Sequential()\n"
        "m.compile(tf.keras.optimizers.Adam(), 'mse')\nm.fit(x, y)\n"
    )
    for mode in (Distributed.AUTO, Distributed.NONE, Distributed.HOROVOD):
        assert_migrates(before, before, MigrateOptions(distributed=mode))


def test_entry_script_with_precision_mode_after_definitions_inserts_plainly():
    before = (
        "import tensorflow as tf\n\ndef f():\n    pass\n\n"
        "model = tf.keras.Sequential()\nmodel.fit(x, y)\n"
    )
    options = MigrateOptions(entry="t.py", precision_mode="force_fp32")
    out = migrate_text(before, options).output.decode()
    setup = "npu_keras_sess = set_keras_session_npu_config(config=npu_session_config())\n"
    assert f"    pass\n\n{setup}" in out
    assert migrate_text(out, options).output.decode() == out


def test_horovod_keras_entry_script_keeps_both_rewrites():
    before = (
        "import tensorflow as tf\nimport horovod.keras as hvd\nhvd.init()\n"
        "model = tf.keras.Sequential()\nmodel.fit(x, y)\n"
    )
    migrated = migrate_text(before, MigrateOptions(entry="t.py"))
    out = migrated.output.decode()
    assert "hvd.init()" not in out
    assert "npu_keras_sess = set_keras_session_npu_config()\n" in out
    assert out.endswith("model.fit(x, y)\nclose_session(npu_keras_sess)\n")
    assert not [f for f in migrated.result.findings if "overlaps" in f.message]


def test_horovod_main_block_nests_the_keras_session_inside_the_npu_resources():
    before = (
        "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\n\n"
        "def main(_):\n    hvd.init()\n    tf.keras.Sequential().fit(x, y)\n\n"
        "if __name__ == '__main__':\n    tf.app.run(main)\n"
    )
    migrated = migrate_text(before)
    out = migrated.output.decode()
    assert out.endswith(
        "if __name__ == '__main__':\n"
        "    (npu_sess, npu_shutdown) = init_resource()\n"
        "    npu_keras_sess = set_keras_session_npu_config()\n"
        "    try:\n        tf.app.run(main)\n"
        "    finally:\n        close_session(npu_keras_sess)\n"
        "        shutdown_resource(npu_sess, npu_shutdown)\n        close_session(npu_sess)\n"
    )
    assert migrate_text(out).output.decode() == out


def test_precision_mode_adds_no_helper_where_no_session_is_added():
    library = "import tensorflow as tf\nm = tf.keras.Sequential()\n"
    one_line = KERAS_MAIN + 'if __name__ == "__main__": main()\n'
    options = MigrateOptions(precision_mode="allow_mix_precision")
    for before in (library, one_line):
        assert migrate_text(before, options).output.decode() == before
