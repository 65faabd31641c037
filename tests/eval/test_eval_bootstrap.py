"""Noise bands (memcli.eval.bootstrap) and benchmark variants (memcli.eval.variants)."""

from __future__ import annotations

import random

import pytest

from memcli.config import RetrievalConfig
from memcli.errors import ConfigError, UsageError
from memcli.eval.bootstrap import paired_bootstrap
from memcli.eval.variants import Variant, parse_variant, with_overrides


def _recalls(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.choice([0.0, 0.5, 1.0]) for _ in range(n)]


def test_the_same_seed_gives_the_same_bands_and_another_seed_other_ones() -> None:
    rng = random.Random(0)  # continuous values, so bounds move with the resamples
    a, b = [rng.random() for _ in range(80)], [rng.random() for _ in range(80)]
    first = paired_bootstrap({"g": (a, b)}, resamples=2000, seed=3)
    assert paired_bootstrap({"g": (a, b)}, resamples=2000, seed=3) == first
    other = paired_bootstrap({"g": (a, b)}, resamples=2000, seed=4)
    assert other.groups["g"].diff == first.groups["g"].diff, "the observed difference is fixed"
    assert (other.groups["g"].low, other.groups["g"].high) != (
        first.groups["g"].low,
        first.groups["g"].high,
    )


def test_no_difference_on_average_gives_a_band_around_zero() -> None:
    # Half the questions gain a full point of recall, half lose one: a mean change of 0.
    base = [0.5] * 60
    moved = [1.0 if i % 2 else 0.0 for i in range(60)]
    band = paired_bootstrap({"g": (moved, base)}, resamples=4000, seed=0).groups["g"]
    assert band.diff == 0.0
    assert band.low < 0 < band.high and not band.excludes_zero
    identical = paired_bootstrap({"g": (base, base)}).groups["g"]
    assert (identical.low, identical.high) == (0.0, 0.0) and not identical.excludes_zero


def test_a_consistent_gain_excludes_zero_and_a_consistent_loss_too() -> None:
    base = _recalls(50, 5)
    better = [min(1.0, x + 0.25) if i % 3 else x for i, x in enumerate(base)]
    gain = paired_bootstrap({"g": (better, base)}, seed=1).groups["g"]
    assert gain.diff > 0 and gain.low > 0 and gain.excludes_zero
    loss = paired_bootstrap({"g": (base, better)}, seed=1).groups["g"]
    assert loss.high < 0 and loss.excludes_zero


def test_the_macro_band_averages_the_groups_from_the_same_resamples() -> None:
    base = _recalls(40, 7)
    gained = [x + 0.2 for x in base]
    bands = paired_bootstrap({"up": (gained, base), "flat": (base, base)}, seed=2)
    assert bands.macro.diff == pytest.approx(0.1)
    # "flat" never varies, so the macro resamples are exactly half of "up"'s.
    assert bands.macro.low == pytest.approx(bands.groups["up"].low / 2)
    assert bands.macro.high == pytest.approx(bands.groups["up"].high / 2)


def test_unpaired_or_empty_runs_are_refused() -> None:
    with pytest.raises(UsageError, match="3 values against 2"):
        paired_bootstrap({"g": ([1.0, 0.0, 1.0], [1.0, 0.0])})
    with pytest.raises(UsageError, match="nothing to compare"):
        paired_bootstrap({})
    with pytest.raises(UsageError, match="resamples"):
        paired_bootstrap({"g": ([1.0], [0.0])}, resamples=0)


def test_a_variant_is_a_named_strategy_with_settings() -> None:
    nopr = parse_variant("nopr=hybrid:ppr_weight=0, seeds=20")
    assert nopr == Variant("nopr", "hybrid", (("ppr_weight", "0"), ("seeds", "20")))
    assert nopr.spec() == "nopr=hybrid:ppr_weight=0,seeds=20"
    assert parse_variant(nopr.spec()) == nopr
    assert parse_variant("lexical") == Variant("lexical", "lexical")
    for bad in ("=hybrid", "x=", "x=hybrid:seeds", "a b=hybrid"):
        with pytest.raises(UsageError):
            parse_variant(bad)


def test_overrides_set_settings_and_the_strategys_parameters_checked() -> None:
    cfg = with_overrides(RetrievalConfig(), {"pool": "30", "role": "0", "candidates": "20"})
    assert cfg.pool == 30 and cfg.tuning == {"hybrid": {"role": 0, "candidates": 20}}
    assert RetrievalConfig().tuning == {}, "the defaults are left alone"
    gam = with_overrides(RetrievalConfig(), {"anchors": "3"}, "gam")
    assert gam.tuning == {"gam": {"anchors": 3}}
    with pytest.raises(ConfigError, match="did you mean 'role'"):
        with_overrides(RetrievalConfig(), {"rol": "0"})
    with pytest.raises(ConfigError, match="candidates: expected int"):
        with_overrides(RetrievalConfig(), {"candidates": "many"})
    with pytest.raises(ConfigError, match="bad retrieval override"):
        with_overrides(RetrievalConfig(), {"k": "0"})
    with pytest.raises(ConfigError, match="has no parameters"):
        with_overrides(RetrievalConfig(), {"seeds": "3"}, "lexical")
