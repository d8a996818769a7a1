"""The conformance suite: cases a vendor runtime runs, and their runner."""
