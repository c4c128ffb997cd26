"""``prefjudge view``: one self-contained HTML page to look at a results folder."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from prefjudge.cli import main
from prefjudge.cli.runs import check_output
from prefjudge.cli.streams import OutputFile, is_stdout, write_output
from prefjudge.view import DEFAULT_MAX_CHARS, Page, Results, build_page, load_results
from prefjudge.view.load import KIND_NAMES

console = Console(stderr=True)
HOST = "127.0.0.1"
PROBLEMS_PRINTED = 5


def default_output(results: Path) -> Path:
    """Where the page goes without ``-o``: ``RESULTS/view.html``, or ``NAME.view.html``.

    Args:
        results: The results folder, or one results file.

    Returns:
        The folder's ``view.html``, or ``<stem>.view.html`` beside a single file.
    """
    if results.is_dir():
        return results / "view.html"
    name = results.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
    return results.with_name(f"{name}.view.html")


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"  # pragma: no cover


def _report_found(results: Results) -> None:
    for source in results.files:
        kind = KIND_NAMES.get(source.kind, source.kind)
        unit = "rows" if source.kind == "leaderboard" else "records"
        counts = f"{source.records} {unit}" if source.kind != "skipped" else "skipped"
        bad = f", {source.problems} unusable lines" if source.problems else ""
        note = f" — {source.note}" if source.note else ""
        console.print(f"  {escape(source.path)}: {escape(kind)}, {counts}{bad}{escape(note)}",
                      soft_wrap=True, highlight=False)
    found = results.found()
    have = [what for what, ok in found.items() if ok]
    missing = [what for what, ok in found.items() if not ok]
    console.print(f"found: {escape(', '.join(have)) or 'nothing to show'}"
                  + (f"; not found: {escape(', '.join(missing))}" if missing else ""),
                  soft_wrap=True, highlight=False)
    for note in results.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", soft_wrap=True, highlight=False)
    if results.problem_count:
        console.print(f"[yellow]{results.problem_count} line(s) could not be used[/yellow] "
                      "(listed on the page):", highlight=False)
        for issue in results.problems[:PROBLEMS_PRINTED]:
            console.print(f"  {escape(str(issue))}", soft_wrap=True, highlight=False)
        if results.problem_count > PROBLEMS_PRINTED:
            console.print(f"  ... and {results.problem_count - PROBLEMS_PRINTED} more",
                          highlight=False)


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
@click.option("--max-chars", type=click.IntRange(min=100), default=DEFAULT_MAX_CHARS,
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
    if serve and is_stdout(output):
        raise click.UsageError("--serve prints the page's URL on stdout: -o/--output cannot be "
                               "- with it")
    if output is None and not serve:
        output = default_output(results)
    if output is not None and not is_stdout(output):
        check_output(output, "-o/--output")
    console.print(f"reading {escape(str(results))}", soft_wrap=True, highlight=False)
    found = load_results(results)
    _report_found(found)
    if not any(found.found().values()):
        raise click.ClickException(
            f"{results}: nothing to show (no leaderboard.csv, scored samples or judge "
            "verdicts found)")
    page = build_page(found, title=title, max_chars=max_chars)
    cut = f"; {page.cut_fields} texts cut to {max_chars} chars" if page.cut_fields else ""
    summary = (f"{page.samples} scored samples, {page.pairs} judged pairs, "
               f"{_size(page.size)}{cut}")
    if output is not None:
        write_output(output, page.html, "-o/--output")
        where = "stdout" if is_stdout(output) else str(output)
        console.print(f"wrote {escape(where)}: {summary}", soft_wrap=True, highlight=False)
    if serve:
        _serve(page, port, summary)


def _serve(page: Page, port: int, summary: str) -> None:
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

