"""Variables read by the input pipeline but initialised on the device (seed 000 case 02).

The dataset-initialisation run (``iterator.initializer``: a ``MakeIterator`` and everything
upstream of it) gets no candidates, so a variable the pipeline reads (``dataset.batch(v)``,
a ``tf.Variable`` captured by a ``map`` function) is read on the host, from TF's own resource
manager. The variable's initialiser (``Assign``/``AssignVariableOp``) runs in its own
``session.run``, where the op library alone decides its side: a variable and an initialiser
the device supports are created and initialised in the device's variable manager. The host
copy is never initialised and the iterator initialisation fails: "Error while reading resource
variable ... Resource localhost/.../N10tensorflow3VarE does not exist" (a ref variable:
"Attempting to use uninitialized value").

Nothing fails when the variable stays on the host (``variable_placement=Host``), when one of
its initialisers runs in the dataset-initialisation run itself, or when no initialiser is in
the graph (nothing to say where the value lives). Mixed compute does not help: variables are
not gray, so their initialisation still goes to the device.
"""

from __future__ import annotations

from dataclasses import dataclass

from tf2npu.graph.decisions import Diagnostics, Placement
from tf2npu.graph.ir import Graph, Node
from tf2npu.graph.placement.predicates import Support
from tf2npu.graph.placement.propagation import OutEdges
from tf2npu.graph.placement.tensors import EdgeTypes

__all__ = ["INITIALIZERS", "PipelineVariable", "find_pipeline_variables", "report"]

#: Variable creators whose value a reader takes from the resource manager of its own device.
CREATORS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
#: Ops that give a variable its value when they take its ref or handle as input 0.
INITIALIZERS = frozenset({"Assign", "AssignVariableOp"})
_DATASET_INIT = "dataset_init_graph"


@dataclass(frozen=True, slots=True)
class PipelineVariable:
    """A variable initialised on the device and read by the host input pipeline."""

    variable: str
    variable_op: str
    reader: str
    reader_op: str
    initializer: str


def find_pipeline_variables(
    graph: Graph,
    support: Support,
    final: dict[str, Placement],
    types: EdgeTypes,
    edges: OutEdges,
) -> list[PipelineVariable]:
    """Each variable the dataset-initialisation run reads but the device initialises, in order."""
    found: list[PipelineVariable] = []
    for node in graph:
        if node.op not in CREATORS or not _in_pipeline(final, node):
            continue
        users = [user for user, _, ref in edges.get(node.name, ()) if ref.index == 0]
        inits = [u for u in users if u.op in INITIALIZERS and u.inputs[0].node == node.name]
        readers = [u for u in users if u not in inits and _in_pipeline(final, u)]
        if not inits or not readers:
            continue
        if support.node(node, types) is not None or any(
            _in_pipeline(final, i) or support.node(i, types) is not None for i in inits
        ):
            continue  # the value is set on the host, where the pipeline reads it
        reader = readers[0]
        found.append(PipelineVariable(node.name, node.op, reader.name, reader.op, inits[0].name))
    return found


def report(variables: list[PipelineVariable], diagnostics: Diagnostics) -> None:
    """One ``variable_in_preprocessing`` error per variable, naming its reader and the fix."""
    for var in variables:
        diagnostics.error(
            "variable_in_preprocessing",
            f"variable {var.variable!r} ({var.variable_op}) is initialised on the device (its "
            f"initialiser {var.initializer!r} runs there in its own session.run) but "
            f"{var.reader!r} ({var.reader_op}) reads it in the input pipeline on the host, "
            "whose copy of the variable was never initialised, so the iterator initialisation "
            f"fails with 'Error while reading resource variable {var.variable}'",
            node=var.variable,
            fix=(
                f"replace the variable {var.variable!r} the input pipeline reads by a constant: "
                "a Python value or tf.constant, e.g. `batch_size = 64` then "
                "`dataset.batch(batch_size, drop_remainder=True)`"
            ),
        )


def _in_pipeline(final: dict[str, Placement], node: Node) -> bool:
    placement = final.get(node.name)
    return placement is not None and placement.reason == _DATASET_INIT
