from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.core.config import ConfigError, Preset, build_config, describe_allowed, parse_assignments
from theorylab.core.study import get_study, study
from toy_study import ToyConfig

PRESETS = {"quick": Preset.of("quick"), "paper": Preset.of("paper", n=(100_000, "more draws"))}


def test_defaults_and_preset_delta():
    assert build_config(ToyConfig, PRESETS, "quick").n == 1000
    assert build_config(ToyConfig, PRESETS, "paper").n == 100_000


def test_unknown_field_names_it_and_suggests():
    with pytest.raises(ConfigError, match=r"unknown config field 'stpes' \(did you mean 'steps'\?\)"):
        build_config(ToyConfig, PRESETS, "quick", {"stpes": 3})


def test_unknown_preset_lists_valid():
    with pytest.raises(ConfigError, match="valid presets: paper, quick"):
        build_config(ToyConfig, PRESETS, "huge")


def test_unknown_study_suggests_closest():
    with pytest.raises(ConfigError, match=r"did you mean 'rmt-diffusion'"):
        get_study("rmt-difusion")


def test_allowed_range_is_described():
    assert describe_allowed(ToyConfig.model_fields["n"]) == "integer, 10 <= value <= 10000000"
    assert describe_allowed(ToyConfig.model_fields["scale"]) == "number, 0 < value <= 100.0"


def test_set_parsing_types():
    cfg_cls = get_study("rmt-diffusion").config
    parsed = parse_assignments(cfg_cls, ["ns=100,200", "sigma2=1e-3", "dataset=digits", "draws=50"])
    assert parsed == {"ns": [100, 200], "sigma2": [1e-3], "dataset": "digits", "draws": 50}
    cfg = get_study("rmt-diffusion").make_config("quick", **parsed)
    assert cfg.ns == (100, 200) and cfg.sigma2 == (1e-3,)
    assert get_study("rmt-diffusion").make_config("quick", ns=400).ns == (400,)  # scalar -> 1-tuple


def test_preset_must_give_reasons_and_known_fields():
    with pytest.raises(ValueError, match="unknown field"):
        study(
            "bad-a",
            title="",
            paper="",
            config=ToyConfig,
            presets={"quick": Preset.of("quick", nope=(1, "x")), "paper": Preset.of("paper")},
            claims=[],
        )
    with pytest.raises(ValueError, match="no reason"):
        study(
            "bad-b",
            title="",
            paper="",
            config=ToyConfig,
            presets={"quick": Preset("quick", {"n": 5}, {}), "paper": Preset.of("paper")},
            claims=[],
        )


def test_config_is_frozen():
    cfg = build_config(ToyConfig, PRESETS, "quick")
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="frozen"):
        cfg.n = 5  # type: ignore[misc]


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.integers(max_value=9), st.integers(min_value=10_000_001)))
def test_out_of_range_int_always_rejected_naming_field(value):
    with pytest.raises(ConfigError) as info:
        build_config(ToyConfig, PRESETS, "quick", {"n": value})
    assert "'n'" in str(info.value) and "10 <= value <= 10000000" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.floats(max_value=0.0), st.floats(min_value=100.0, exclude_min=True), st.just(float("nan"))))
def test_out_of_range_float_always_rejected_naming_field(value):
    with pytest.raises(ConfigError) as info:
        build_config(ToyConfig, PRESETS, "quick", {"scale": value})
    assert "'scale'" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1).filter(lambda s: not s.strip().lstrip("+-").replace(".", "", 1).replace("_", "").isdigit()))
def test_wrongly_typed_always_rejected_naming_field(text):
    field = "steps"
    with pytest.raises(ConfigError) as info:
        build_config(ToyConfig, PRESETS, "quick", parse_assignments(ToyConfig, [f"{field}={text}"]))
    assert f"'{field}'" in str(info.value)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=10, max_value=10_000_000))
def test_in_range_accepted(value):
    assert build_config(ToyConfig, PRESETS, "quick", {"n": value}).n == value


def test_optional_fields_take_none_from_the_command_line():
    from theorylab.core.config import parse_value
    from theorylab.studies.propagation_of_chaos.config import PropagationOfChaosConfig

    assert parse_value(PropagationOfChaosConfig, "slow_k", "none") is None
    assert parse_value(PropagationOfChaosConfig, "slow_k", "3") == 3


def test_a_retired_field_name_says_what_it_is_now():
    from theorylab.core.config import unknown_field_message
    from theorylab.studies.thermalizer.config import ThermalizerConfig

    msg = unknown_field_message(ThermalizerConfig, "gauss_samples")
    assert msg == "unknown config field 'gauss_samples': it is now 'gauss_n' (same meaning and values)"
    assert "did you mean" in unknown_field_message(ThermalizerConfig, "gauss_nn")
