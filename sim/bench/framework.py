"""Benchmark results: Markdown tables and JSON under build/bench/, plots beside them, and build/bench/index.html
linking every bench's files with its tables and plots inline (opens from file://, no server).

Sweeps (every point a task, run on the local cores or a Ray cluster, cached): sim/bench/sweep.py.
`bench_main(run, __doc__)` is the command line of a bench module (`python -m sim.bench.bench_<name>`)."""
import argparse
import html
import inspect
import json
import os
import time
from dataclasses import dataclass, field

from sim import BUILD

BENCH_DIR = os.path.join(BUILD, "bench")


@dataclass
class Table:
    """One table: a title, column names and rows (lists of values, same length as columns)."""
    title: str
    columns: list
    rows: list = field(default_factory=list)
    notes: str = ""

    def add(self, *row):
        if len(row) != len(self.columns):
            raise ValueError(f"row has {len(row)} values, table '{self.title}' has {len(self.columns)} columns")
        self.rows.append(list(row))

    def markdown(self):
        def fmt(v):
            if isinstance(v, float):
                return f"{v:.4g}"
            return str(v)
        lines = [f"### {self.title}", ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "---|" * len(self.columns))
        for row in self.rows:
            lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
        if self.notes:
            lines += ["", self.notes]
        return "\n".join(lines) + "\n"


@dataclass
class BenchResult:
    """What one benchmark module returns: tables, raw data for JSON, plot files it wrote; `top`: entries
    written at the top level of the JSON, beside name, data and tables (a format a benchmark promises)."""
    name: str
    tables: list = field(default_factory=list)
    data: dict = field(default_factory=dict)
    plots: list = field(default_factory=list)
    top: dict = field(default_factory=dict)

    def markdown(self):
        out = [f"## {self.name}", ""]
        out += [t.markdown() for t in self.tables]
        out += [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in self.plots]
        return "\n".join(out) + "\n"

    def write(self, outdir=BENCH_DIR):
        os.makedirs(outdir, exist_ok=True)
        md = os.path.join(outdir, f"{self.name}.md")
        with open(md, "w") as f:
            f.write(self.markdown())
        with open(os.path.join(outdir, f"{self.name}.json"), "w") as f:
            json.dump({"name": self.name, "data": self.data,
                       "tables": [{"title": t.title, "columns": t.columns, "rows": t.rows, "notes": t.notes}
                                  for t in self.tables],
                       "plots": [os.path.basename(p) for p in self.plots], **self.top}, f, indent=1, default=str)
        write_index(outdir)
        return md


def plot_path(name, outdir=BENCH_DIR):
    os.makedirs(outdir, exist_ok=True)
    return os.path.join(outdir, f"{name}.png")


def _cell(v):
    return html.escape(f"{v:.4g}" if isinstance(v, float) else str(v))


def write_index(outdir=BENCH_DIR):
    """build/bench/index.html: every bench result in `outdir` (its <name>.json), with links to its .md and
    .json, its tables and its plots (relative paths: the page opens from the folder, without a server)."""
    benches = []
    for fname in sorted(os.listdir(outdir)):
        if not fname.endswith(".json"):
            continue
        try:
            with open(os.path.join(outdir, fname)) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and "name" in doc and isinstance(doc.get("tables"), list):
            benches.append((fname[:-5], doc, os.path.getmtime(os.path.join(outdir, fname))))
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'><title>innet benchmarks</title><style>",
           "body{font-family:sans-serif;margin:2em;max-width:110em} table{border-collapse:collapse;margin:.5em 0}",
           "td,th{border:1px solid #bbb;padding:2px 6px;font-size:90%;text-align:right} th{background:#eee}",
           "img{max-width:100%;border:1px solid #ddd;margin:.5em 0} .notes{color:#555;font-size:90%}",
           "</style></head><body>", "<h1>innet benchmarks</h1>",
           f"<p>{len(benches)} benchmarks in {html.escape(outdir)}; page written {time.strftime('%Y-%m-%d %H:%M')}."
           " Each: <code>make bench BENCH=name</code> (docs/benchmarks.md).</p><ul>"]
    out += [f"<li><a href='#{html.escape(b)}'>{html.escape(b)}</a></li>" for b, _, _ in benches]
    out.append("</ul>")
    for base, doc, mtime in benches:
        links = [f"<a href='{html.escape(base)}.json'>{html.escape(base)}.json</a>"]
        if os.path.exists(os.path.join(outdir, f"{base}.md")):
            links.insert(0, f"<a href='{html.escape(base)}.md'>{html.escape(base)}.md</a>")
        out.append(f"<h2 id='{html.escape(base)}'>{html.escape(str(doc['name']))}</h2>")
        out.append(f"<p>{' · '.join(links)} · written {time.strftime('%Y-%m-%d %H:%M', time.localtime(mtime))}</p>")
        for t in doc["tables"]:
            out.append(f"<h3>{html.escape(str(t.get('title', '')))}</h3><table><tr>"
                       + "".join(f"<th>{html.escape(str(c))}</th>" for c in t.get("columns", [])) + "</tr>")
            out += ["<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in t.get("rows", [])]
            out.append("</table>")
            if t.get("notes"):
                out.append(f"<p class='notes'>{html.escape(t['notes'])}</p>")
        for p in doc.get("plots", []):
            if os.path.exists(os.path.join(outdir, p)):
                out.append(f"<p><img src='{html.escape(p)}' alt='{html.escape(p)}'></p>")
    out.append("</body></html>")
    path = os.path.join(outdir, "index.html")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, path)
    return path


def bench_parser(run, doc):
    """The argparse parser of a bench module whose entry is `run`: --quick, and --no-<flag> for each keyword of
    `run` that defaults to True (ecp5, wave1, boards: the long parts); add the module's own options to it."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (seconds, not minutes)")
    for name, p in inspect.signature(run).parameters.items():
        if p.default is True:
            parser.add_argument(f"--no-{name.replace('_', '-')}", dest=name, action="store_false",
                                help=f"skip the {name} part")
    return parser


def run_with(run, args):
    """`run` called with the parsed `args` that are its keywords."""
    keywords = inspect.signature(run).parameters
    return run(**{k: v for k, v in vars(args).items() if k in keywords})


def report(result):
    """Print a bench's result (Markdown) and write it under build/bench/ (as `make bench` does)."""
    print(result.markdown())
    print(result.write())
    return 0


def bench_main(run, doc, argv=None):
    """`python -m sim.bench.bench_<name> [--quick] [--no-...]`: parse argv (--help and bad options end here, before
    anything runs), then run the bench and report its result."""
    return report(run_with(run, bench_parser(run, doc).parse_args(argv)))
