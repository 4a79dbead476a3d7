"""``%msrdr`` and ``%msgraphs``: configure RDR and save_graphs, see what they wrote."""

from __future__ import annotations

import inspect
import os
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

from ...errors import MsDebugError

__all__ = ["DumpMagics", "parse_options", "MAGIC_NAMES"]

MAGIC_NAMES = ("msrdr", "msgraphs")


def parse_options(line: str, words: tuple[str, ...], options: dict[str, str], magic: str) -> tuple[str, dict[str, str]]:
    """``'on --mode 2 --path ./rdr'`` -> ``('on', {'--mode': '2', '--path': './rdr'})``.

    ``words`` are the allowed bare words (at most one), ``options`` the allowed
    ``--option VALUE`` names with what their value is. Raises a one-line ``UsageError``.
    """
    from ...keys import did_you_mean
    from .context import _tokens, _unquote

    word = ""
    found: dict[str, str] = {}
    tokens = _tokens(line)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name, eq, inline = token.partition("=")
        if token == "--help":
            found["--help"] = ""
        elif token.startswith("-"):
            if name not in options:
                allowed = ", ".join(f"{o} {v}" for o, v in options.items())
                raise UsageError(f"%{magic}: unknown option {name}; use {allowed}." + did_you_mean(name, options))
            if name in found:
                raise UsageError(f"%{magic}: {name} is given twice.")
            if eq:
                found[name] = _unquote(inline)
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                found[name] = _unquote(tokens[i + 1])
                i += 1
            else:
                raise UsageError(f"%{magic}: {name} needs a value: {name} {options[name]}.")
        elif word:
            raise UsageError(f"%{magic}: one of {', '.join(words)} at a time, got {word!r} and {token!r}.")
        elif token not in words:
            raise UsageError(f"%{magic}: unknown word {token!r}; use {' or '.join(words)}." + did_you_mean(token, words))
        else:
            word = token
        i += 1
    return word, found


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


@magics_class
class DumpMagics(Magics):
    """``%msrdr`` and ``%msgraphs``."""

    @no_var_expand
    @line_magic
    def msrdr(self, line: str) -> Any:
        """Configure the Running Data Recorder (MindSpore up to 2.7.0) and see its exports.

        Usage::

            %msrdr                              what RDR will do in this process, and its files so far
            %msrdr on [--mode 1|2] [--path DIR] [--via env|file] [--file JSON]
            %msrdr off

        --mode 1 exports when a run fails (MindSpore's default), 2 after each compile too.
        --path is where rank_<id>/rdr/ goes; a relative path is made absolute here
        (MindSpore itself would silently use the working directory).
        --via env (default) sets MS_RDR_*; --via file writes --file (default
        ./mindspore_config.json, never overwriting another file) and sets env_config_path.
        RDR is read once, at the first graph compile: run this in the first cells.
        """
        word, options = parse_options(
            line,
            ("on", "off"),
            {"--mode": "1|2", "--path": "DIR", "--via": "env|file", "--file": "JSON"},
            "msrdr",
        )
        if "--help" in options:
            print(inspect.cleandoc(self.msrdr.__doc__))
            return None
        try:
            from ...recorders import envconfig

            if not word:
                if len(options) > 0:
                    raise UsageError("%msrdr: options go with on, e.g. %msrdr on --mode 2 --path ./rdr")
                return envconfig.rdr_status()
            if word == "off" and set(options) - {"--via", "--file"}:
                raise UsageError("%msrdr off takes no --mode or --path.")
            mode = options.get("--mode")
            if mode is not None and mode not in ("1", "2"):
                raise UsageError(f"%msrdr: --mode is 1 (export on failure) or 2 (also after each compile), got {mode!r}.")
            via = options.get("--via", "file" if "--file" in options else "env")
            if via not in ("env", "file"):
                from ...keys import did_you_mean

                raise UsageError(f"%msrdr: --via is env or file, got {via!r}." + did_you_mean(via, ("env", "file")))
            path = options.get("--path")
            config = envconfig.EnvConfig(
                rdr_enable=word == "on",
                rdr_mode=int(mode) if mode else None,
                rdr_path=_absolute(path) if path else None,
            )
            return self._apply(config, via, options.get("--file", "mindspore_config.json"))
        except MsDebugError as error:
            raise UsageError(str(error)) from None

    @staticmethod
    def _apply(config, via: str, file: str):
        import warnings

        from ...recorders import envconfig

        # Shown in the status this returns, once, rather than as a warning that
        # Python's filters would show only the first time.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", envconfig.RdrWarning)
            if via == "file":
                config.write(_absolute(file))
            return config.apply(via=via)

    @no_var_expand
    @line_magic
    def msgraphs(self, line: str) -> Any:
        """save_graphs: dump the IR of the next graph compiles, and read what was dumped.

        Usage::

            %msgraphs                          the level and directory, and the files there so far
            %msgraphs on [--level 1|2|3] [--path DIR]
            %msgraphs off

        Level 1 dumps the compile stages, 2 adds backend passes (default), 3 adds .dot
        graphs (hundreds of files). --path defaults to ./graphs, made absolute here.
        Then: msdebug.open_dump(DIR).
        """
        word, options = parse_options(line, ("on", "off"), {"--level": "1|2|3", "--path": "DIR"}, "msgraphs")
        if "--help" in options:
            print(inspect.cleandoc(self.msgraphs.__doc__))
            return None
        try:
            from ...recorders import savegraphs

            if not word:
                if options:
                    raise UsageError("%msgraphs: options go with on, e.g. %msgraphs on --level 2 --path ./graphs")
                return savegraphs.status()
            if word == "off":
                if options:
                    raise UsageError("%msgraphs off takes no options.")
                return savegraphs.configure(0)
            level = options.get("--level", "2")
            if level not in ("1", "2", "3"):
                raise UsageError(f"%msgraphs: --level is 1, 2 or 3, got {level!r}.")
            return savegraphs.configure(int(level), _absolute(options.get("--path", "graphs")))
        except MsDebugError as error:
            raise UsageError(str(error)) from None
