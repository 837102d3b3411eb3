"""Command line of the simulated hosts: ``python -m testbed.hosts up|down|list|render``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed.hosts import net, rootfs, scenarios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.hosts", description=__doc__)
    parser.add_argument("--state", type=Path, default=net.DEFAULT_STATE,
                        help="folder for roots, keys, configs and logs (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="build the scenarios and serve them over SSH (stays up)")
    up.add_argument("names", nargs="*", help="scenarios to serve (default: all)")
    sub.add_parser("down", help="stop the sshds, delete namespaces and links")
    sub.add_parser("list", help="scenario names with what each simulates")
    render = sub.add_parser("render", help="render one scenario into a root for chroot")
    render.add_argument("name")
    render.add_argument("root", type=Path)
    args = parser.parse_args(argv)

    if args.command == "list":
        for name in scenarios.names():
            print(f"{name:30} {scenarios.build(name).description}")
    elif args.command == "render":
        root = rootfs.render(scenarios.build(args.name), args.root)
        print(f"--hosts=chroot://{root}")
    elif args.command == "down":
        net.sweep(args.state)
        print("simulated hosts stopped")
    else:
        names = args.names or scenarios.names()
        unknown = sorted(set(names) - set(scenarios.names()))
        if unknown:
            parser.error(f"unknown scenarios: {', '.join(unknown)}")
        nodes = net.SshNodes(names, args.state)
        try:
            nodes.start()
        except BaseException:
            nodes.stop()
            raise
        print(f"{len(nodes.nodes)} simulated hosts up. Run the node suite with:\n"
              f"  --hosts={nodes.hosts_arg} \\\n  --ssh-config={nodes.ssh_config}\n"
              f"e.g. ssh -F {nodes.ssh_config} {names[0]} nvidia-smi\n"
              "Stop them with: make hosts-down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
