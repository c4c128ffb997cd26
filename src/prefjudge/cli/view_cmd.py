"""``prefjudge view``: one self-contained HTML page to look at a results folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from prefjudge.cli import main
from prefjudge.cli.defaults import VIEW_MAX_CHARS
from prefjudge.cli.runs import check_output
from prefjudge.cli.streams import OutputFile, is_stdout, write_output
from prefjudge.reporting import StageError

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    from rich.console import Console

    from prefjudge.view import Page

HOST = "127.0.0.1"

__all__ = ["HOST", "default_output", "make_server", "view_command"]


def make_server(page: Page, port: int) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 that serves the page at ``/`` (and ``/view.html``).

    Args:
        page: The page.
        port: The port, 0 for any free one.

    Returns:
        The bound server (call ``serve_forever``; ``server_port`` is the port).

    Raises:
        OSError: When the port cannot be bound.
    """
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = page.html.encode("utf-8")

    class Handler(BaseHTTPRequestHandler):
        def _send(self, head_only: bool) -> None:
            path = self.path.split("?", 1)[0].split("#", 1)[0]
            if path not in ("/", "/view.html", "/index.html"):
                self.send_error(404, "only the page is served here: /")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", page.policy)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not head_only:
                self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(head_only=False)

        def do_HEAD(self) -> None:
            self._send(head_only=True)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return ThreadingHTTPServer((HOST, port), Handler)


@main.command("view")
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--output", type=OutputFile(stdout_ok=True), default=None,
              help="HTML page to write (self-contained: inline CSS and script, no network; "
                   "- for stdout)  [default: RESULTS/view.html; with --serve, none]")
@click.option("--serve", is_flag=True,
              help="Serve the page on 127.0.0.1 (only this machine) until Ctrl-C.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port for --serve (0: any free port).")
@click.option("--max-chars", type=click.IntRange(min=100), default=VIEW_MAX_CHARS,
              show_default=True,
              help="Longest text kept per field (longer ones are cut, with a note saying "
                   "how much).")
@click.option("--title", default="prefjudge results", show_default=True, help="Page title.")
def view_command(results: Path, output: Path | None, serve: bool, port: int, max_chars: int,
                 title: str) -> None:
    """Look at RESULTS in one HTML page: a results folder, or one results file.

    Reads leaderboard.csv, scored samples (prefjudge score) and judge verdicts (prefjudge
    judge, pair -o, judge-eval), in the folder and one folder down; each file's kind is
    told from its records' fields. Filters (model, task, instruction category, status) run
    in the page; #model=X, #pair=ID or #sample=ID in the URL apply them.
    """
    from prefjudge.cli.reporter import ConsoleReporter
    from prefjudge.view.run import ViewSettings, view_folder

    if serve and is_stdout(output):
        raise click.UsageError("--serve prints the page's URL on stdout: -o/--output cannot be "
                               "- with it")
    if output is None and not serve:
        output = default_output(results)
    if output is not None and not is_stdout(output):
        check_output(output, "-o/--output")
    settings = ViewSettings(results=results, output=output, write=output is not None,
                            max_chars=max_chars, title=title)
    try:
        outcome = view_folder(settings, ConsoleReporter(_stderr()))
    except StageError as exc:
        raise click.ClickException(str(exc)) from None
    if outcome.stdout is not None:
        write_output(Path("-"), outcome.stdout)
    if serve:
        _serve(outcome.page, port, outcome.summary)


def default_output(results: Path) -> Path:
    """Where the page goes without ``-o``: :func:`prefjudge.view.run.default_output`."""
    from prefjudge.view.run import default_output as page_path

    return page_path(results)


def _stderr() -> Console:
    """The console of notes (stderr)."""
    from rich.console import Console

    return Console(stderr=True)


def _serve(page: Page, port: int, summary: str) -> None:
    console = _stderr()
    try:
        server = make_server(page, port)
    except OSError as exc:
        raise click.ClickException(
            f"cannot serve on {HOST}:{port}: {exc.strerror or exc}") from None
    url = f"http://{HOST}:{server.server_port}/"
    console.print(f"serving the page ({summary}) at {url} — Ctrl-C stops", soft_wrap=True,
                  highlight=False)
    click.echo(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped", highlight=False)
    finally:
        server.server_close()

