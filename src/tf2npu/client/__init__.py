"""The TF client of NPU ops: what ``npu_bridge`` and ``hccl`` call to put NPU ops into a graph.

A script's graph is built by TensorFlow; the NPU ops in it (``Gelu``, ``DropOutDoMask``,
``HcomAllReduce`` ...) are added here as calls a stock session runs, each with its gradient:

* :mod:`~tf2npu.client.ops`: :func:`~tf2npu.client.ops.emit`, and every NPU op as the client
  knows it (:data:`~tf2npu.client.ops.CLIENT_OPS`: the catalogue's definition and the function
  that builds its gradient, registered with TensorFlow in one loop);
* :mod:`~tf2npu.client.hcom`: the HCCL collectives of a multi-rank job (groups, keys, devices);
* :mod:`~tf2npu.client.groups`: the group and instance keys the ranks agree on;
* :mod:`~tf2npu.client.body_gradient`: the derivative of an op's CPU body, for the RNN ops;
* :mod:`~tf2npu.client.library`: adding traced functions to a TF graph's library.

The layer sits on the op catalogue (:mod:`tf2npu.graph.npu_ops`, which imports nothing of it)
and under the runtime (which runs the collectives it builds). TensorFlow is imported lazily.
"""
