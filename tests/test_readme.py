import re
from pathlib import Path


def test_readme_examples_run():
    """Every python block of the README, in order, in one namespace."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert namespace["mcmc"].get_samples()["p"].shape == (2000,)
    exec(compile(blocks[1], "README.md", "exec"), namespace)
    draws = namespace["mcmc"].get_samples()
    assert draws["n"].shape == (1000,) and 80 < float(draws["n"].mean()) < 115
