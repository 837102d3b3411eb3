"""Simulated GPU hosts reached over real SSH: scenarios, renderer, sshd per namespace (see README.md)."""
