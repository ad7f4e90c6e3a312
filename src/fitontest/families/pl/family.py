"""The PL / PL3 calibration-map families: the estimator (docs/methods/04-pl.md §4).

- ``pl_ce`` / ``pl_mse``: continuous piecewise-linear map in probability space,
  heights ``sigmoid(eta)`` at knots ``0 = t_0 < ... < t_{k+1} = 1``;
- ``pl3_ce`` / ``pl3_mse``: piecewise linear in logit-logit space, knots
  ``logit(t_j)`` (ends +-logit(1 - 1e-16) ~ +-36.84), unbounded heights,
  ``c_hat(s) = sigmoid(interpolation at logit(s))``.

Interior knots are ``cumsum(softmax(beta))`` (ordered by construction). The
number of pieces k + 1 is chosen by 10-fold cross-validation over
k = 0 .. min(n // 200, 15) interior knots, scored by the held-out squared
error, with the 0.1 % complexity rule; the prediction is the average of the
10 fold models at the chosen k (no refit). All folds x all k are trained at
once by :class:`.trainer.BatchedTrainer` (fused numba kernels on the CPU,
one batched torch program on CUDA).

Choices where the paper is silent (docs/methods/04-pl.md §4); those of the
training (early stopping monitor, mini-batches, loss clipping, PL3 knots and
initialisation) are stated with the code in :mod:`.algorithm`:

- held-out score of a fold model: mean (c_hat(s) - y)^2 over the held-out fold;
  the CV score of a k is the mean over folds;
- ``selection="sweep"``: fit every k = 0 .. max_knots once on all points
  (mini-batches of size about min(n // 4, 512)); a map is monotone when its
  knot heights are non-decreasing; the chosen k is the last one before the
  first non-monotone k (k = 0 if already the one-piece map decreases), and
  its single full-data map is the prediction.
"""
from __future__ import annotations

import numpy as np

from ...core.selection import complexity_rule, kfold_indices
from fitontest.core.extras import require
from fitontest.core.validation import check_option, logit
from .. import CalibrationFamily, register
from .maps import evaluate_map

_SPACES = ("prob", "logit")
_LOSSES = ("ce", "mse")
OPTIMIZERS = ("adam", "lbfgs")


