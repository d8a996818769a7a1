"""The execution-case generator's modules (see ../execution_cases.py)."""
