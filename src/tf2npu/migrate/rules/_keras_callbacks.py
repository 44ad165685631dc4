"""Source text of the Keras callbacks that stand in for Horovod's in migrated scripts.

Ascend has no counterpart of Horovod's metric-averaging and learning-rate callbacks, so the
``horovod_keras`` rule writes these plain Keras callbacks into the migrated file. Their behaviour
follows Horovod's documentation: the warmup goes from ``initial_lr / size`` to ``initial_lr``
as ``lr(epoch) = initial_lr / size * (epoch * (size - 1) / warmup_epochs + 1)``, adjusted every
batch with the fractional epoch; a schedule multiplies ``initial_lr`` by a constant or by a
function of the epoch between ``start_epoch`` and ``end_epoch`` (per epoch with ``staircase``,
else per batch); momentum correction scales the momentum by ``new_lr / old_lr`` for the batch in
which the rate changes; metric averaging replaces each logged epoch metric by its mean over the
ranks. ``$keras`` and ``$tf`` are the file's names for Keras and TensorFlow.
"""

from __future__ import annotations

from string import Template

METRIC_AVERAGE = "NpuMetricAverageCallback"
SCHEDULE = "NpuLearningRateScheduleCallback"
WARMUP = "NpuLearningRateWarmupCallback"

_METRIC_AVERAGE = Template('''\
class NpuMetricAverageCallback($keras.callbacks.Callback):
    """Horovod's MetricAverageCallback on HCCL (by tf2npu): epoch metrics averaged over ranks."""

    def __init__(self):
        super(NpuMetricAverageCallback, self).__init__()
        self._averages = dict()

    def on_epoch_end(self, epoch, logs=None):
        if not logs or get_rank_size() <= 1:
            return
        names = tuple(sorted(logs))
        if names not in self._averages:
            values = $tf.placeholder($tf.float32, [len(names)])
            self._averages[names] = (values, npu_allreduce(values))
        values, mean = self._averages[names]
        feed = [float(logs[name]) for name in names]
        averaged = $keras.backend.get_session().run(mean, feed_dict={values: feed})
        logs.update(zip(names, averaged.tolist()))''')

_SCHEDULE = Template('''\
class NpuLearningRateScheduleCallback($keras.callbacks.Callback):
    """Horovod's LearningRateScheduleCallback in plain Keras (by tf2npu)."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super(NpuLearningRateScheduleCallback, self).__init__()
        self.initial_lr = initial_lr
        self.multiplier = multiplier if callable(multiplier) else (lambda epoch: multiplier)
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = 0
        self._momentum = None

    def _active(self, epoch):
        return epoch >= self.start_epoch and (self.end_epoch is None or epoch < self.end_epoch)

    def _steps(self):
        steps = self.steps_per_epoch or self.params.get("steps")
        if steps:
            return steps
        return -(-self.params["samples"] // self.params["batch_size"])

    def _set_lr(self, epoch):
        optimizer = self.model.optimizer
        old = $keras.backend.get_value(optimizer.lr)
        new = self.initial_lr * self.multiplier(epoch)
        $keras.backend.set_value(optimizer.lr, new)
        if self.momentum_correction and hasattr(optimizer, "momentum") and old:
            self._momentum = $keras.backend.get_value(optimizer.momentum)
            $keras.backend.set_value(optimizer.momentum, self._momentum * new / old)

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch
        if self.staircase and self._active(epoch):
            self._set_lr(epoch)

    def on_batch_begin(self, batch, logs=None):
        if not self.staircase and self._active(self.current_epoch):
            self._set_lr(self.current_epoch + float(batch) / self._steps())

    def on_batch_end(self, batch, logs=None):
        if self._momentum is not None:
            $keras.backend.set_value(self.model.optimizer.momentum, self._momentum)
            self._momentum = None

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = $keras.backend.get_value(self.model.optimizer.lr)''')

_WARMUP = Template('''\
class NpuLearningRateWarmupCallback(NpuLearningRateScheduleCallback):
    """Horovod's LearningRateWarmupCallback in plain Keras (by tf2npu)."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            size = get_rank_size()
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super(NpuLearningRateWarmupCallback, self).__init__(
            initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
            momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super(NpuLearningRateWarmupCallback, self).on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0:
            lr = $keras.backend.get_value(self.model.optimizer.lr)
            print("\\nEpoch %d: finished gradual learning rate warmup to %g." % (epoch + 1, lr))''')

_TEMPLATES = {METRIC_AVERAGE: _METRIC_AVERAGE, SCHEDULE: _SCHEDULE, WARMUP: _WARMUP}
NEEDS: dict[str, tuple[str, ...]] = {
    METRIC_AVERAGE: (METRIC_AVERAGE,),
    SCHEDULE: (SCHEDULE,),
    WARMUP: (SCHEDULE, WARMUP),
}
"""The helper classes each callback needs, in definition order (the warmup is a schedule)."""


def helper_lines(name: str, keras: str, tf: str) -> list[str]:
    """The lines of helper class ``name`` written against the file's ``keras`` and ``tf``."""
    return _TEMPLATES[name].substitute(keras=keras, tf=tf).split("\n")