@register("pl_ce", space="prob", loss="ce")
@register("pl_mse", space="prob", loss="mse")
@register("pl3_ce", space="logit", loss="ce")
@register("pl3_mse", space="logit", loss="mse")
class PiecewiseLinearFamily(CalibrationFamily):
    """Piecewise-linear map (PL; PL3 in logit space), trained by cross-entropy or MSE, pieces by CV.

    PL (``space="prob"``) or PL3 (``space="logit"``) with CE or MSE loss.

    Parameters
    ----------
    space : "prob" (PL) or "logit" (PL3).
    loss : "ce" (cross-entropy) or "mse" (squared error) training loss.
    n_folds : folds of the cross-validation (and of the averaged prediction).
    max_knots : largest number of interior knots tried; None = min(n // 200, 15)
        (1..6 pieces for n = 1000, 1..16 for n >= 3000); 0 = one piece only.
    tol : relative tolerance of the complexity rule (1e-3 = the paper's
        0.1 % rule; 0 = plain arg-min).
    selection : "cv" (the paper's method) or "sweep" (see the module notes).
    optimizer : "adam" (default): the paper's mini-batch Adam with early
        stopping (docs/methods/04-pl.md §4.4; numba on the CPU, torch on CPU or
        CUDA); "lbfgs": every model minimised to convergence by full-batch
        L-BFGS (§4.8; CPU only), 3-5x faster, less shrinkage towards the
        identity (PL3: better CMEE from n = 3000, much worse at n = 1000;
        measured in docs/methods/04-pl.md §4.8). Model, initialisation, loss, CV
        and fold averaging are the same.
    lr, max_epochs, patience : Adam learning rate, epoch cap, early-stopping
        patience (epochs without a decrease of the training loss);
        ``max_epochs=0`` keeps the identity initialisation (for checks). With
        ``optimizer="lbfgs"`` only ``max_epochs`` is used: it caps the passes
        over the data of every model's L-BFGS.
    seed : seeds the folds and the mini-batch shuffling.
    device : "cpu", "cuda" or "auto" (CUDA when available).
    n_threads : threads of the fit (numba: models spread over threads, the
        same result for any number; torch: intra-op threads, restored
        afterwards). Default 1: workflow jobs already fill the cores, and on
        shared cores torch's barriers stall (a torch fit measured 18x slower
        with 2 threads on a loaded 2-core machine). None: torch's setting.
    backend : "numba" (fused CPU kernels, the fastest on a CPU), "torch"
        (CPU or CUDA) or "auto" (numba on the CPU, torch on CUDA). Both run
        the same algorithm and agree to rounding.

    Attributes
    ----------
    n_pieces_, n_knots_ : chosen number of pieces and of interior knots (= pieces - 1).
    candidates_ : numbers of pieces tried (1 .. max_knots + 1).
    cv_scores_ : mean held-out squared error per candidate (NaN for "sweep").
    fold_scores_ : (n_folds, n candidates) held-out squared errors ("cv").
    monotone_ : per candidate, whether its map(s) have non-decreasing heights.
    knots_, heights_ : (n_models, ``n_knots_`` + 2) maps at the chosen k, one row per
        fold model ("cv") or one row ("sweep"); knots in the map's input space
        (s for PL, logit(s) for PL3), heights in its output space
        (probabilities for PL, logits for PL3).
    n_epochs_ : (n_models, n candidates) epochs trained by every model.
    train_loss_ : (n_models, n candidates) training loss at the last epoch.
    """

    needs_both_classes = True
    hyper_attr = "n_pieces_"

    def __init__(self, space="prob", loss="ce", n_folds=10, max_knots=None, tol=1e-3,
                 selection="cv", lr=0.01, max_epochs=1500, patience=20, seed=0,
                 device="cpu", n_threads=1, backend="auto", optimizer="adam"):
        self.space = space
        self.loss = loss
        self.n_folds = n_folds
        self.max_knots = max_knots
        self.tol = tol
        self.selection = selection
        self.lr = lr
        self.max_epochs = max_epochs
        self.patience = patience
        self.seed = seed
        self.device = device
        self.n_threads = n_threads
        self.backend = backend
        self.optimizer = optimizer

    # ------------------------------------------------------------- checks
    def _n_folds_needed(self):
        return self.n_folds if self.selection == "cv" else None

    def _check_params(self) -> None:
        check_option("space", self.space, _SPACES)
        check_option("loss", self.loss, _LOSSES)
        check_option("optimizer", self.optimizer, OPTIMIZERS)
        if self.selection not in ("cv", "sweep"):
            raise ValueError(f"selection must be 'cv' or 'sweep', got {self.selection!r}")
        if not isinstance(self.n_folds, (int, np.integer)) or self.n_folds < 2:
            raise ValueError(f"n_folds must be an integer >= 2, got {self.n_folds!r}")
        if self.max_knots is not None and (not isinstance(self.max_knots, (int, np.integer))
                                           or self.max_knots < 0):
            raise ValueError(f"max_knots must be None or an integer >= 0, got {self.max_knots!r}")
        if not (np.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be >= 0, got {self.tol!r}")
        if not (np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not isinstance(self.max_epochs, (int, np.integer)) or self.max_epochs < 0:
            raise ValueError(f"max_epochs must be an integer >= 0, got {self.max_epochs!r}")
        if not isinstance(self.patience, (int, np.integer)) or self.patience < 1:
            raise ValueError(f"patience must be an integer >= 1, got {self.patience!r}")
        if self.device not in ("cpu", "cuda", "auto"):
            raise ValueError(f"device must be 'cpu', 'cuda' or 'auto', got {self.device!r}")
        require("fast", "the PL / PL3 family (pl_ce, pl_mse, pl3_ce, pl3_mse)")
        from .trainer import BACKENDS

        check_option("backend", self.backend, BACKENDS)
        if self.n_threads is not None and (not isinstance(self.n_threads, (int, np.integer))
                                           or self.n_threads < 1):
            raise ValueError(f"n_threads must be None or an integer >= 1, got {self.n_threads!r}")

    def _trainer(self):
        from .trainer import BatchedTrainer

        lbfgs = self.optimizer == "lbfgs"
        # L-BFGS runs on the CPU kernels: "auto" means the CPU for it
        device = "cpu" if lbfgs and self.device == "auto" else self.device
        return BatchedTrainer(space=self.space, loss=self.loss, lr=float(self.lr),
                              max_epochs=int(self.max_epochs), patience=int(self.patience),
                              seed=int(self.seed), device=device,
                              n_threads=self.n_threads, backend=self.backend,
                              optimizer=self.optimizer)

    # ---------------------------------------------------------------- fit
    def _fit(self, s: np.ndarray, y: np.ndarray) -> None:
        self._check_params()
        n = s.shape[0]
        kmax = min(n // 200, 15) if self.max_knots is None else int(self.max_knots)
        ks = np.arange(kmax + 1)
        self.candidates_ = ks + 1
        if self.selection == "cv":
            self._fit_cv(s, y, ks)
        else:
            self._fit_sweep(s, y, ks)
        self.n_pieces_ = self.n_knots_ + 1

    def _fit_cv(self, s, y, ks):
        folds = kfold_indices(s.shape[0], int(self.n_folds), int(self.seed))
        res = self._trainer().fit(s, y, [tr for tr, _ in folds], ks,
                                  n_batches=min(4, min(len(tr) for tr, _ in folds)))
        x = s if self.space == "prob" else logit(s)
        scores = np.empty((len(folds), ks.shape[0]))
        for g, (_, te) in enumerate(folds):
            for c in range(ks.shape[0]):
                pred = evaluate_map(self.space, *res.model(g, c), s[te], x=x[te])
                scores[g, c] = np.mean((pred - y[te]) ** 2)
        self.fold_scores_ = scores
        self.cv_scores_ = scores.mean(axis=0)
        k = int(complexity_rule(list(ks), self.cv_scores_, tol=float(self.tol)))
        self._store(res, k, ks)

    def _fit_sweep(self, s, y, ks):
        n = s.shape[0]
        batch = max(1, min(n // 4, 512))
        res = self._trainer().fit(s, y, [np.arange(n)], ks,
                                  n_batches=max(1, min(n, int(round(n / batch)))))
        self.fold_scores_ = None
        self.cv_scores_ = np.full(ks.shape[0], np.nan)
        mono = np.array([bool(np.all(np.diff(res.model(0, c)[1]) >= 0))
                         for c in range(ks.shape[0])])
        first_bad = np.flatnonzero(~mono)
        if first_bad.size == 0:
            k = int(ks[-1])
        else:
            k = max(int(ks[first_bad[0]]) - 1, 0)
        self._store(res, k, ks, mono)

    def _store(self, res, k, ks, mono=None):
        c = int(np.flatnonzero(ks == k)[0])
        G = res.knots.shape[0]
        self.n_knots_ = k
        self.knots_ = res.knots[:, c, :k + 2].copy()
        self.heights_ = res.heights[:, c, :k + 2].copy()
        self.n_epochs_ = res.n_epochs.copy()
        self.train_loss_ = res.final_loss.copy()
        if mono is None:
            mono = np.array([all(bool(np.all(np.diff(res.model(g, j)[1]) >= 0))
                                 for g in range(G)) for j in range(ks.shape[0])])
        self.monotone_ = mono

    # ------------------------------------------------------------ predict
    def _predict(self, s: np.ndarray) -> np.ndarray:
        x = s if self.space == "prob" else logit(s)
        out = np.zeros_like(s)
        for knots, heights in zip(self.knots_, self.heights_):
            out += evaluate_map(self.space, knots, heights, s, x=x)
        return out / self.knots_.shape[0]
