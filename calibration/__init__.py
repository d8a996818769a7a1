"""Statistics collection and parameter choice."""
