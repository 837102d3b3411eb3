"""``python -m testbed.cluster up|down|status [--state DIR]``: the simulated cluster for a user.

``up`` starts it detached (it keeps running after the command) and prints how to use it;
``down`` stops every process recorded in the state folder; ``status`` says what runs.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from testbed.cluster.controlplane import DEFAULT_STATE, ControlPlane


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.cluster", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("up", "down", "status"))
    parser.add_argument("--state", type=Path, default=DEFAULT_STATE, help="state folder (default: %(default)s)")
    parser.add_argument("--no-layout", action="store_true", help="control plane only, no nodes/GPU Operator")
    args = parser.parse_args(argv)

    if args.command == "down":
        killed = ControlPlane(args.state).stop()
        print(f"test bed stopped ({args.state})" + (f"; had to kill {killed}" if killed else ""))
        return 0

    if args.command == "status":
        running = ControlPlane(args.state).running()
        info = args.state / "cluster.json"
        print(f"running: {', '.join(running) or 'nothing'}")
        if running and info.exists():
            print(info.read_text().strip())
        return 0 if running else 1

    from testbed.cluster.bed import TestBed  # needs the kubernetes client
    bed = TestBed(args.state, attached=False)
    bed.start(layout=not args.no_layout)
    info = json.loads((args.state / "cluster.json").read_text())
    print(f"test bed up in {info['timings_s'].get('ready', 0):.1f}s: Kubernetes "
          f"{info['versions']['K8S_VERSION']} at {bed.server}")
    print(f"  export KUBECONFIG={bed.kubeconfig}")
    print(f"  run the suite against it: .venv/bin/pytest -m cluster --kubeconfig={bed.kubeconfig}")
    print("  stop it: make testbed-down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
