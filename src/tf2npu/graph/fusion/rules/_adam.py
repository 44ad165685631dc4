"""The Adam update math of BERT's ``AdamWeightDecayOptimizer`` (shared by two rules).

Per variable the optimizer computes, with Python-float hyper-parameters (Consts in the graph)::

    next_m = beta_1 * m + (1 - beta_1) * grad
    next_v = beta_2 * v + (1 - beta_2) * square(grad)
    update = next_m / (sqrt(next_v) + epsilon)  [+ weight_decay_rate * param]
    next_param = param - learning_rate * update

and assigns ``next_param``, ``next_m`` and ``next_v``. The fused op returns the three values;
the graph's own Assign ops keep writing them (their inputs move to the fused outputs).
"""

from __future__ import annotations

from tf2npu.graph.fusion.pattern import Const, Match, Op, Pattern, Var, dtype_of, match
from tf2npu.graph.fusion.rewrite import Fusion, NewNode
from tf2npu.graph.fusion.rules._common import checked
from tf2npu.graph.ir import Graph, Node

_ADD = {"Add", "AddV2"}
_SCALARS = ("lr", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "epsilon")


def _mul(label: str, a: Pattern, b: Pattern) -> Op:
    return Op(label, {"Mul"}, (a, b), commutative=True)


def _update() -> Op:
    grad = Var("grad")
    next_m = Op(
        "next_m",
        _ADD,
        (_mul("m_decay", Const("beta1"), Var("m")), _mul("m_grad", Const("one_minus_beta1"), grad)),
        commutative=True,
    )
    square = Op("square", {"Square"}, (grad,))
    next_v = Op(
        "next_v",
        _ADD,
        (
            _mul("v_decay", Const("beta2"), Var("v")),
            _mul("v_grad", Const("one_minus_beta2"), square),
        ),
        commutative=True,
    )
    denominator = Op(
        "denominator", _ADD, (Op("sqrt", {"Sqrt"}, (next_v,)), Const("epsilon")), commutative=True
    )
    return Op("update", {"RealDiv"}, (next_m, denominator))


def pattern(decay: bool) -> Op:
    """The pattern ending at ``next_param`` (the Sub), with or without weight decay."""
    update: Op = _update()
    if decay:
        update = Op(
            "decayed",
            _ADD,
            (update, _mul("decay", Const("weight_decay"), Var("var"))),
            commutative=True,
        )
    return Op("next_param", {"Sub"}, (Var("var"), _mul("step", Var("lr"), update)))


def adam_fusion(graph: Graph, root: Node, pat: Op, op: str, tag: str) -> Fusion | None:
    """The fused ``op`` for a match of ``pat`` at ``root``, with outputs (v, m, var)."""
    dtype = dtype_of(root)
    m: Match | None = match(graph, root, pat) if dtype is not None else None
    if m is None or dtype is None:
        return None
    names: tuple[str, ...] = ("grad", "v", "m", "var", *_SCALARS)
    if "weight_decay" in m.tensors:
        names = (*names, "weight_decay")
    inputs = tuple(m.tensors[n] for n in names)
    step = NewNode(tag, op, inputs, {}, ("new_v", "new_m", "new_var"), npu_dtype=dtype)
    carried = {m.nodes["next_v"].name: {0: 0}, m.nodes["next_m"].name: {0: 1}}
    return checked(graph, m, [step], outputs={0: 2}, interior_outputs=carried)
