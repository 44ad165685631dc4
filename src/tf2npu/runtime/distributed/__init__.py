"""Several ranks of one script on this machine, on TensorFlow's own collective runtime.

:mod:`~tf2npu.runtime.distributed.launch` starts and watches the ranks (no TensorFlow);
:mod:`~tf2npu.runtime.distributed.world` is each rank's gRPC server and session setup;
the HCCL ops they run are built by :mod:`tf2npu.client.hcom`.
See ``docs/distributed.md``.
"""
