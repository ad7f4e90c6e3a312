"""Model registry: parameter counts of the paper networks, forward passes."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from fitontest import models

PAPER = {"resnet110": 1.73e6, "densenet40": 1.0e6, "wrn32": 46e6}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def wrn32():
    torch.manual_seed(0)
    return models.get("wrn32")


def test_registry_names():
    names = models.names()
    for name in ["resnet110", "densenet40", "wrn32", "resnet20", "resnet8",
                 "densenet_small", "densenet10", "wrn16_2", "wrn10_2", "cnn_tiny"]:
        assert name in names
    with pytest.raises(KeyError, match="unknown model"):
        models.get("resnet111")


@pytest.mark.parametrize("name", ["resnet110", "densenet40"])
def test_paper_parameter_counts(name):
    n = models.count_parameters(models.get(name))
    assert abs(n - PAPER[name]) / PAPER[name] < 0.03, n


def test_widenet32_is_wrn34_10(wrn32):
    n = models.count_parameters(wrn32)
    assert abs(n - PAPER["wrn32"]) / PAPER["wrn32"] < 0.01, n
    assert n == 46_160_474
    convs = [m for m in wrn32.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 34  # 1 stem + 3 stages x 5 blocks x 2 + 3 projection shortcuts
    assert wrn32.fc.in_features == 640
    wrn32.eval()
    with torch.inference_mode():
        out = wrn32(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, 10) and torch.isfinite(out).all()


def test_resnet110_structure():
    net = models.get("resnet110")
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 109  # 1 + 3*18*2; option-A shortcuts have no convolution
    assert all(c.kernel_size == (3, 3) for c in convs)
    assert net.fc.in_features == 64


def test_densenet40_structure():
    net = models.get("densenet40")
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 1 + 36 + 2  # stem, 3 blocks x 12 layers, 2 transitions
    assert net.fc.in_features == 16 + 36 * 12  # no compression


@pytest.mark.parametrize("name", [n for n in models.names() if n != "wrn32"])
def test_forward_every_model(name):
    torch.manual_seed(0)
    net = models.get(name, num_classes=7).eval()
    with torch.inference_mode():
        out = net(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, 7) and out.dtype == torch.float32 and torch.isfinite(out).all()


@pytest.mark.parametrize("name", ["resnet8", "densenet10", "wrn10_2", "cnn_tiny"])
def test_backward_small_models(name):
    torch.manual_seed(0)
    net = models.get(name, num_classes=7).train()
    out = net(torch.randn(4, 3, 32, 32))
    assert out.shape == (4, 7)
    out.logsumexp(1).sum().backward()
    assert all(p.grad is not None for p in net.parameters())


def test_head_runs_in_float32_under_autocast():
    net = models.get("resnet8").eval()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(torch.randn(2, 3, 32, 32))
    assert out.dtype == torch.float32


def test_same_seed_same_init():
    torch.manual_seed(3)
    a = models.get("resnet20").state_dict()
    torch.manual_seed(3)
    b = models.get("resnet20").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
