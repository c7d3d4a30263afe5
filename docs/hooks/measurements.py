"""mkdocs hook: docs/measurements.md shows every bench/RESULTS-*.md, read at build time.

The measurements live next to the benchmarks that make them (bench/RESULTS-<topic>.md, each with its command
and date); a new results file appears on the site without an edit here or in mkdocs.yml. Each file's headings
move one level down, under a heading naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path

MARKER = "<!-- bench/RESULTS-*.md -->"
HEADING = re.compile(r"^(#{1,5}) ", flags=re.MULTILINE)


def results_markdown(bench: Path) -> str:
    """Every bench/RESULTS-*.md in file-name order, each under `## RESULTS-<topic>.md`, headings demoted."""
    parts = []
    for path in sorted(bench.glob("RESULTS-*.md")):
        body = HEADING.sub(lambda m: "#" + m.group(1) + " ", path.read_text(encoding="utf-8"))
        parts.append(f"## {path.name}\n\n{body.strip()}\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # mkdocs' hook signature
    if MARKER not in markdown:
        return markdown
    bench = Path(config["docs_dir"]).parent / "bench"
    return markdown.replace(MARKER, results_markdown(bench))
