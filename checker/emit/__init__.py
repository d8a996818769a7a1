"""Report emitters: text, json, sarif."""
