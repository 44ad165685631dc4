"""NPU session options: the option table, parsing from every source, validation, and the
fusion-switch and mixlist file loaders. Imports no TensorFlow; TF objects are duck-typed."""
