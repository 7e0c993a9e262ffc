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


@pytest.mark.parametrize("epsilon", ["nan", "inf"])
def test_demo_rejects_non_finite_epsilon_before_running(epsilon, capsys):
    with pytest.raises(SystemExit) as info:
        main(["demo", "--epsilon", epsilon])
    assert info.value.code == 2 and "finite --epsilon" in capsys.readouterr().err


def test_demo_checks_the_output_folder_before_running(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["demo", "--out", str(tmp_path / "missing" / "x.png")])
    assert info.value.code == 2 and "does not exist" in capsys.readouterr().err
