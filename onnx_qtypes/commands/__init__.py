"""One module per ``onnx-qtypes`` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``."""
