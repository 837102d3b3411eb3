"""Run a command against a fresh Kubeflow test bed, stopping it afterwards whatever happens:

    python -m testbed.kubeflow run --state .state/demo-kubeflow [--default-password] -- CMD ...

CMD sees KUBECONFIG, GPUCONFORM_KUBEFLOW_PROFILE (a profile for the bed, written in the state
folder) and the accounts' password variables; ``{profile}`` and ``{kubeconfig}`` in CMD are
replaced by those paths. Exit status: CMD's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from testbed.kubeflow.bed import KubeflowBed
from testbed.kubeflow.stack import DEFAULT_PASSWORD


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.kubeflow")
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="start the bed, run CMD, stop the bed")
    run.add_argument("--state", default=".state/kubeflow")
    run.add_argument("--default-password", action="store_true",
                     help="give user@example.com the default password 12341234 (as the article does)")
    run.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = [c for c in args.command if c != "--"] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("run: give a command after --")
    state = Path(args.state).resolve()
    shutil.rmtree(state, ignore_errors=True)
    with KubeflowBed(state, attached=True, user_password=DEFAULT_PASSWORD if args.default_password else None) as bed:
        profile = bed.profile(state / "profile.yaml")
        subs = {"{profile}": str(profile), "{kubeconfig}": str(bed.cluster.kubeconfig)}
        for key, value in subs.items():
            command = [c.replace(key, value) for c in command]
        env = {**os.environ, **bed.env, "KUBECONFIG": str(bed.cluster.kubeconfig),
               "GPUCONFORM_KUBEFLOW_PROFILE": str(profile)}
        print(f"kubeflow test bed: {bed.stack.url} (CA {bed.stack.ca.bundle}); running: {' '.join(command)}",
              flush=True)
        return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
