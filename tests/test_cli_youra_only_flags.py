"""``longctx retrieve``'s YOURA options (``--preset``, ``--baseline``, ``--layers``) given with
another method are refused in one line before any work (they were ignored silently: a user
asking ``--preset paper`` of MixPR got MixPR's defaults)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "flags",
    [["--preset", "paper"], ["--baseline", "paper"], ["--layers", "last"]],
)
@pytest.mark.parametrize("method", ["mixpr", "mmr", "fps"])
def test_youra_options_with_another_method_are_refused(capsys, method, flags):
    from longctx.cli import main

    argv = ["retrieve", "--sample", "alice", "-q", "Who?", "--method", method, *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"{flags[0]} applies to --method youra only, not --method {method}" in err
    if method == "mixpr" and flags[0] == "--preset":
        assert "longctx index PATH --method mixpr --preset" in err


def test_default_preset_with_mixpr_still_runs(capsys):
    from longctx.cli import main

    argv = ["retrieve", "--sample", "alice", "-q", "Who is the Mock Turtle?", "--budget", "40"]
    assert main([*argv, "--preset", "default"]) == 0
    assert "Mock Turtle" in capsys.readouterr().out
