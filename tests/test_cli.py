import pytest

from dpjax.cli import main


def test_demo_runs_and_saves_a_plot(tmp_path, capsys):
    out = tmp_path / "demo.png"
    assert main(["demo", "--n", "40", "--num-samples", "40", "--no-progress", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert out.stat().st_size > 10_000
    assert "naive" in text and "privacy-aware" in text and "r_hat" in text


def test_demo_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        main(["demo", "--epsilon", "0"])
