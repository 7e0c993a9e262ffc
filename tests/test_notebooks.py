import functools
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def execute(path):
    """Run a notebook top to bottom; any exception in a cell (a failed ``assert`` on a claim the
    notebook prints included) raises ``CellExecutionError``."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


executed = functools.cache(execute)  # each shipped notebook runs once per session


def stdout(nb):
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("name") == "stdout"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path):
    executed(path)


def test_failed_assertion_in_a_notebook_fails(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print('claim')\nassert 1 + 1 == 3, 'claim does not hold'")]
    path = tmp_path / "claim.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(CellExecutionError, match="claim does not hold"):
        execute(path)


def check_privacy_claim(text):
    """The ε the synthetic-data notebook claims DP at must be one whose printed δ̃ and error bar
    are 0, and the smallest such ε of the grid; a 'for delta > d' claim at a smaller ε must use
    d ≥ the printed δ̃ + error there."""
    num = r"(\d+(?:\.\d+)?)"
    table = {
        float(e): (float(d), float(err))
        for e, d, err in re.findall(rf"epsilon = {num}: delta_tilde = {num} ± {num}", text)
    }
    assert table, "the notebook printed no delta_tilde table"
    claims = re.findall(rf"instance-level \({num}, delta\)-DP for every delta > 0", text)
    assert len(claims) == 1, f"expected one DP claim, got {claims}"
    eps = float(claims[0])
    assert eps in table, f"claimed epsilon {eps} is not in the printed grid {sorted(table)}"
    assert table[eps] == (0.0, 0.0), (
        f"claims DP for every delta > 0 at epsilon {eps}, delta_tilde {table[eps]}"
    )
    assert all(sum(table[e]) > 0 for e in table if e < eps), "a smaller epsilon of the grid has delta_tilde 0"
    for e, d in re.findall(rf"at epsilon = {num} only for delta > {num}", text):
        assert float(d) >= sum(table[float(e)]) - 1e-4


def test_check_privacy_claim_catches_the_argmax_bug():
    # what the notebook printed before: argmax over an all-False array picked epsilon = 1
    wrong = "epsilon = 1.0: delta_tilde = 0.9378 ± 0.0118\nepsilon = 5.0: delta_tilde = 0.0024 ± 0.0024\n"
    with pytest.raises(AssertionError, match="delta_tilde"):
        check_privacy_claim(wrong + "-> instance-level (1.0, delta)-DP for every delta > 0\n")
    good = wrong + "epsilon = 6.0: delta_tilde = 0.0000 ± 0.0000\n"
    check_privacy_claim(good + "-> instance-level (6.0, delta)-DP for every delta > 0\n")


def test_synthetic_notebook_privacy_claim_matches_its_delta_tilde():
    path = next(p for p in NOTEBOOKS if p.name == "synthetic_data.ipynb")
    check_privacy_claim(stdout(executed(path)))
