"""Registry, input validation, CV selection rule, basic metrics, thread limits and devices."""
import os

import numpy as np
import pytest

from fitontest import metrics
from fitontest.core.registry import Registry
from fitontest.core.selection import complexity_rule, kfold_indices
from fitontest.core.validation import check_binary, check_scores, logit


def test_registry_register_get_names_and_errors():
    reg = Registry("thing")

    @reg.register("a", k=3)
    @reg.register("b", k=5)
    class Thing:
        def __init__(self, k=1):
            self.k = k

    assert reg.names() == ["a", "b"]
    assert reg.get("a").k == 3 and reg.get("b").k == 5 and reg.get("a", k=7).k == 7
    assert reg.get("a") is not reg.get("a")
    with pytest.raises(KeyError, match="unknown thing 'zzz'.*a, b"):
        reg.get("zzz")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(Thing)


def test_a_plugin_class_goes_to_the_registry_of_its_base(tmp_path, monkeypatch):
    """``path.py:ClassName`` registers the class in the registry whose ``base``
    it subclasses; a class subclassing no registry's base is a ValueError."""
    from fitontest.core import registry

    monkeypatch.setattr(registry, "_TYPED", [])   # keep the package's registries untouched
    monkeypatch.setattr(registry, "_loaded", {})

    (tmp_path / "probe_bases.py").write_text("class Animal:\n    pass\n"
                                            "class Rock:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import probe_bases

    animals = Registry("animal", base=probe_bases.Animal)
    rocks = Registry("rock", base=probe_bases.Rock)
    plugin = tmp_path / "zoo.py"
    plugin.write_text("from probe_bases import Animal\n"
                      "class Cat(Animal):\n    pass\n"
                      "class Car:\n    pass\n")
    cat = registry.load_plugin(f"{plugin}:Cat")
    assert animals.entry("Cat") is cat and "Cat" not in rocks
    with pytest.raises(ValueError, match=r"'Car' derives from no registry's base class "
                                         r"\(Animal, Rock\)"):
        registry.load_plugin(f"{plugin}:Car")


@pytest.mark.parametrize("bad,msg", [
    ([0.1, np.nan], "NaN or infinity"),
    ([0.1, np.inf], "NaN or infinity"),
    ([0.1, 1.5], r"in \[0, 1\]"),
    ([-0.01, 0.5], r"in \[0, 1\]"),
    ([[0.1, 0.2]], "1-D"),
    (["a", "b"], "numeric"),
])
def test_bad_scores_are_named(bad, msg):
    with pytest.raises(ValueError, match=msg):
        check_scores(bad)


def test_bad_binary_sets_are_named():
    with pytest.raises(ValueError, match="must be 0 or 1"):
        check_binary([0.1, 0.2], [0, 2])
    with pytest.raises(ValueError, match="differ in length"):
        check_binary([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(ValueError, match="at least 2 points"):
        check_binary([0.1], [1])
    with pytest.raises(ValueError, match="single class"):
        check_binary([0.1, 0.2], [1, 1])
    with pytest.raises(ValueError, match="fewer points"):
        check_binary([0.1, 0.2, 0.3], [0, 1, 0], n_folds=10)
    s, y = check_binary([0, 1], [True, False])
    assert s.dtype == np.float64 and y.tolist() == [1.0, 0.0]


def test_logit_clips_at_1e16():
    z = logit([0.0, 1.0, 0.5])
    assert np.isfinite(z).all() and z[2] == 0.0
    assert z[1] == pytest.approx(-np.log(1e-16)) and z[0] == -z[1]


def test_complexity_rule_on_hand_made_table():
    bins = [1, 2, 3, 4, 5]
    # minimum 0.2000 at B=4; B=2 is within 0.1 % (0.2002 <= 0.2002), B=1 is not
    assert complexity_rule(bins, [0.21, 0.2002, 0.2001, 0.2000, 0.2003]) == 2
    # just outside the tolerance -> next qualifying one
    assert complexity_rule(bins, [0.21, 0.20021, 0.2001, 0.2000, 0.2003]) == 3
    # tol=0 is the arg-min
    assert complexity_rule(bins, [0.21, 0.2002, 0.2001, 0.2000, 0.2003], tol=0) == 4
    assert complexity_rule(bins, [np.nan, 0.3, 0.3, np.inf, 0.1]) == 5
    with pytest.raises(ValueError, match="one CV score per candidate"):
        complexity_rule(bins, [0.1])


def test_kfold_partitions_and_is_seeded():
    folds = kfold_indices(23, 5, seed=1)
    held = np.concatenate([te for _, te in folds])
    assert np.array_equal(np.sort(held), np.arange(23))
    for tr, te in folds:
        assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == 23
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, kfold_indices(23, 5, seed=1)))
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(folds, kfold_indices(23, 5, seed=2)))


