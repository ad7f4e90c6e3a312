"""``training.fast: auto`` (fitontest.vision.fast_auto): eager on a CPU with
the eager path's bytes, the measured best path when CUDA is reported, the
choice kept in model.pt and the train log, and the fallback when a lever fails;
the rates read from the package data derived from the committed H200 rows."""
from __future__ import annotations

import json

import pytest
import torch

from fitontest.vision import fast_auto, train
from fitontest.vision.fast_auto import Rates, choose, load_rates
from fitontest.vision.fast_options import AUTO, PATHS, check_setting
from fitontest.vision.recipes import get_recipe
from test_train import learnable_data

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RECIPE = {"epochs": 2, "batch_size": 32, "lr": 0.05, "schedule": "cosine",
          "weight_decay": 5e-4, "pad_mode": "zeros"}


@pytest.fixture(scope="module")
def data():
    return learnable_data()


def fake_rates(graph=0.010, compiled=0.005, setup=1.0, model="cnn_tiny", batch=32) -> Rates:
    """Rates under which compile+graph pays back its setup for ``model``."""
    paths = {"eager": {"s_per_step": 0.05, "setup_s": 1.0},
             "graph": {"s_per_step": graph, "setup_s": 0.5},
             "compile+graph": {"s_per_step": compiled, "setup_s": setup}}
    return Rates({"device": "FakeGPU", "torch": "0", "measured_file": "x.md",
                  "export_img_s": 1000.0, "networks": {model: {"batch": batch, "paths": paths}}})


# ---------------------------------------------------------------- the choice

def test_auto_is_eager_on_a_cpu_for_every_network():
    for model in ("resnet110", "densenet40", "wrn32", "cnn_tiny"):
        got = choose("auto", model, get_recipe(model if model != "cnn_tiny" else "small"),
                     45_000, "cpu")
        assert got.path == "eager" and got.options.eager and got.fallbacks == ()


def test_auto_on_cuda_takes_compile_where_its_setup_pays_back_within_the_recipe():
    """On the committed H200 rates the paper's recipes take compile+graph; the
    same networks for 2 epochs the graph (a minute of compilation would not pay
    back); an unmeasured network or batch the graph; eager last among the fallbacks."""
    for model in ("resnet110", "densenet40", "wrn32"):
        paper = get_recipe(model)
        got = choose("auto", model, paper, 45_000, "cuda")
        assert got.path == "compile+graph", (model, got.reason)
        assert [n for n, _ in got.fallbacks] == ["graph", "eager"]
        assert "H200" in got.reason and "gpu_fast_path_h200.md" in got.reason
        short = choose("auto", model, {**paper, "epochs": 2}, 45_000, "cuda")
        assert short.path == "graph", short.reason
    other_batch = choose("auto", "resnet110", get_recipe("resnet110", batch_size=256), 45_000, "cuda")
    assert other_batch.path == "graph" and "not measured" in other_batch.reason
    assert choose("auto", "resnet8", get_recipe("small"), 45_000, "cuda").path == "graph"


def test_the_choice_moves_with_the_rates():
    """The payback is computed, not typed in: a slower compiled step or a
    longer setup turns the choice to the graph."""
    recipe = get_recipe("small", epochs=10, batch_size=32)
    assert choose("auto", "cnn_tiny", recipe, 3200, "cuda", fake_rates()).path == "compile+graph"
    # 100 steps x 10 epochs x 0.005 s saved = 5 s < 5.5 s more setup than the graph's
    assert choose("auto", "cnn_tiny", recipe, 3200, "cuda", fake_rates(setup=6.0)).path == "graph"
    assert choose("auto", "cnn_tiny", recipe, 3200, "cuda", fake_rates(compiled=0.011)).path == "graph"


def test_settings_other_than_auto_are_taken_as_given():
    recipe = get_recipe("resnet110")
    assert choose(None, "resnet110", recipe, 45_000, "cuda").path == "eager"
    assert choose("eager", "resnet110", recipe, 45_000, "cuda").setting == "eager"
    assert choose("graph", "resnet110", recipe, 45_000, "cpu").options == PATHS["graph"]
    got = choose({"device_data": True}, "resnet110", recipe, 45_000, "cuda")
    assert got.path == "configured" and got.options.device_data and got.fallbacks == ()
    assert check_setting("auto") == AUTO
    with pytest.raises(ValueError, match="fast must be 'auto'"):
        check_setting("fastest")


# ---------------------------------------------------------------- through train_model

