import re
from pathlib import Path

import numpy as np


def test_readme_first_example_runs():
    """The README's opening example, what a new user runs first (the rest: `test_readme_examples_run`,
    in the second tier)."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    namespace = {}
    exec(compile(re.findall(r"```python\n(.*?)```", text, re.S)[0], "README.md", "exec"), namespace)
    assert namespace["mcmc"].get_samples()["p"].shape == (2000,)


def test_readme_examples_run():
    """Every python block of the README, in order, in one namespace."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 4
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert namespace["mcmc"].get_samples()["p"].shape == (2000,)
    exec(compile(blocks[1], "README.md", "exec"), namespace)
    draws = namespace["mcmc"].get_samples()
    assert draws["n"].shape == (1000,) and 80 < float(draws["n"].mean()) < 115
    exec(compile(blocks[2], "README.md", "exec"), namespace)
    study = namespace["study"]
    assert len(study) == 40 and set(study["p_true"]) == {0.2, 0.5}
    # 40 nominal-90 % intervals: Binomial(40, 0.9) is below 30 with probability 0.0015
    assert study["p_covered"].sum() >= 30
    means = study.groupby("p_true")["p_mean"].mean()
    assert abs(means[0.2] - 0.2) < 0.08 and abs(means[0.5] - 0.5) < 0.08
    exec(compile(blocks[3], "README.md", "exec"), namespace)
    boots, alpha = namespace["boots"], np.asarray(namespace["post"].get_samples()["alpha"])
    truth = np.array([2.2, 3.3, 4.4])
    assert np.all((boots.lower < truth) & (truth < boots.upper))
    # the release pins α's shares (α / Σα) closely and its scale loosely (the prior Gamma(1, 0.1) has
    # mean 10): the shares' posterior means are near the truth's, and α lies in the 95 % intervals
    shares = alpha / alpha.sum(1, keepdims=True)
    assert alpha.shape == (300, 3) and np.all(np.abs(shares.mean(0) - truth / truth.sum()) < 0.03)
    lower, upper = np.quantile(alpha, [0.025, 0.975], axis=0)
    assert np.all((lower < truth) & (truth < upper)), (lower, upper)