def test_metrics_by_hand():
    s = np.array([0.2, 0.6, 0.9])
    c = np.array([0.1, 0.6, 0.5])
    assert metrics.true_ce(s, c) == pytest.approx((0.1 + 0 + 0.4) / 3)
    assert metrics.true_ce(s, c, p=2) == pytest.approx((0.01 + 0 + 0.16) / 3)
    assert metrics.ce_estimate(s, [0.3, 0.6, 1.2]) == pytest.approx((0.1 + 0 + 0.3) / 3)
    assert metrics.cmee([0.3, 0.6, 1.2], c) == pytest.approx((0.2 + 0 + 0.7) / 3)
    with pytest.raises(ValueError, match="p must be 1 or 2"):
        metrics.true_ce(s, c, p=3)


# ------------------------------------------------------- runtime: threads, device
def test_torch_threads_are_restored_after_the_block_even_on_error():
    torch = pytest.importorskip("torch")
    from fitontest.core.runtime import set_torch_threads, torch_threads

    old = torch.get_num_threads()
    try:
        set_torch_threads(1)
        with torch_threads(2):
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 1
        with pytest.raises(KeyError), torch_threads(2):
            raise KeyError
        assert torch.get_num_threads() == 1
        with torch_threads(None):          # None leaves the setting alone
            assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(old)


def test_blas_and_numba_threads_are_restored_after_the_block():
    from threadpoolctl import threadpool_info

    from fitontest.core.runtime import blas_threads, numba_threads

    def blas():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas()
    with blas_threads(1):
        assert all(n == 1 for n in blas())
    assert blas() == before

    numba = pytest.importorskip("numba")
    before = numba.get_num_threads()
    with numba_threads(1):
        assert numba.get_num_threads() == 1
    with numba_threads(10_000):            # capped at the threads numba started with
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    assert numba.get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_thread_counts_are_named(bad):
    from fitontest.core.runtime import blas_threads, set_torch_threads

    with pytest.raises(ValueError, match="n_threads must be a positive integer"):
        with blas_threads(bad):
            pass
    with pytest.raises(ValueError, match="num_threads must be a positive integer"):
        set_torch_threads(bad)


def test_limit_threads_sets_the_job_wide_limit():
    import subprocess
    import sys

    code = ("import os, numpy; from threadpoolctl import threadpool_info; "
            "from fitontest.core.runtime import limit_threads; limit_threads(1); "
            "assert os.environ['OMP_NUM_THREADS'] == '1', os.environ['OMP_NUM_THREADS']; "
            "assert all(p['num_threads'] == 1 for p in threadpool_info())")
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0


def test_resolve_device_names_and_errors(monkeypatch):
    torch = pytest.importorskip("torch")
    from fitontest.core.runtime import DeviceUnavailableError, resolve_device

    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(" CPU ") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    if not torch.cuda.is_available():
        assert resolve_device("auto") == torch.device("cpu")
    for bad in ("tpu", "cuda:x", ""):
        with pytest.raises(ValueError, match="device"):
            resolve_device(bad)
    with pytest.raises(ValueError, match="device must be"):
        resolve_device(3)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    for name in ("cuda", "cuda:0"):
        with pytest.raises(DeviceUnavailableError, match="CUDA is not available") as err:
            resolve_device(name)
        assert isinstance(err.value, ValueError)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("auto") == torch.device("cuda")
    with pytest.raises(ValueError, match="only 1 CUDA device"):
        resolve_device("cuda:1")
