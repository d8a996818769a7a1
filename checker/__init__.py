"""The checker: numbered rules over typed models (see proposal/)."""
