"""Benchmark results: Markdown tables and JSON under build/bench/, plots beside them."""
import json
import os
from dataclasses import dataclass, field

from sim import ROOT

BENCH_DIR = os.path.join(ROOT, "build", "bench")


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
                       "tables": [{"title": t.title, "columns": t.columns, "rows": t.rows} for t in self.tables],
                       **self.top}, f, indent=1, default=str)
        return md


def plot_path(name, outdir=BENCH_DIR):
    os.makedirs(outdir, exist_ok=True)
    return os.path.join(outdir, f"{name}.png")