def test_auto_on_a_cpu_trains_the_eager_path_bit_for_bit_and_says_so(data, tmp_path):
    X, y = data
    lines = []
    auto = train.train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path / "a", device="cpu",
                             seed=1, log=lines.append, progress=False)        # the default: auto
    eager = train.train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path / "e",
                              device="cpu", seed=1, log=lambda m: None, progress=False, fast=None)
    a, e = (torch.load(p, weights_only=True) for p in (auto, eager))
    for k, v in e["state_dict"].items():
        assert torch.equal(v, a["state_dict"][k]), k
    assert a["fast"]["setting"] == "auto" and a["fast"]["path"] == "eager"
    assert "auto on cpu" in a["fast"]["reason"]
    assert e["fast"]["setting"] == "eager"
    assert [r["path"] for r in a["history"]] == ["eager", "eager"]
    assert (tmp_path / "a/train_log.csv").read_text().splitlines()[0].endswith(",path")
    assert any("training path eager" in m and "auto on cpu" in m for m in lines)


def on_cuda(monkeypatch, rates=None):
    """Make train_model's choice see a CUDA device (the training itself stays on the CPU)."""
    real = fast_auto.choose
    monkeypatch.setattr(train, "choose", lambda setting, model, recipe, n, device_type:
                        real(setting, model, recipe, n, "cuda", rates=rates))


def test_auto_with_cuda_reported_takes_the_graph_and_records_it(data, tmp_path, monkeypatch):
    on_cuda(monkeypatch)
    X, y = data
    path = train.train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path, device="cpu",
                             seed=1, log=lambda m: None, progress=False)
    meta = torch.load(path, weights_only=True)["fast"]
    assert meta["path"] == "graph" and "cuda_graph=True" in meta["options"]
    assert "not measured" in meta["reason"] and meta["fell_back"] == []


def test_a_lever_that_fails_falls_back_with_the_reason_and_the_state_put_back(
        data, tmp_path, monkeypatch):
    """compile+graph chosen (fake rates), its compiled model failing here
    after one warm-up step has moved the weights, batch-norm statistics and
    momentum: the graph runs instead, from the state put back (the same
    weights as a run asked for the graph), the reason logged and recorded."""
    X, y = data
    graph = train.train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path / "g",
                              device="cpu", seed=1, log=lambda m: None, progress=False,
                              fast="graph")
    on_cuda(monkeypatch, fake_rates(setup=0.1, batch=RECIPE["batch_size"]))

    def no_compiler(model, **k):
        calls = []

        def once(x):                # a step's worth of state changes, then the failure
            calls.append(1)
            if len(calls) > 1:
                raise RuntimeError("no compiler here")
            return model(x)
        return once

    monkeypatch.setattr(torch, "compile", no_compiler)
    lines = []
    path = train.train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path / "f",
                             device="cpu", seed=1, log=lines.append, progress=False)
    got = torch.load(path, weights_only=True)
    assert got["fast"]["path"] == "graph"
    assert any("compile+graph did not start" in m and "no compiler here" in m for m in lines)
    assert "no compiler here" in got["fast"]["fell_back"][0]
    want = torch.load(graph, weights_only=True)["state_dict"]
    for k, v in want.items():
        assert torch.equal(v, got["state_dict"][k]), k


# ---------------------------------------------------------------- the rates are data

def test_the_packaged_rates_are_the_committed_rows():
    """src/fitontest/vision/measured/gpu_rates.json is what gpu_rates.py
    derives from benchmarks/measured/gpu_fast_path_h200.jsonl, byte for byte."""
    from conftest import REPO, load_benchmark

    script = load_benchmark("gpu_rates")
    text = (REPO / "src/fitontest/vision/measured/gpu_rates.json").read_text()
    assert script.dump(script.rates_from()) == text
    assert load_rates().data == json.loads(text)
    assert "2026-11-28" in (REPO / load_rates().data["measured_file"]).read_text()


def test_the_paths_are_the_measured_variants():
    """auto's paths are gpu_fast_path.py's variants of the same name (derive
    checks each row's switches; here the script's own table)."""
    from conftest import load_benchmark

    named = load_benchmark("gpu_fast_path").NAMED
    for name, options in PATHS.items():
        assert check_setting(named[name]) == options, name


def test_derive_refuses_rows_of_other_switches():
    row = {"kind": "variant", "model": "m", "batch": 8, "variant": "graph", "s_per_step": 0.1,
           "setup_s": 1.0, "options": "device_data=True"}
    with pytest.raises(ValueError, match="measured with"):
        fast_auto.derive([row], "x.md", "x.jsonl")
