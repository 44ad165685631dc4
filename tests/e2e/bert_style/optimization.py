"""The training op, in the style of TF 1.x research code: a hand-written Adam with decoupled
weight decay (a ``tf.train.Optimizer`` subclass that updates its slots with ``tf.assign``), a
linear warmup followed by polynomial decay, and gradient clipping by global norm.

tf2npu's own test code, not third-party code.
"""

import re

import tensorflow as tf


def warmup_then_decay(base_rate, total_steps, warmup_steps):
    step = tf.train.get_or_create_global_step()
    rate = tf.train.polynomial_decay(
        tf.constant(base_rate, dtype=tf.float32, shape=[]), step, total_steps,
        end_learning_rate=0.0, power=1.0, cycle=False)
    if warmup_steps:
        step_f = tf.cast(tf.cast(step, tf.int32), tf.float32)
        warm = tf.cast(warmup_steps, tf.float32)
        warm_rate = base_rate * step_f / warm
        in_warmup = tf.cast(step_f < warm, tf.float32)
        rate = (1.0 - in_warmup) * rate + in_warmup * warm_rate
    return rate


def make_train_op(loss, base_rate, total_steps, warmup_steps, use_tpu):
    step = tf.train.get_or_create_global_step()
    optimizer = DecoupledWeightDecayAdam(
        learning_rate=warmup_then_decay(base_rate, total_steps, warmup_steps),
        decay_rate=0.01, skip_decay_for=["norm", "bias"])
    if use_tpu:
        optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)
    variables = tf.trainable_variables()
    grads, _ = tf.clip_by_global_norm(tf.gradients(loss, variables), clip_norm=1.0)
    update = optimizer.apply_gradients(zip(grads, variables, strict=True), global_step=step)
    # apply_gradients does not advance the step (as in BERT), so the train op does.
    return tf.group(update, [step.assign(step + 1)])


class DecoupledWeightDecayAdam(tf.train.Optimizer):
    """Adam whose weight decay is added to the update, not to the loss (AdamW)."""

    def __init__(self, learning_rate, decay_rate=0.0, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 skip_decay_for=None, name="DecoupledWeightDecayAdam"):
        super().__init__(False, name)
        self.learning_rate = learning_rate
        self.decay_rate = decay_rate
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.skip_decay_for = skip_decay_for or []

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        updates = []
        for grad, var in grads_and_vars:
            if grad is None or var is None:
                continue
            base = self._base_name(var.name)
            first = tf.get_variable(base + "/adam_first", var.shape.as_list(), tf.float32,
                                    trainable=False, initializer=tf.zeros_initializer())
            second = tf.get_variable(base + "/adam_second", var.shape.as_list(), tf.float32,
                                     trainable=False, initializer=tf.zeros_initializer())
            new_first = self.beta1 * first + (1.0 - self.beta1) * grad
            new_second = self.beta2 * second + (1.0 - self.beta2) * tf.square(grad)
            step = new_first / (tf.sqrt(new_second) + self.epsilon)
            if self._decays(base):
                step += self.decay_rate * var
            updates.extend([
                tf.assign(var, var - self.learning_rate * step),
                tf.assign(first, new_first),
                second.assign(new_second),
            ])
        return tf.group(*updates, name=name)

    def _decays(self, base):
        return self.decay_rate > 0 and not any(re.search(p, base) for p in self.skip_decay_for)

    @staticmethod
    def _base_name(name):
        match = re.match("^(.*):\\d+$", name)
        return match.group(1) if match is not None else name
