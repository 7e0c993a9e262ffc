"""Rewrite the README's reproductions table from the committed results files
(``python docs/update_readme.py``): the table is ``dpjax.reproduce.summary_table``'s, never typed by
hand (``tests/test_readme.py`` checks it)."""

import re
from pathlib import Path

from dpjax.reproduce import summary_table

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PATTERN = r"(<!-- reproductions:[^>]*-->\n)(.*?)(\n<!-- /reproductions -->)"


def table() -> str:
    return summary_table(ROOT / "benchmarks" / "results", link="benchmarks/results/", status=False)


if __name__ == "__main__":
    text = README.read_text()
    README.write_text(re.sub(PATTERN, lambda m: m.group(1) + table() + m.group(3), text, flags=re.S))
