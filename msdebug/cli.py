"""The ``msdebug`` command: ``msdebug info`` prints versions, the device and the context table;
``msdebug print-file PATH`` decodes a print file."""

from __future__ import annotations

import argparse
import os
import platform
import sys

from . import __version__, backend

__all__ = ["main", "environment_lines"]


def environment_lines() -> list[str]:
    """Versions and known environment problems, one line each."""
    lines = [f"msdebug {__version__}", f"Python {platform.python_version()} ({sys.executable})"]
    numpy = backend.package_version("numpy")
    lines.append(f"numpy {numpy or 'not installed'}")
    if numpy and int(numpy.split(".")[0]) >= 2:
        lines.append(
            "  warning: with numpy 2 the first PyNative operator of every MindSpore process fails; "
            'install "numpy<2"'
        )
    mindspore = backend.installed_version()
    lines.append(f"MindSpore {mindspore}" if mindspore else f"MindSpore not installed; {backend.INSTALL_HINT}")
    level = os.environ.get("GLOG_v")
    lines.append(f"GLOG_v={level}" if level is not None else "GLOG_v not set (MindSpore logs WARNING and above)")
    return lines


def _info(args: argparse.Namespace) -> int:
    print("\n".join(environment_lines()))
    if backend.installed_version() is None:
        return 0
    from . import settings

    state = settings.state(changed_only=args.changed)
    device = state.device
    print(f"device {device} (this build supports {', '.join(device.supported)})")
    print()
    print(repr(state))
    return 0


def _print_file(args: argparse.Namespace) -> int:
    from .errors import MsDebugError
    from .printfile import read_print_file

    try:
        log = read_print_file(args.path, args.format)
    except MsDebugError as error:
        print(f"msdebug print-file: {error}", file=sys.stderr)
        return 1
    print(repr(log) if log.source == "binary file" else log.text, end="" if log.source != "binary file" else "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``msdebug`` command."""
    parser = argparse.ArgumentParser(prog="msdebug", description="See MindSpore's runtime context.")
    parser.add_argument("--version", action="version", version=f"msdebug {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = commands.add_parser("info", help="versions, device and the context table")
    info.add_argument("--changed", action="store_true", help="only keys that differ from their defaults")
    info.set_defaults(run=_info)
    prints = commands.add_parser("print-file", help="decode a print file (binary from Ascend, or text)")
    prints.add_argument("path", help="the file print_file_path named")
    prints.add_argument("--format", choices=("auto", "binary", "text"), default="auto")
    prints.set_defaults(run=_print_file)
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
