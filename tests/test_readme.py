import re
from pathlib import Path


def test_readme_first_example_runs():
    """The README's opening example, what a new user runs first (the rest: `test_readme_examples_run`,
    in the second tier)."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    namespace = {}
    exec(compile(re.findall(r"```python\n(.*?)```", text, re.S)[0], "README.md", "exec"), namespace)
    assert namespace["mcmc"].get_samples()["p"].shape == (2000,)


def test_readme_reproductions_table_is_rendered_from_the_results():
    """The README's reproductions table is `summary_table` of the committed results files, not typed by
    hand: it fails when a results file or the registry changes without the README."""
    from dpjax.reproduce import summary_table

    root = Path(__file__).resolve().parents[1]
    text = (root / "README.md").read_text()
    block = re.search(r"<!-- reproductions:[^>]*-->\n(.*?)\n<!-- /reproductions -->", text, re.S)
    assert block, "README.md lost its reproductions markers"
    expected = summary_table(root / "benchmarks" / "results", link="benchmarks/results/", status=False)
    assert block.group(1) == expected, "regenerate the README's table: python docs/update_readme.py"


def test_readme_is_short():
    """A README a user reads (issue 86): at most 250 lines; the logs live in lab/, the rest in docs/."""
    assert len((Path(__file__).resolve().parents[1] / "README.md").read_text().splitlines()) <= 250
