"""``privrank plan``."""
import json

import pytest


def test_plan_json(cli):
    code, out, err = cli("plan", "--items", "10", "--users", "1000", "--epsilon", "1", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["epsilon"] == 1.0 and doc["epsilon_per_user"] == 45.0
    assert set(doc["predicted"]) == {"kendall", "topk_hamming", "linf"} and doc["target"] is None
    assert "basic composition" in doc["guarantee"]


def test_plan_target_table_and_plot(cli, tmp_path):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "plan.png"
    code, out, err = cli("plan", "--items", "8", "--users", "300", "--model", "central", "--target", "kendall=0.02",
                         "--plot", plot)
    assert code == 0, err
    assert "smallest epsilon with kendall <= 0.02" in out and "group privacy" in out and plot.stat().st_size > 1000


@pytest.mark.parametrize("argv,match", [
    (["--epsilon", "1", "--target", "kendall=0.1"], "not allowed"),
    (["--target", "spearman=0.1"], "--target must be"),
    (["--target", "kendall=x"], "needs a number"),
    (["--epsilon", "1", "--mechanism", "noisy-copeland"], "add --model"),
    (["--epsilon", "0"], "epsilon must be > 0"),
])
def test_plan_errors(cli, argv, match, capsys):
    try:
        code, _, err = cli("plan", "--items", "5", "--users", "10", *argv)
    except SystemExit as exc:  # argparse usage errors
        code, err = exc.code, capsys.readouterr().err
    assert code == 2 and match in err
