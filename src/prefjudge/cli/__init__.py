"""The ``prefjudge`` command line: thin click commands, one module per stage."""

from __future__ import annotations

import errno
import os
import shlex
import sys
from typing import Any

import click


class PrefjudgeGroup(click.Group):
    """The top-level group: known failures become one-line messages, never tracebacks.

    Commands turn their own domain errors into click errors; this is the net under them for
    what can happen anywhere: a bad input file (:class:`prefjudge.io.InputError`), a journal
    that cannot be opened or written, and the operating system refusing a read or write
    (disk full, permission denied, a folder where a file should be). Records already written
    stay where they are: journals flush each record as it is made.

    Ctrl-C ends with exit status 130 and says what was kept and how to resume, instead of
    click's bare "Aborted!".

    A reader that stops early (``prefjudge instructions | head -1``) closes the pipe: the
    command then ends quietly with exit status 0, as ``cat`` does.

    Commands load lazily: :data:`prefjudge.cli.commands.COMMAND_MODULES` maps each command
    name to the module that defines it, and only the module of the command being run is
    imported (``prefjudge score`` does not pay for scipy, pandas or the backends). Listing
    the commands (``prefjudge --help``) imports none: it shows each command's summary from
    :data:`prefjudge.cli.commands.COMMAND_SUMMARIES`.
    """

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        """Run the command line; run as a program (``args`` None: ``sys.argv``), owning the process.

        In its own process the modules start-up imports are frozen out of the garbage
        collector's scans (:func:`prefjudge.lazy.own_process`); called with ``args`` (a
        test runner's ``CliRunner``), the caller's process is left as it is.
        """
        if args is None:
            from prefjudge.lazy import own_process

            own_process()
        return super().main(args, *rest, **kwargs)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, loaded or not, sorted."""
        from prefjudge.cli.commands import COMMAND_MODULES

        return sorted(set(COMMAND_MODULES) | set(self.commands))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands with their summaries, importing none of them."""
        from prefjudge.cli.commands import COMMAND_SUMMARIES

        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is not None:
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:
                summary = COMMAND_SUMMARIES.get(name, "")
                rows.append((name, click.utils.make_default_short_help(summary, limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, importing its module on first use."""
        if cmd_name not in self.commands:
            from prefjudge.cli.commands import load_command
            from prefjudge.lazy import heavy_imports

            with heavy_imports():
                load_command(cmd_name)
        return self.commands.get(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse as click does, keeping the command line for the resume hint."""
        ctx.meta["prefjudge.args"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command, turning known failures into ``click.ClickException``."""
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            return result
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(0)
        except KeyboardInterrupt:
            click.echo(
                interrupted_message(ctx.invoked_subcommand, ctx.meta.get("prefjudge.args", [])),
                err=True,
            )
            ctx.exit(130)
        except Exception as exc:
            if _is_known_input_failure(exc):
                raise click.ClickException(str(exc)) from exc
            if isinstance(exc, OSError):
                raise click.ClickException(os_error_message(exc)) from exc
            raise


def _is_known_input_failure(exc: Exception) -> bool:
    """Whether ``exc`` is a bad input file or a journal error (one line, no traceback).

    Their modules are looked up, not imported: an instance of their errors exists only once
    the module that defines them has loaded, and ``--help`` loads neither.
    """
    kinds = [
        getattr(sys.modules.get(module), name, None)
        for module, name in (("prefjudge.io", "InputError"), ("prefjudge.journal", "JournalError"))
    ]
    return any(kind is not None and isinstance(exc, kind) for kind in kinds)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor (e.g. under a test runner)
        pass


def interrupted_message(command: str | None, args: list[str]) -> str:
    """What Ctrl-C kept, and the command line that resumes (for journaling commands).

    Args:
        command: The subcommand that was running (``None`` before one started).
        args: The command-line arguments after ``prefjudge``.
    """
    from prefjudge.cli.commands import RESUMABLE_COMMANDS

    if command not in RESUMABLE_COMMANDS:
        return "Interrupted (this command keeps no journal: a rerun starts again)."
    line = shlex.join(["prefjudge", *args])
    return (
        "Interrupted: every record written so far is kept. "
        f"To resume where it stopped, rerun the same command:\n  {line}"
    )


def os_error_message(exc: OSError) -> str:
    """A one-line message for an operating-system error, naming the file when known."""
    where = f"{exc.filename}: " if exc.filename else ""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    hint = ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = " (records written before are kept: free space and rerun the command to resume)"
    return f"{where}{reason}{hint}"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Print ``--version`` as click's ``version_option`` does, and exit.

    The version is looked up only here: reading the package metadata would cost every other
    command line tens of milliseconds.
    """
    if not value or ctx.resilient_parsing:
        return
    from prefjudge import __version__

    click.echo(f"prefjudge, version {__version__}", color=ctx.color)
    ctx.exit()


@click.group(cls=PrefjudgeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
@click.option("-v", "--verbose", is_flag=True,
              help="Show the model libraries' INFO logs (vLLM's engine start), on stderr.")
def main(verbose: bool) -> None:
    """Judge code-generating LLMs the way their users do.

    stdout carries results only (tables, JSON, files written to -); progress, notes and
    other libraries' logs go to stderr, warnings only unless -v.
    """
    if verbose:
        os.environ["PREFJUDGE_VERBOSE"] = "1"
