"""Horovod becomes the NPU collective API (HCCL) when the script is migrated as distributed."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import ClassVar

from tf2npu.migrate.context import Arg, FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.index import Ref
from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import canonical
from tf2npu.migrate.options import Distributed
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._horovod_arguments import Arguments, constant
from tf2npu.migrate.rules._horovod_handles import Handles, find_handles, is_argument, scope_of
from tf2npu.migrate.rules._horovod_statements import Statements, import_names
from tf2npu.migrate.rules._keras_names import KerasNames, keras_names, standalone_keras
from tf2npu.migrate.rules._patches import record, removed
from tf2npu.migrate.rules._renames import apply_renames
from tf2npu.migrate.tables.horovod import (
    ADVICE,
    ALLREDUCE,
    BROADCAST,
    BROADCAST_VALUE,
    BUILD_QUERIES,
    CALLBACK,
    DEFAULT_ADVICE,
    DROP_WHY,
    HOOK,
    INIT,
    KERAS_ALLREDUCE,
    OPTIMIZER,
    RANK_INDEX,
    TUNING,
)

HOOK_MODULE_IMPORT = "from npu_bridge.estimator.npu.npu_hook import broadcast_global_variables"
"""``npu_init`` does not re-export ``broadcast_global_variables``; its real home does."""


def _is_hvd(name: str) -> bool:
    return name == "hvd" or name.startswith("hvd.")


def _advice(name: str) -> str:
    for candidate in (name, name.replace("hvd.keras.", "hvd.", 1)):
        parts = candidate.split(".")
        for n in range(len(parts), 0, -1):
            found = ADVICE.get(".".join(parts[:n]))
            if found is not None and (n > 1 or candidate == "hvd"):
                return found
    return DEFAULT_ADVICE


def _root_name(node: ast.expr) -> ast.Name | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _module_names(ctx: FileContext, imports: list[ast.Import | ast.ImportFrom]) -> dict[str, str]:
    """Names the Horovod imports bind to Horovod modules, with their canonical prefix."""
    found: dict[str, str] = {}
    for stmt in imports:
        scope = ctx.index.scope_at(stmt)
        for name, horovod in import_names(stmt):
            target = ctx.index.resolver.resolve_name(name, scope) if horovod else None
            if target is not None and canonical(target).split(".")[0] == "hvd":
                found[name] = canonical(target)
    return found


@register
class Horovod(Rule):
    """Horovod calls become the NPU collective API; the Horovod import goes when nothing needs it.

    Applies with ``--distributed auto`` (when the file uses Horovod) and ``--distributed
    horovod``. ``hvd.init()`` is removed (``init_resource()``, added by the ``entry_point`` rule,
    initialises HCCL); ``hvd.rank/local_rank/size/local_size`` become the HCCL queries
    ``get_rank_id/get_local_rank_id/get_rank_size/get_local_rank_size`` (also in
    ``dataset.shard(hvd.size(), hvd.rank())``); ``hvd.DistributedOptimizer(opt)`` becomes
    ``NPUDistributedOptimizer(opt)``, or, for Keras Horovod and Keras optimizers,
    ``npu_distributed_optimizer_wrapper(opt)`` (it patches the optimizer in place, so ``lr`` and
    ``momentum`` stay its attributes, as with Horovod). Horovod-only options are removed and
    reported: ``compression=`` (and a variable that only held the compression choice),
    ``sparse_as_dense=``, ``op=hvd.Average`` (the NPU default) and ``op=hvd.Adasum`` (no NPU
    Adasum: gradients are averaged; a warning says so). ``BroadcastGlobalVariablesHook(root)``
    becomes ``NPUBroadcastGlobalVariablesHook(root, index=<this rank>)``, the Keras callback
    ``NPUBroadcastGlobalVariablesCallback(root)``, ``hvd.broadcast_global_variables(root)`` the
    adapter's ``broadcast_global_variables(root, index=...)``, ``hvd.broadcast(t, root)``
    ``hccl_ops.broadcast([t], root)[0]`` and ``hvd.allreduce(t)`` ``npu_allreduce(t)`` (mean;
    ``average=False`` / ``op=hvd.Sum`` give ``reduction="sum"``). Keras Horovod's
    ``broadcast(value, root)`` and ``allreduce(value)`` take and return values: the HCCL
    collective of ``tf.constant(value)`` is evaluated in the Keras session. Build queries
    (``hvd.nccl_built()``, ``mpi_enabled()``, ...) become ``False``: HCCL does the collectives.
    A GPU pinning ``config.gpu_options.visible_device_list = str(hvd.local_rank())`` is removed.

    Horovod passed around as a value (NVIDIA's BERT: ``def input_fn_builder(..., hvd=None)``
    called with ``hvd=None if not FLAGS.horovod else hvd``): a parameter named like the Horovod
    import (or ``hvd``) whose every use is an attribute, a test (``is None``, truth) or passing
    it on is a *handle*; its attribute uses are rewritten as above, and the module passed as an
    argument becomes ``True`` (an INFO finding when it goes to a handle of this file, else a
    WARNING: the callee must be migrated too). A module global assigned the Horovod module
    (NVIDIA ConvNets' ``utils/hvd_wrapper.py``: ``hvd_global_object = hvd``) is a handle in its
    own file too (``holder = hvd`` becomes ``holder = True``), and in the other files of the
    tree ``wrapper.hvd_global_object.X`` is Horovod's ``X`` (found before the files are migrated,
    :mod:`tf2npu.migrate.project`).

    The Horovod import is removed only when no use of it is left (and ``--keep-horovod-import``
    is not given); otherwise it stays and every remaining use is an error-level finding that
    says what to do instead. With ``--distributed
    none`` or ``tf_strategy`` nothing is rewritten and each Horovod use is reported.
    """

    name: ClassVar[str] = "horovod"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nimport horovod.tensorflow as hvd\n\nhvd.init()\n"
            "ds = ds.shard(hvd.size(), hvd.rank())\n"
            "opt = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.001 * hvd.size()))\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n\n"
            "ds = ds.shard(get_rank_size(), get_rank_id())\n"
            "opt = NPUDistributedOptimizer(tf.train.AdamOptimizer(0.001 * get_rank_size()))\n",
            "init removed, ranks and the optimizer mapped, the import removed",
        ),
        Example(
            "import os\nimport horovod.tensorflow as hvd\n"
            "hooks = [hvd.BroadcastGlobalVariablesHook(0)]\n",
            "from npu_bridge.npu_init import *\nimport os\n"
            "hooks = [NPUBroadcastGlobalVariablesHook(0, index=int(os.getenv('RANK_ID', '0')))]\n",
            "the broadcast hook also needs this process's rank",
        ),
        Example(
            "import horovod.keras as hvd\n"
            "compression = hvd.Compression.fp16 if fp16 else hvd.Compression.none\n"
            "opt = hvd.DistributedOptimizer(opt, compression=compression)\n"
            "callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0)]\n",
            "from npu_bridge.npu_init import *\nopt = npu_distributed_optimizer_wrapper(opt)\n"
            "callbacks = [NPUBroadcastGlobalVariablesCallback(0)]\n",
            "Keras Horovod (the dropped compression is reported)",
        ),
        Example(
            "import horovod.tensorflow as hvd\n"
            "opt = hvd.DistributedOptimizer(opt, op=hvd.Adasum if adasum else hvd.Average)\n"
            "step = hvd.broadcast(step, 0)\nscale = hvd.local_size() if hvd.nccl_built() else 1\n",
            "from npu_bridge.npu_init import *\nopt = NPUDistributedOptimizer(opt)\n"
            "step = hccl_ops.broadcast([step], 0)[0]\n"
            "scale = get_local_rank_size() if False else 1\n",
            "Adasum is reported and dropped (gradients are averaged); no NCCL on the NPU",
        ),
        Example(
            "import horovod.tensorflow as hvd\n\ndef input_fn(d, hvd=None):\n"
            "    return d.shard(hvd.size(), hvd.rank()) if hvd is not None else d\n\n"
            "ds = input_fn(d, hvd=None if single else hvd)\n",
            "from npu_bridge.npu_init import *\n\ndef input_fn(d, hvd=None):\n"
            "    return d.shard(get_rank_size(), get_rank_id()) if hvd is not None else d\n\n"
            "ds = input_fn(d, hvd=None if single else True)\n",
            "a parameter that receives the Horovod module and only uses it as Horovod",
        ),
        Example(
            "import horovod.tensorflow as hvd\nrank = hvd.rank()\nids = hvd.allgather(ids)\n",
            "from npu_bridge.npu_init import *\nimport horovod.tensorflow as hvd\n"
            "rank = get_rank_id()\nids = hvd.allgather(ids)\n",
            "a use without NPU equivalent keeps the import and is an error-level finding",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        holders = ctx.options.horovod_holders
        if "horovod" not in ctx.text and not holders:
            return  # every Horovod name resolves through a horovod import or a holder
        refs = [r for r in ctx.index.refs if _is_hvd(r.name)]
        imports = [
            node
            for node in ctx.index.nodes()
            if isinstance(node, (ast.Import, ast.ImportFrom))
            and any(horovod for _, horovod in import_names(node))
        ]
        handles = find_handles(ctx, _module_names(ctx, imports), holders)
        refs = sorted([*refs, *handles.refs], key=lambda r: ctx.span(r.node))
        if not refs and not imports:
            return
        mode = ctx.options.distributed
        if mode in (Distributed.NONE, Distributed.TF_STRATEGY):
            self._report_only(ctx, refs, mode)
            return
        _Migration(self.name, ctx, refs, imports, handles).run()

    def _report_only(self, ctx: FileContext, refs: list[Ref], mode: Distributed) -> None:
        if mode is Distributed.NONE:
            message, fix = (
                "not migrated: --distributed none",
                ("run with --distributed auto (or horovod) to migrate Horovod to the NPU API"),
            )
        else:
            message, fix = (
                "--distributed tf_strategy: Horovod left as is",
                (
                    "run with --distributed horovod to migrate Horovod, or replace it by a "
                    "tf.distribute strategy by hand"
                ),
            )
        for ref in refs:
            ctx.finding(self.name, ref.node, Severity.WARNING, f"{ref.name}: {message}", fix)


class _Migration:
    """One file's Horovod migration: rewrites first, then what is left decides the import."""

    def __init__(
        self,
        rule: str,
        ctx: FileContext,
        refs: list[Ref],
        imports: list[ast.Import | ast.ImportFrom],
        handles: Handles,
    ) -> None:
        self.rule = rule
        self.ctx = ctx
        self.refs = refs
        self.imports = imports
        self.handles = handles
        self.handle_names = {id(r.node): r.name for r in handles.refs}
        """Horovod names of the dotted expressions that reach Horovod through a handle."""
        self.reported: list[tuple[int, int]] = []
        """Spans of calls left as they are with a specific finding (uses inside need no other)."""
        self.arguments = Arguments(ctx, self.handle_names)
        self.statements = Statements(rule, ctx, imports, handles)

    def run(self) -> None:
        ctx = self.ctx
        ambiguous = self._ambiguous_names()
        for ref in self.refs:
            if ref.call is not None and not removed(ctx, *ctx.span(ref.call)):
                self._call(ref, ref.call)
        for ref in self.refs:
            if ref.name in ("hvd.local_rank", "hvd.keras.local_rank", "hvd.rank"):
                self.statements.gpu_pinning(ref)
        apply_renames(ctx, self.rule, self.refs)
        self.statements.dead_compression(self.refs)
        self._module_arguments(ambiguous)
        left = self._remaining(ambiguous)
        if left or ambiguous:
            for node, name in left:
                start, end = ctx.span(node)
                if not any(s <= start and end <= e for s, e in self.reported):
                    ctx.finding(self.rule, node, Severity.ERROR,
                                f"{name}: no NPU rewrite for this Horovod use; the Horovod "
                                "import is kept, so the script still needs Horovod",
                                _advice(name))  # fmt: skip
        elif ctx.options.keep_horovod_import:
            for stmt in self.imports:
                ctx.finding(self.rule, stmt, Severity.INFO,
                            "Horovod import kept (--keep-horovod-import) although no Horovod "
                            "use is left")  # fmt: skip
        else:
            self.statements.remove_imports()

    # -- the name bound to Horovod ------------------------------------------------------------
    def _ambiguous_names(self) -> set[str]:
        """Report Horovod import names also bound otherwise (their uses are not proven Horovod)."""
        ctx, resolver = self.ctx, self.ctx.index.resolver
        found: set[str] = set()
        for stmt in self.imports:
            scope = ctx.index.scope_at(stmt)
            for name, horovod in import_names(stmt):
                target = resolver.resolve_name(name, scope)
                if not horovod or (target is not None and target.split(".")[0] == "horovod"):
                    continue
                found.add(name)
                ctx.finding(self.rule, stmt, Severity.WARNING,
                            f"`{name}` is bound to Horovod here and to something else elsewhere "
                            "in the file, so its uses cannot be proven to be Horovod: not migrated",
                            f"bind `{name}` only by the Horovod import (a stand-in for machines "
                            "without Horovod can be a module imported in the `except ImportError` "
                            "branch), or migrate the uses by hand")  # fmt: skip
        return found

    # -- calls --------------------------------------------------------------------------------
    def _call(self, ref: Ref, call: ast.Call) -> None:
        name = ref.name
        if name in INIT:
            self._drop_statement_call(ref, call)
        elif name in OPTIMIZER:
            self._optimizer(ref, call)
        elif name == HOOK:
            self._broadcast(ref, call, "NPUBroadcastGlobalVariablesHook", with_index=True)
        elif name == CALLBACK:
            self._broadcast(ref, call, "NPUBroadcastGlobalVariablesCallback", with_index=False)
        elif name == BROADCAST:
            self._broadcast_function(ref, call)
        elif name == ALLREDUCE:
            self._allreduce(ref, call)
        elif name == KERAS_ALLREDUCE:
            self._keras_allreduce(ref, call)
        elif name in BROADCAST_VALUE:
            self._broadcast_value(ref, call)
        elif name in BUILD_QUERIES:
            self._build_query(ref, call)

    def _drop_statement_call(self, ref: Ref, call: ast.Call) -> None:
        ctx = self.ctx
        stmt = ctx.index.parent(call)
        plain = isinstance(stmt, ast.Expr) and stmt.value is call
        if call.args or call.keywords or not isinstance(stmt, ast.Expr) or not plain:
            self._unrewritten(
                ref,
                f"{ref.name}(...) is not a plain `{ref.name}()` statement",
                "remove it by hand: init_resource() initialises the NPU collectives",
            )
            return  # fmt: skip
        if self.statements.remove(stmt):
            verb = "initialises" if ref.name.endswith("init") else "shuts down"
            ctx.finding(self.rule, call, Severity.INFO,
                        f"{ref.name}() removed: init_resource() / shutdown_resource() in the "
                        f"entry script {verb} the NPU collectives (entry_point rule)")  # fmt: skip

    def _optimizer(self, ref: Ref, call: ast.Call) -> None:
        ctx = self.ctx
        opt = ctx.argument(call, 0, "optimizer")
        tuning, blocked = self.arguments.sort(call, ("optimizer", "name"), TUNING, 2, ref)
        drop: list[Arg] = list(tuning)
        if opt is None or blocked:
            why = blocked or "no optimizer argument"
            self._unrewritten(
                ref,
                f"{ref.name} not rewritten: {why}",
                "wrap the optimizer with NPUDistributedOptimizer(opt) "
                "(Keras: npu_distributed_optimizer_wrapper(opt)) by hand",
            )
            return  # fmt: skip
        keras = ref.name.startswith("hvd.keras.") or self.arguments.keras_optimizer(opt, ref)
        new = "npu_distributed_optimizer_wrapper" if keras else "NPUDistributedOptimizer"
        if keras:
            # Horovod keeps the optimizer's class (lr, momentum, ... stay attributes, which
            # Keras callbacks read); the wrapper patches the optimizer in place and has no name.
            name = ctx.argument(call, 1, "name")
            drop += [a for a in ctx.arguments(call) if a is name or getattr(a, "value", 0) is name]
        edits: list[Edit | None] = [
            ctx.replace(ref.node, new),
            *self.arguments.drop_edits(call, drop),
        ]
        if not keras and len(call.args) == 2:
            # NPUDistributedOptimizer's second parameter is is_weight_update_sharding.
            edits.append(ctx.insert_before(call.args[1], "name="))
        if self._patch(call, edits, npu=True):
            self._report_dropped(call, drop, new)

    def _broadcast(self, ref: Ref, call: ast.Call, new: str, with_index: bool) -> None:
        ctx = self.ctx
        root = ctx.argument(call, 0, "root_rank")
        drop, blocked = self.arguments.sort(call, ("root_rank",), frozenset({"device"}), 1, ref)
        if root is None or blocked:
            self._unrewritten(
                ref,
                f"{ref.name} not rewritten: {blocked or 'no root_rank'}",
                f"use {new}(root_rank) by hand",
            )
            return  # fmt: skip
        edits: list[Edit | None] = [
            ctx.replace(ref.node, new),
            *self.arguments.drop_edits(call, drop),
        ]
        if with_index:
            edits.append(self._append_index(call, root))
        if self._patch(call, edits, npu=True):
            if with_index:
                self._need_os(ref)
            self._report_dropped(call, drop, new)

    def _broadcast_function(self, ref: Ref, call: ast.Call) -> None:
        ctx = self.ctx
        root = ctx.argument(call, 0, "root_rank")
        drop, blocked = self.arguments.sort(call, ("root_rank",), frozenset(), 1, ref)
        module = ctx.index.resolver.module
        if root is None or blocked or drop or "broadcast_global_variables" in module.bindings:
            why = blocked or "the file defines its own broadcast_global_variables"
            self._unrewritten(
                ref,
                f"{ref.name} not rewritten: {why}",
                "call broadcast_global_variables(root_rank, index) from "
                "npu_bridge.estimator.npu.npu_hook by hand",
            )
            return  # fmt: skip
        edits: list[Edit | None] = [ctx.replace(ref.node, "broadcast_global_variables")]
        edits.append(self._append_index(call, root))
        if self._patch(call, edits, npu=True):
            self._need_os(ref)
            ctx.need_import(HOOK_MODULE_IMPORT)

    def _allreduce(self, ref: Ref, call: ast.Call) -> None:
        ctx = self.ctx
        tensor = ctx.argument(call, 0, "tensor")
        keep = ("tensor", "average", "op")
        drop, blocked = self.arguments.sort(call, keep, frozenset({"name", *TUNING}), 1, ref)
        reduction = self.arguments.reduction(call, ref)
        if tensor is None or blocked or reduction is None:
            why = blocked or "no tensor, or a reduction other than a plain average or sum"
            self._unrewritten(
                ref,
                f"{ref.name} not rewritten: {why}",
                "use npu_allreduce(tensor, reduction='mean' or 'sum') by hand",
            )
            return  # fmt: skip
        reported = list(drop)
        drop += [k for k in call.keywords if k.arg in ("average", "op")]
        edits: list[Edit | None] = [ctx.replace(ref.node, "npu_allreduce")]
        edits += self.arguments.drop_edits(call, drop)
        kw = ctx.keyword(call, "tensor")
        if kw is not None:
            start, _ = ctx.span(kw)
            edits.append(Edit(start, start + len("tensor"), "values"))
        if reduction == "sum":
            last = next(a for a in reversed(ctx.arguments(call)) if a not in drop)
            end = ctx.span(last)[1]
            edits.append(Edit(end, end, ', reduction="sum"'))
        if self._patch(call, edits, npu=True):
            self._report_dropped(call, reported, "npu_allreduce")

    def _broadcast_value(self, ref: Ref, call: ast.Call) -> None:
        """``hvd.broadcast(t, root)`` -> an HCCL broadcast (list in, list out) of ``t``.

        Keras Horovod's ``broadcast`` takes and returns a value, not a tensor: the broadcast is
        then run in the Keras session, as Horovod does.
        """
        ctx = self.ctx
        keras = ref.name.startswith("hvd.keras.")
        first = "value" if keras else "tensor"
        value, root = ctx.argument(call, 0, first), ctx.argument(call, 1, "root_rank")
        tuning = frozenset({"name", "ignore_name_scope"})
        _, blocked = self.arguments.sort(call, (first, "root_rank"), tuning, 2, ref)
        names = self._value_names(ref) if keras else None
        if value is None or root is None or blocked or (keras and names is None):
            why = blocked or ("`tf` is bound to another name" if keras and names is None
                              else "no value or root_rank")  # fmt: skip
            self._unrewritten(ref, f"{ref.name} not rewritten: {why}",
                              "use hccl_ops.broadcast([tensor], root_rank)[0] by hand")  # fmt: skip
            return
        tensor, root_text = ctx.segment(value), ctx.segment(root)
        if names is not None:
            tensor = f"{names.tf}.constant({tensor})"
        new = f"hccl_ops.broadcast([{tensor}], {root_text})[0]"
        if names is not None:
            new = f"{names.backend}.get_value({new})"
        if self._patch(call, [ctx.replace(call, new)], npu=True):
            if names is not None:
                names.import_tf(ctx)
            ctx.finding(self.rule, call, Severity.INFO,
                        f"{ref.name} -> an HCCL broadcast from rank {root_text}"
                        + (", run in the Keras session" if keras else ""))  # fmt: skip

    def _keras_allreduce(self, ref: Ref, call: ast.Call) -> None:
        """Keras Horovod's value all-reduce -> ``npu_allreduce`` of a constant, run by Keras."""
        ctx = self.ctx
        value = ctx.argument(call, 0, "value")
        _, blocked = self.arguments.sort(call, ("value", "average"), frozenset({"name"}), 1, ref)
        average = ctx.keyword(call, "average")
        reduction = "mean" if average is None or constant(average.value, True) else None
        if average is not None and constant(average.value, False):
            reduction = "sum"
        names = self._value_names(ref)
        if value is None or blocked or reduction is None or names is None:
            why = blocked or "no value, an unknown `average=`, or `tf` bound to another name"
            self._unrewritten(ref, f"{ref.name} not rewritten: {why}",
                              "use npu_allreduce(tf.constant(value)) and evaluate it in the "
                              "Keras session by hand")  # fmt: skip
            return
        extra = ', reduction="sum"' if reduction == "sum" else ""
        reduced = f"npu_allreduce({names.tf}.constant({ctx.segment(value)}){extra})"
        edit = ctx.replace(call, f"{names.backend}.get_value({reduced})")
        if self._patch(call, [edit], npu=True):
            names.import_tf(ctx)
            ctx.finding(self.rule, call, Severity.INFO,
                        f"{ref.name} -> npu_allreduce ({reduction}) of the value, run in the "
                        "Keras session")  # fmt: skip

    def _value_names(self, ref: Ref) -> KerasNames | None:
        """Names for a Keras-Horovod value collective (standalone Keras keeps its session)."""
        return keras_names(self.ctx, ref.scope, standalone_keras(self.imports))

    def _build_query(self, ref: Ref, call: ast.Call) -> None:
        if call.args or call.keywords:
            return  # the leftover use is reported with the others
        if self._patch(call, [self.ctx.replace(call, "False")]):
            self.ctx.finding(self.rule, call, Severity.INFO,
                             f"{ref.name}() -> False: on the NPU, HCCL does the collectives "
                             "(no NCCL, MPI, Gloo, DDL, oneCCL, CUDA or ROCm)")  # fmt: skip

    def _module_arguments(self, ambiguous: set[str]) -> None:
        """The Horovod module passed to a call becomes ``True`` (handles only test it)."""
        ctx, resolver = self.ctx, self.ctx.index.resolver
        for node in ctx.index.nodes():
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
                continue
            if node.id in ambiguous or id(node) in self.handles.plain:
                continue
            parents = self.handles.parents
            if not (is_argument(parents, node) or self._assigned_to_handle(node)):
                continue
            target = resolver.resolve_name(node.id, scope_of(ctx, parents, node))
            if target is None or canonical(target) not in ("hvd", "hvd.keras"):
                continue  # members (``hvd.Compression.fp16``) are not handles
            if self._patch(node, [ctx.replace(node, "True")]):
                known = self._passed_to_handle(node)
                ctx.finding(self.rule, node, Severity.INFO if known else Severity.WARNING,
                            "the Horovod module passed as an argument became True: "
                            + ("the receiving parameter only tests it and its Horovod calls "
                               "are now NPU calls" if known else
                               "the callee is not in this file"),
                            "" if known else "make sure the callee only tests it against None "
                            "and is migrated too (tf2npu migrates `hvd` parameters used that "
                            "way)")  # fmt: skip

    def _assigned_to_handle(self, node: ast.Name) -> bool:
        """``holder = hvd`` for a global this file uses as a handle."""
        stmt = self.handles.parents.get(id(node))
        return (
            isinstance(stmt, ast.Assign)
            and stmt.value is node
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id in self.handles.names
        )

    def _passed_to_handle(self, node: ast.Name) -> bool:
        """True when ``node`` is passed by keyword to a parameter this file treats as a handle."""
        parent = self.handles.parents.get(id(node))
        while isinstance(parent, ast.IfExp):
            parent = self.handles.parents.get(id(parent))
        if self._assigned_to_handle(node):
            return True
        return isinstance(parent, ast.keyword) and parent.arg in self.handles.names

    # -- edits ----------------------------------------------------------------------------------
    def _append_index(self, call: ast.Call, root: ast.expr) -> Edit:
        item: Arg = next((k for k in call.keywords if k.value is root), root)
        end = self.ctx.span(item)[1]
        return Edit(end, end, f", index={RANK_INDEX}")

    def _need_os(self, ref: Ref) -> None:
        # The npu_init star import happens to leak ``os``; a real import does not depend on that.
        if self.ctx.index.resolver.resolve_name("os", ref.scope) != "os":
            self.ctx.need_import("import os")

    def _report_dropped(self, call: ast.Call, drop: Sequence[Arg], new: str) -> None:
        if not drop:
            return
        labels = [a.arg if isinstance(a, ast.keyword) else "name" for a in drop]
        names = ", ".join(f"{label}=" for label in labels)
        why = [DROP_WHY[label] for label in labels if label in DROP_WHY]
        self.ctx.finding(self.rule, call, Severity.WARNING,
                         f"Horovod-only arguments removed ({names}): {new} has no such options"
                         + "".join(f"; {w}" for w in why),
                         "nothing to do unless you relied on them; HCCL tunes its own "
                         "communication")  # fmt: skip
        ref = self.ctx.index.by_call.get(id(call))
        op = self.ctx.keyword(call, "op")
        if (
            ref is not None
            and op is not None
            and "Adasum" in self.arguments.op_choices(op.value, ref)
        ):
            self.ctx.finding(self.rule, op, Severity.WARNING,
                             "op=Adasum removed: NPU all-reduce has no Adasum, so gradients are "
                             "averaged (op=Average) on every path",
                             "do not select Adasum; if the script scales the learning rate "
                             "differently for Adasum, use the averaging scale "
                             "(get_rank_size())")  # fmt: skip

    # -- what is left -------------------------------------------------------------------------
    def _remaining(self, ambiguous: set[str]) -> list[tuple[ast.AST, str]]:
        """Uses of the Horovod import names that survive the rewrite, with their API names.

        Names also bound to something else are left out: their uses are not proven Horovod.
        """
        ctx = self.ctx
        names = {n for stmt in self.imports for n, horovod in import_names(stmt) if horovod}
        names -= ambiguous
        by_root: dict[int, Ref] = {}
        for ref in self.refs:
            root = _root_name(ref.node)
            if root is not None:
                by_root[id(root)] = ref
        left: list[tuple[ast.AST, str]] = []
        for node in ctx.index.nodes():
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
                continue
            use = by_root.get(id(node))
            if (use is None and node.id not in names) or id(node) in self.handles.plain:
                continue
            if removed(ctx, *ctx.span(node)):
                continue
            left.append((use.node, use.name) if use is not None else (node, node.id))
        left.sort(key=lambda item: ctx.span(item[0]))
        return left

    def _unrewritten(self, ref: Ref, message: str, fix: str) -> None:
        self.reported.append(self.ctx.span(ref.call or ref.node))
        self.ctx.finding(self.rule, ref.node, Severity.ERROR, message, fix)

    def _patch(self, subject: ast.AST, edits: Sequence[Edit | None], npu: bool = False) -> bool:
        """Record the change unless an edit is impossible or overlaps an earlier patch."""
        return record(self.ctx, self.rule, subject, edits, npu)
