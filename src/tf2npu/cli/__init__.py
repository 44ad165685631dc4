"""The ``tf2npu`` command line: a thin layer of subcommands over the libraries."""
