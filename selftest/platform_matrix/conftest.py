"""The platform matrix's helpers come from the cluster checks' selftests (cluster_harness)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cluster_checks"))
