"""Command line of the simulated hosts: ``python -m testbed.hosts up|down|run|list|render``."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from testbed.hosts import net, rootfs, scenarios


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _run_group(cmd: list[str]) -> int:
    """Run ``cmd`` in its own process group; on interruption end that whole group, then re-raise."""
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        return proc.wait()
    except BaseException:
        for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
        raise


def main(argv: list[str] | None = None) -> int:
    # SIGTERM (CI cancelling, kill) unwinds like Ctrl-C, so the nodes are stopped either way.
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background
        signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = argparse.ArgumentParser(prog="python -m testbed.hosts", description=__doc__)
    parser.add_argument("--state", type=Path, default=net.DEFAULT_STATE,
                        help="folder for roots, keys, configs and logs (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="build the scenarios and serve them over SSH (stays up)")
    up.add_argument("names", nargs="*", help="scenarios to serve (default: all)")
    sub.add_parser("down", help="stop the sshds, delete namespaces and links")
    run = sub.add_parser("run", help="serve the scenarios while COMMAND runs with --hosts and "
                                     "--ssh-config appended, then stop them (even on failure)")
    run.add_argument("--names", default="", help="comma-separated scenarios (default: all)")
    run.add_argument("--copies", type=int, default=1,
                     help="serve each scenario N times as <name>-001... from one root (default: 1)")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND")
    sub.add_parser("list", help="scenario names with what each simulates")
    sub.add_parser("ssh-config", help="the path of the ssh_config naming the nodes (this checkout's state folder)")
    render = sub.add_parser("render", help="render one scenario into a root for chroot")
    render.add_argument("name")
    render.add_argument("root", type=Path)
    args = parser.parse_args(argv)

    if args.command == "ssh-config":
        print(net.SshNodes([], args.state).ssh_config)
    elif args.command == "list":
        for name in scenarios.names():
            print(f"{name:30} {scenarios.build(name).description}")
    elif args.command == "render":
        root = rootfs.render(scenarios.build(args.name), args.root)
        print(f"--hosts=chroot://{root}")
    elif args.command == "run":
        names = [n for n in args.names.split(",") if n] or scenarios.names()
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not cmd:
            parser.error("run needs a command after --")
        with net.SshNodes(names, args.state, copies=args.copies) as nodes:
            return _run_group([*cmd, f"--hosts={nodes.hosts_arg}", f"--ssh-config={nodes.ssh_config}"])
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
