"""Node layer library: the probe, typed facts, concurrent collection."""
