#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot one qemu-rnic test guest, run a script in it, exit with its status.

  scripts/guest/run-guest.py -c 'lspci; cat /proc/interrupts' -- -device rnic
  scripts/guest/run-guest.py SCRIPT.sh -- -device pcie-root-port,id=rp0 -device rnic,bus=rp0
  scripts/guest/run-guest.py --interactive -- -device rnic     (shell on the console)

Arguments after "--" go to QEMU unchanged. The script's output (the console
between the start and end markers) goes to stdout; on failure the whole
console and QEMU's output go to stderr. Exit status: the guest script's,
124 on timeout, 125 when the guest ended without reporting a status.
"""

import argparse
import logging
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rnic_guest  # noqa: E402  pylint: disable=C0413


def interactive(guest: rnic_guest.Guest) -> int:
    """Run QEMU in the foreground, console and monitor on this terminal."""
    for path in (guest.qemu, guest.kernel, guest.initrd):
        if not path.exists():
            sys.exit(f"run-guest: {path} missing")
    guest.log_dir = Path("/nonexistent")
    guest.console_path = Path("/dev/null")
    args = guest.qemu_args()
    at = args.index("-chardev")
    args[at:at + 4] = ["-serial", "mon:stdio", "-display", "none"]
    os.execv(str(guest.qemu), [str(guest.qemu)] + args)
    return 127


def main() -> int:
    parser = argparse.ArgumentParser(
        usage="%(prog)s [options] (SCRIPT | -c COMMAND | -i) [-- QEMU-ARGS...]",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", "--command", help="shell command to run in the guest")
    parser.add_argument("-i", "--interactive", action="store_true",
                        help="boot to a shell on this terminal (Ctrl-A X quits)")
    parser.add_argument("--qemu", type=Path, help="QEMU binary (default: "
                        f"$RNIC_QEMU or {rnic_guest.DEFAULT_QEMU})")
    parser.add_argument("--kernel", type=Path)
    parser.add_argument("--initrd", type=Path)
    parser.add_argument("-d", "--device", action="append", default=[],
                        metavar="DEV", help="add '-device DEV' (repeatable)")
    parser.add_argument("-a", "--append", default="", help="extra kernel command line")
    parser.add_argument("-m", "--memory", type=int, default=512, help="MiB")
    parser.add_argument("-t", "--timeout", type=float, default=120, help="seconds")
    parser.add_argument("--console", action="store_true",
                        help="print the whole serial console, not only the script's output")
    parser.add_argument("--keep-logs", action="store_true",
                        help=f"keep the logs (under {rnic_guest.LOG_ROOT}) on success too")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="timings and QEMU's command line")
    parser.add_argument("script", nargs="?", type=Path,
                        help="shell script to run in the guest")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    opts = parser.parse_args(argv[:split])
    qemu_args = argv[split + 1:]
    if sum(map(bool, (opts.script, opts.command is not None, opts.interactive))) != 1:
        parser.error("give exactly one of SCRIPT, -c COMMAND, --interactive")

    logging.basicConfig(level=logging.DEBUG if opts.verbose else logging.WARNING,
                        format="run-guest: %(name)s: %(message)s")
    # -v shows QEMU's command line (qemu.machine), not every QMP message.
    logging.getLogger("qemu.qmp").setLevel(logging.WARNING)
    for dev in opts.device:
        qemu_args += ["-device", dev]
    script = opts.command if opts.command is not None else opts.script
    guest = rnic_guest.Guest(
        script, args=qemu_args, qemu=opts.qemu, kernel=opts.kernel,
        initrd=opts.initrd, memory=opts.memory, append=opts.append,
        timeout=opts.timeout, keep_logs=opts.keep_logs)
    if opts.interactive:
        return interactive(guest)

    result = guest.run()
    sys.stdout.write(result.console if opts.console else result.output)
    sys.stdout.flush()
    if opts.verbose:
        boot = f"{result.boot_seconds:.2f}" if result.boot_seconds is not None else "-"
        print(f"run-guest: boot {boot} s, total {result.total_seconds:.2f} s, "
              f"status {result.status}", file=sys.stderr)
    if not result.ok:
        sys.stderr.write(result.report())
    if result.timed_out:
        return 124
    return 125 if result.status is None else result.status


if __name__ == "__main__":
    sys.exit(main())
