"""``tf.contrib.framework`` variable queries used to build restore lists for fine-tuning.

TF 2.15 kept ``get_or_create_global_step`` (mapped in the table) but not these collection
filters, which slim-style trainers use with ``tf.train.Saver(var_list=...)``.
"""

from __future__ import annotations

from typing import Any


def get_variables(
    scope: Any = None, suffix: str | None = None, collection: str = "variables"
) -> list[Any]:
    """Variables of ``collection`` whose name matches ``scope`` (a prefix regex) and ``suffix``.

    ``scope`` may be a string or a ``VariableScope``; ``suffix`` matches the end of the name
    before ``:0``. The default collection is ``tf.GraphKeys.GLOBAL_VARIABLES``.
    """
    import tensorflow.compat.v1 as tf

    if isinstance(scope, tf.VariableScope):
        scope = scope.name
    if suffix is not None:
        if ":" not in suffix:
            suffix += ":"
        scope = (scope or "") + ".*" + suffix
    return list(tf.get_collection(collection, scope))


def get_model_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    """Like :func:`get_variables` over ``tf.GraphKeys.MODEL_VARIABLES``."""
    return get_variables(scope, suffix, "model_variables")


def get_variables_to_restore(
    include: list[str] | tuple[str, ...] | None = None,
    exclude: list[str] | tuple[str, ...] | None = None,
) -> list[Any]:
    """Global variables under any ``include`` scope (default: all) and under no ``exclude`` one.

    Raises:
        TypeError: ``include`` or ``exclude`` is given but is not a list or tuple (a bare
            string would silently be iterated character by character).
    """
    if include is not None and not isinstance(include, (list, tuple)):
        raise TypeError(f"include is provided but is not a list or a tuple: {include!r}")
    if exclude is not None and not isinstance(exclude, (list, tuple)):
        raise TypeError(f"exclude is provided but is not a list or a tuple: {exclude!r}")
    if include is None:
        chosen = get_variables()
    else:
        chosen = [v for scope in include for v in get_variables(scope)]
    dropped = {id(v) for scope in exclude or () for v in get_variables(scope)}
    return [v for v in chosen if id(v) not in dropped]
