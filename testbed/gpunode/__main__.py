"""python -m testbed.gpunode stage [--operator] | run --payload P [--operator-payload Q] --out DIR [--no-faults]"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.gpunode")
    sub = parser.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("stage", help="build what is missing and write .gpunode/payload.tar.xz (here)")
    st.add_argument("--operator", action="store_true",
                    help="write .gpunode/operator.tar.xz instead: the GPU Operator's part (issue #22 part 3)")
    run = sub.add_parser("run", help="stand the node up, run the suite and the faults (on the GPU machine)")
    run.add_argument("--payload", type=Path, required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--no-faults", action="store_true")
    run.add_argument("--operator-payload", type=Path, default=None,
                     help="run part 3: the GPU Operator deploys the GPU stack (no faults)")
    args = parser.parse_args(argv)
    if args.cmd == "stage":
        from testbed.gpunode import stage  # here only: Helm, pip, the build cache
        print(json.dumps(stage.stage_operator() if args.operator else stage.stage(), indent=2))
        return 0
    from testbed.gpunode import node       # the GPU machine: standard library + the payload
    return node.run(args.payload, args.out, faults=not args.no_faults, operator_payload=args.operator_payload)


if __name__ == "__main__":
    sys.exit(main())
