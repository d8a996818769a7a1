import sys

from onnx_qtypes.cli import main

sys.exit(main())
