"""Peak FLOP/s table, FLOPs-per-token estimates (analytic and counted) and the tiny Llama on CPU."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clusterlab.torchtools.flops import (
    PEAK_BF16_DENSE,
    PRESETS,
    LlamaConfig,
    analytic_flops_per_token,
    flops_per_token,
    mfu,
    param_count,
    peak_flops,
    run_flops_per_token,
)


def _counted(config: LlamaConfig) -> float:
    pytest.importorskip("torch")
    from clusterlab.torchtools.flop_count import counted_flops_per_token

    return counted_flops_per_token(config)


def test_flops_module_imports_without_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None; import clusterlab.torchtools.flops as f; "
            "print(f.peak_flops('H100'))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert float(res.stdout) == 989.4e12


def test_counted_flops_for_llama3_8b_agree_with_6n_plus_attention() -> None:
    config = LlamaConfig.llama3_8b()
    counted, analytic = _counted(config), analytic_flops_per_token(config)
    assert counted == pytest.approx(analytic, rel=0.03)
    assert counted == pytest.approx(5.79e10, rel=0.01)  # ~6 x 7.5e9 matmul params + 1.6e9 attention


def test_counted_flops_for_the_tiny_config_agree_with_analytic() -> None:
    config = LlamaConfig.tiny()
    assert _counted(config) == pytest.approx(analytic_flops_per_token(config), rel=0.03)


def test_attention_is_counted_full_not_causal() -> None:
    # doubling seq_len adds exactly 12·L·H·S_extra per token; a causal count would add half
    short, long = LlamaConfig.tiny(seq_len=64), LlamaConfig.tiny(seq_len=128)
    extra = _counted(long) - _counted(short)
    assert extra == pytest.approx(12 * short.layers * short.hidden * 64, rel=1e-6)


def test_param_count_of_llama3_8b_is_8_03e9() -> None:
    assert param_count(PRESETS["llama3_8b"]) == pytest.approx(8.03e9, rel=0.01)
    assert param_count(PRESETS["llama3_70b"]) == pytest.approx(70.6e9, rel=0.01)
    assert 1e6 <= param_count(PRESETS["tiny"]) <= 2e6


def test_param_count_matches_the_built_model() -> None:
    torch = pytest.importorskip("torch")
    from clusterlab.torchtools.llama import Llama

    for config in (LlamaConfig.tiny(), LlamaConfig.llama3_8b()):
        with torch.device("meta"):
            model = Llama(config)
        assert sum(p.numel() for p in model.parameters()) == param_count(config)


def test_flops_per_token_terms() -> None:
    assert flops_per_token(1e9) == 6e9
    # embedding lookups are dropped from N unless tied to the LM head
    assert flops_per_token(1e9, vocab=1000, hidden=100) == 6 * (1e9 - 1e5)
    assert flops_per_token(1e9, vocab=1000, hidden=100, tied_embeddings=True) == 6e9
    assert flops_per_token(1e9, layers=2, hidden=100, seq_len=10) == 6e9 + 12 * 2 * 100 * 10


def test_h100_sxm_peak_is_the_dense_datasheet_figure() -> None:
    assert PEAK_BF16_DENSE["H100-SXM"] == 989.4e12
    assert peak_flops("H100-SXM") == 989.4e12
    assert peak_flops("A100-SXM-80GB") == 312e12
    assert peak_flops("MI300X") == 1307.4e12


def test_peak_table_covers_the_fleet() -> None:
    for model in ("H100-SXM", "H100-PCIe", "H100-NVL", "H800", "H200", "GH200", "A100-SXM-40GB",
                  "A100-PCIe-80GB", "A800", "L40S", "B100", "B200", "GB200", "MI250X", "MI300X", "MI325X"):
        assert 1e14 < PEAK_BF16_DENSE[model] < 5e15, model


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("H100-SXM", "H100-SXM"),
        ("h100 sxm", "H100-SXM"),
        ("H100 SXM5 80GB", "H100-SXM"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("H100", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("H100 SXM NVLink", "H100-SXM"),
        ("H200", "H200"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA H200 NVL", "H200-NVL"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
        ("NVIDIA H800", "H800"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA B200", "B200"),
        ("GB200 NVL72", "GB200"),
        ("AMD Instinct MI300X", "MI300X"),
        ("mi325x", "MI325X"),
        ("AMD Instinct MI250X", "MI250X"),
        ("MI250X GCD", "MI250X-GCD"),
    ],
)
def test_gpu_name_matching(name: str, key: str) -> None:
    assert peak_flops(name) == PEAK_BF16_DENSE[key]


def test_gpu_name_matching_keeps_h200_and_gh200_apart() -> None:
    # GH200's compute equals H200's, so check the canonical key, not only the value
    from clusterlab.torchtools.flops import _canonical

    assert _canonical("NVIDIA GH200 480GB") == "GH200"
    assert _canonical("NVIDIA B200") == "B200"
    assert _canonical("NVIDIA GB200") == "GB200"


@pytest.mark.parametrize("name", ["RTX 4090", "NVIDIA L40", "NVIDIA RTX A1000", "H300", "", "TPU v5p"])
def test_unknown_gpu_names_give_a_value_error_listing_known_models(name: str) -> None:
    with pytest.raises(ValueError, match="known models: .*H100-SXM.*MI300X"):
        peak_flops(name)


def test_mfu() -> None:
    # 3,000 tokens/s/GPU of an 8B model on an H100: the usual ~40 % region
    fpt = analytic_flops_per_token(LlamaConfig.llama3_8b())
    assert mfu(3000, fpt, "H100-SXM") == pytest.approx(3000 * fpt / 989.4e12)
    assert 0.1 < mfu(3000, fpt, "H100-SXM") < 0.3
    assert mfu(1000, 1e9, 1e12) == 1.0


SHAPE = {"params": 8.03e9, "layers": 32, "hidden": 4096, "seq_len": 8192}


def test_run_toml_flops_per_token_wins_over_model_shape() -> None:
    assert run_flops_per_token({"flops_per_token": 5e10, **SHAPE}, {"params": 1e9}) == (5e10, "run.toml")


def test_model_shape_wins_over_log_facts() -> None:
    value, source = run_flops_per_token(SHAPE, {"params": 1e9, "layers": 2, "hidden": 8, "seq_len": 16})
    assert source == "model shape"
    assert value == flops_per_token(8.03e9, 32, 4096, 8192)


def test_log_facts_are_used_when_run_toml_has_no_flops() -> None:
    facts = {"params": "8.03B", "layers": 32, "hidden": 4096, "seq_len": 8192}  # as a log prints them
    value, source = run_flops_per_token({"cluster": "acme-east", "gpus": 512}, facts)
    assert source == "log facts"
    assert value == pytest.approx(flops_per_token(8.03e9, 32, 4096, 8192))


def test_log_facts_borrow_seq_len_from_run_toml() -> None:
    value, source = run_flops_per_token({"seq_len": 8192}, {"params": 8.03e9, "layers": 32, "hidden": 4096})
    assert (value, source) == (flops_per_token(8.03e9, 32, 4096, 8192), "log facts")


def test_a_named_preset_falls_back_to_the_flop_counter() -> None:
    pytest.importorskip("torch")
    value, source = run_flops_per_token({"model": "tiny"})
    assert source == "flop counter"
    assert value == pytest.approx(analytic_flops_per_token(LlamaConfig.tiny()), rel=0.03)


def test_nothing_known_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match="flops_per_token.*params"):
        run_flops_per_token({"cluster": "acme-east", "gpus": 8}, {"loss": 2.1})
    with pytest.raises(ValueError, match="flops_per_token"):
        run_flops_per_token({})


def test_tiny_model_trains_on_cpu_with_finite_loss() -> None:
    torch = pytest.importorskip("torch")
    from clusterlab.torchtools.llama import Llama

    torch.manual_seed(0)
    config = LlamaConfig.tiny(seq_len=32)
    model = Llama(config)
    tokens = torch.randint(0, config.vocab, (2, config.seq_len + 1))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(5):
        logits, loss = model(tokens[:, :-1], targets=tokens[:, 1:])
        assert logits.shape == (2, config.seq_len, config.vocab)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[0] == pytest.approx(torch.log(torch.tensor(256.0)).item(), abs=0.5)  # uniform at init
    assert losses[-1] < losses[0]  # it learns the repeated batch
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())
