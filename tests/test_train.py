"""Training loop, recipes, augmentation, resume and logit export (CPU, tiny)."""
from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

from fitontest.core.runtime import torch_threads

from fitontest.vision import train
from fitontest.vision.export import block_plan, export_logits, load_model
from fitontest.vision.train import augment_batch, get_recipe, lr_at, resolve_device, train_model

RECIPE = {"epochs": 2, "batch_size": 32, "lr": 0.05, "schedule": "cosine",
          "weight_decay": 5e-4, "pad_mode": "zeros"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def learnable_data(n=192, seed=0):
    """Class k: a bright square at one of 10 positions on noise — learnable fast."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    X = rng.integers(0, 80, (n, 32, 32, 3)).astype(np.uint8)
    for i, k in enumerate(y):
        r, c = divmod(int(k), 5)
        X[i, 4 + 12 * r:12 + 12 * r, 2 + 6 * c:8 + 6 * c, k % 3] = 255
    return X, y


@pytest.fixture(scope="module")
def data():
    return learnable_data()


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data):
    """An uninterrupted 2-epoch run (shared by several tests)."""
    X, y = data
    out = tmp_path_factory.mktemp("full")
    lines = []
    path = train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=out, device="cpu",
                       seed=1, log=lines.append, progress=False)
    return path, lines


def state(path):
    return torch.load(path, map_location="cpu", weights_only=True)


# ---------------------------------------------------------------- device

def test_resolve_device(monkeypatch):
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        resolve_device("cuda:0")
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu-ish")
    with pytest.raises(ValueError):
        resolve_device(3)


# ---------------------------------------------------------------- recipes

def test_paper_recipes():
    r = get_recipe("resnet110")
    assert (r["epochs"], r["batch_size"], r["weight_decay"], r["pad_mode"]) == (200, 128, 1e-4, "zeros")
    assert [lr_at(r, e) for e in (0, 79, 80, 149, 150, 199)] == [0.1, 0.1, 0.01, 0.01, 0.001, 0.001]
    d = get_recipe("densenet40")
    assert d["batch_size"] == 64 and d["epochs"] == 300
    assert [lr_at(d, e) for e in (149, 150, 224, 225)] == [0.1, 0.01, 0.01, 0.001]
    w = get_recipe("wrn32")
    assert w["pad_mode"] == "reflect" and w["weight_decay"] == 5e-4
    assert [lr_at(w, e) for e in (59, 60, 120, 160)] == [0.1, 0.02, 0.004, 0.0008]
    for r in map(get_recipe, ["resnet110", "densenet40", "wrn32", "small"]):
        assert r["nesterov"] and r["momentum"] == 0.9 and r["augment"] and r["shift"] == 4
    s = get_recipe("small", epochs=3)
    assert s["schedule"] == "cosine" and lr_at(s, 0, 0, 10) == s["lr"]
    assert lr_at(s, 2, 9, 10) < lr_at(s, 1, 0, 10) < s["lr"]


def test_small_overfit_recipe():
    r = get_recipe("small_overfit")
    assert (r["epochs"], r["batch_size"], r["lr"], r["schedule"]) == (50, 32, 0.1, "cosine")
    assert r["weight_decay"] == 0.0 and not r["augment"]
    assert r["nesterov"] and r["momentum"] == 0.9
    # cosine from 0.1 down to 0 over the 50 epochs
    assert lr_at(r, 0, 0, 12) == 0.1 and lr_at(r, 49, 11, 12) < 1e-3


@pytest.mark.parametrize("bad", [{"pad_mode": "edge"}, {"epochs": 0}, {"lr": -1},
                                 {"schedule": "poly"}, {"lrate": 0.1},
                                 {"milestones": {"x": 0.1}}, {"nesterov": "yes"}])
def test_bad_recipe(bad):
    with pytest.raises(ValueError):
        get_recipe("small", **bad)
    with pytest.raises(KeyError, match="unknown training recipe"):
        get_recipe("resnet1000")


# ---------------------------------------------------------------- augmentation

def reference_augment(x, shifts, flips, pad, mode):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                mode="constant" if mode == "zeros" else "reflect")
    out = np.empty_like(x)
    H, W = x.shape[2:]
    for b in range(len(x)):
        dy, dx = shifts[b]
        crop = xp[b, :, pad + dy:pad + dy + H, pad + dx:pad + dx + W]
        out[b] = crop[:, :, ::-1] if flips[b] else crop
    return out


@pytest.mark.parametrize("mode", ["zeros", "reflect"])
def test_augment_matches_per_image_reference(mode):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 3, 32, 32, generator=g)
    shifts = torch.randint(-4, 5, (16, 2), generator=g)
    flips = torch.rand(16, generator=g) < 0.5
    got = augment_batch(x, shifts, flips, 4, mode).numpy()
    ref = reference_augment(x.numpy(), shifts.numpy(), flips.numpy(), 4, mode)
    np.testing.assert_array_equal(got, ref)
    same = augment_batch(x, torch.zeros(16, 2, dtype=torch.long), None, 4, mode)
    assert torch.equal(same, x)


# ---------------------------------------------------------------- training

def test_training_learns_and_writes_outputs(trained, data):
    path, lines = trained
    ck = state(path)
    assert ck["model_name"] == "cnn_tiny" and ck["num_classes"] == 10 and ck["complete"]
    assert len(ck["mean"]) == 3 and len(ck["std"]) == 3
    X = data[0]
    np.testing.assert_allclose(ck["mean"], X.reshape(-1, 3).mean(0), rtol=1e-9)
    np.testing.assert_allclose(ck["std"], X.reshape(-1, 3).std(0), rtol=1e-9)
    with open(path.parent / "train_log.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert set(rows[0]) == {"epoch", "loss", "accuracy", "lr", "seconds", "cpu_seconds", "path"}
    assert all(float(r["cpu_seconds"]) > 0 for r in rows)
    assert float(rows[1]["loss"]) < float(rows[0]["loss"])
    assert any("epoch 2/2" in line for line in lines)
    assert not (path.parent / "checkpoint.pt").exists()

    # the trained model beats its initialisation on the training images
    model, meta = load_model(path, "cpu")
    init = train.build("cnn_tiny", 10, train._seeds(1)[0], train.get_recipe("small"),
                       torch.device("cpu"))[0].eval()
    xb = ((torch.from_numpy(X).permute(0, 3, 1, 2).float()
           - torch.tensor(meta["mean"]).view(1, 3, 1, 1)) / torch.tensor(meta["std"]).view(1, 3, 1, 1))
    yb = torch.from_numpy(data[1])
    with torch.inference_mode():
        loss_trained = torch.nn.functional.cross_entropy(model(xb), yb)
        loss_init = torch.nn.functional.cross_entropy(init(xb), yb)
    assert loss_trained < loss_init - 0.1


def test_resume_gives_identical_weights(trained, data, tmp_path):
    X, y = data
    full = state(trained[0])
    lines = []
    p1 = train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path, device="cpu", seed=1,
                     max_epochs=1, log=lines.append, progress=False)
    assert not state(p1)["complete"] and (tmp_path / "checkpoint.pt").exists()
    p2 = train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path, device="cpu", seed=1,
                     log=lines.append, progress=False)
    assert any("resuming" in line for line in lines)
    resumed = state(p2)
    assert resumed["complete"]
    for k, v in full["state_dict"].items():
        assert torch.equal(v, resumed["state_dict"][k]), k
    timing = ("seconds", "cpu_seconds")
    strip = [{k: v for k, v in r.items() if k not in timing} for r in full["history"]]
    assert strip == [{k: v for k, v in r.items() if k not in timing} for r in resumed["history"]]
    # a finished run is not retrained
    lines.clear()
    train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path, device="cpu", seed=1,
                log=lines.append, progress=False)
    assert any("skipping" in line for line in lines)


def test_other_seed_differs_and_ignores_foreign_checkpoint(trained, data, tmp_path):
    X, y = data
    train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path, device="cpu", seed=1,
                max_epochs=1, log=lambda s: None, progress=False)
    lines = []
    p = train_model("cnn_tiny", X, y, recipe={**RECIPE, "epochs": 1}, out_dir=tmp_path,
                    device="cpu", seed=2, log=lines.append, progress=False)
    assert any("another run" in line for line in lines)
    a, b = state(trained[0])["state_dict"], state(p)["state_dict"]
    assert not torch.equal(a["conv1.weight"], b["conv1.weight"])


def test_training_input_validation(tmp_path, data):
    X, y = data
    with pytest.raises(ValueError, match="uint8"):
        train_model("cnn_tiny", X.astype(np.float32), y, recipe=RECIPE, out_dir=tmp_path, device="cpu")
    with pytest.raises(ValueError, match="labels"):
        train_model("cnn_tiny", X, y + 5, recipe=RECIPE, out_dir=tmp_path, device="cpu")
    with pytest.raises(KeyError, match="unknown model"):
        train_model("nonet", X, y, recipe=RECIPE, out_dir=tmp_path, device="cpu")


# ---------------------------------------------------------------- export

class FakeSource:
    """Same methods as data.sources.ImageSource; yields chunks out of order."""

    num_classes, has_posterior = 10, False

    def __init__(self, X, y):
        self.X, self.y, self.n_images = X, y, len(X)

    def load(self, indices):
        return self.X[indices], self.y[indices]

    def iter_chunks(self, indices, chunk_size=50_000):
        starts = list(range(0, len(indices), chunk_size))[::-1]
        for a in starts:
            pos = np.arange(a, min(a + chunk_size, len(indices)))
            yield self.X[indices[pos]], self.y[indices[pos]], pos


def test_export_chunked_equals_one_shot(trained, data, tmp_path):
    X, y = data
    idx = np.random.default_rng(0).permutation(len(X))[:150]
    one = export_logits(trained[0], (X, y), idx, tmp_path / "one.npz", device="cpu",
                        batch_size=1024, chunk_size=10**6, log=lambda s: None, progress=False)
    chunked = export_logits(trained[0], (X, y), idx, tmp_path / "chunked.npz", device="cpu",
                            batch_size=16, chunk_size=37, log=lambda s: None, progress=False)
    src = export_logits(trained[0], FakeSource(X, y), idx, tmp_path / "src.npz", device="cpu",
                        batch_size=16, chunk_size=41, log=lambda s: None, progress=False)
    a, b, c = np.load(one), np.load(chunked), np.load(src)
    assert a["logits"].shape == (150, 10) and a["logits"].dtype == np.float32
    assert a["labels"].dtype == np.int64 and a["indices"].dtype == np.int64
    np.testing.assert_array_equal(a["labels"], y[idx])
    np.testing.assert_array_equal(a["indices"], idx)
    for other in (b, c):
        np.testing.assert_allclose(other["logits"], a["logits"], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(other["labels"], a["labels"])
        np.testing.assert_array_equal(other["indices"], a["indices"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunked.npz", "one.npz", "src.npz"]
    # all images when indices is None
    full = np.load(export_logits(trained[0], (X, y), None, tmp_path / "all.npz", device="cpu",
                                 log=lambda s: None, progress=False))
    np.testing.assert_allclose(full["logits"][idx], a["logits"], rtol=1e-5, atol=1e-5)


def test_export_in_parallel_blocks_equals_one_process_byte_for_byte(trained, data, tmp_path):
    from fitontest.data.procedural import ProceduralSource

    X, y = data
    idx = np.random.default_rng(1).permutation(len(X))[:170]
    quiet = dict(device="cpu", batch_size=16, chunk_size=23, log=lambda s: None, progress=False,
                 num_threads=1)
    for name, images in [("arrays", (X, y)), ("source", FakeSource(X, y))]:
        one = export_logits(trained[0], images, idx, tmp_path / f"{name}1.npz", **quiet)
        two = export_logits(trained[0], images, idx, tmp_path / f"{name}2.npz", n_jobs=2,
                            **{**quiet, "num_threads": 2})
        assert one.read_bytes() == two.read_bytes(), name
    # a generated source: the workers generate their own blocks
    src = ProceduralSource(400)
    pidx = np.random.default_rng(2).choice(400, 90, replace=False)
    one = export_logits(trained[0], src, pidx, tmp_path / "p1.npz", **quiet)
    three = export_logits(trained[0], src, pidx, tmp_path / "p3.npz", n_jobs=3, **quiet)
    assert one.read_bytes() == three.read_bytes()
    a = np.load(one)
    np.testing.assert_array_equal(a["labels"], src.load(pidx)[1])
    np.testing.assert_array_equal(a["indices"], pidx)


def test_block_plan_covers_every_position_once_in_image_order():
    idx = np.array([7, 3, 9, 3, 0, 5, 1])
    blocks = block_plan(idx, 3)
    assert [len(b) for b in blocks] == [3, 3, 1]
    flat = np.concatenate(blocks)
    assert sorted(flat) == list(range(7))
    assert list(idx[flat]) == sorted(idx)
    with pytest.raises(ValueError, match="chunk_size"):
        block_plan(idx, 0)


def test_export_errors(trained, data, tmp_path):
    X, y = data
    with pytest.raises(ValueError, match="indices"):
        export_logits(trained[0], (X, y), [0, len(X)], tmp_path / "x.npz", device="cpu")
    with pytest.raises(ValueError, match=".npz"):
        export_logits(trained[0], (X, y), None, tmp_path / "x.npy", device="cpu")
    with pytest.raises(TypeError):
        export_logits(trained[0], X, None, tmp_path / "x.npz", device="cpu")
    with pytest.raises(ValueError, match="n_jobs"):
        export_logits(trained[0], (X, y), None, tmp_path / "x.npz", device="cpu", n_jobs=0)
    not_a_model = tmp_path / "bad.pt"
    torch.save({"format": "other"}, not_a_model)
    with pytest.raises(ValueError, match="not a fitontest model"):
        export_logits(not_a_model, (X, y), None, tmp_path / "x.npz", device="cpu")


def test_unreadable_checkpoint_trains_afresh_like_a_clean_run(trained, data, tmp_path):
    X, y = data
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    lines = []
    p = train_model("cnn_tiny", X, y, recipe=RECIPE, out_dir=tmp_path, device="cpu", seed=1,
                    log=lines.append, progress=False)
    assert any("cannot read checkpoint" in line for line in lines)
    clean = state(trained[0])["state_dict"]
    for k, v in state(p)["state_dict"].items():
        assert torch.equal(v, clean[k]), k


@pytest.mark.parametrize("arch", ["resnet8", "densenet10", "wrn10_1"])
def test_export_batch_size_changes_logits_in_their_last_bits_only(arch):
    """The default exports in batches of 64, not 1024 (2-3x less CPU, issue 37).
    With the CPU pinned to AVX2 code (core/pins.py), oneDNN's one-thread
    convolutions block their loops by the batch size, so an image's logits
    can change in their last bits with its batch: the batch size is part of a
    run's config, and a batch's logits are the same on every call; across
    batch sizes they agree to float32 rounding (random weights, eval mode)."""
    from fitontest import models
    from fitontest.vision.export import predict_logits

    torch.manual_seed(0)
    net = models.get(arch, num_classes=10).eval()
    X = np.random.default_rng(0).integers(0, 256, (300, 32, 32, 3), dtype=np.uint8)
    mean, std = [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]
    with torch_threads(1):
        big = predict_logits(net, X, mean, std, batch_size=1024)
        for bs in (64, 7):
            got = predict_logits(net, X, mean, std, batch_size=bs)
            assert np.array_equal(predict_logits(net, X, mean, std, batch_size=bs), got)
            np.testing.assert_allclose(got, big, rtol=1e-5, atol=1e-4 * np.abs(big).max())


