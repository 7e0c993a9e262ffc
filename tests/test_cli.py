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


def test_reproduce_uses_every_core(monkeypatch):
    """`dpjax reproduce` re-executes itself once with one CPU device per core (run_study shards the
    replicates over them), unless XLA_FLAGS already chooses."""
    import dpjax.cli as cli

    calls = []
    monkeypatch.setattr(cli.os, "execve", lambda exe, argv, env: calls.append((argv, env["XLA_FLAGS"])))
    monkeypatch.setattr(cli.os, "cpu_count", lambda: 2)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    cli._every_core(["reproduce", "gong-abc", "--quick"])
    ((argv, flags),) = calls
    assert argv[1:] == ["-m", "dpjax.cli", "reproduce", "gong-abc", "--quick"]
    assert flags == "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=2"
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    cli._every_core(["reproduce", "gong-abc"])
    assert len(calls) == 1  # the user's choice stands
