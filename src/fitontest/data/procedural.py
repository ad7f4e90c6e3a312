"""Procedural pseudo-real images: the embedded, download-free stand-in for CIFAR-5m.

The default workflow config must run end to end on a 2-core laptop, so it
cannot use CIFAR-5m. This module generates CIFAR-shaped images (32×32×3
uint8, 10 classes) from a documented latent-variable model whose class
posterior P(y | image) is *known*: the label of every image is drawn from it,
so trained networks face irreducible label noise and are measurably
miscalibrated, and the exact posterior is available for checks
(:meth:`ProceduralSource.posterior`).

Generative model (per image; all draws from the block's generator)
-------------------------------------------------------------------
Class k = 2j + s (pair j = 0..4, sibling s = 0/1) has three visual features:

- **shape** of the object: disc, square, ring, diamond, cross (one per pair j,
  so the two siblings share the shape);
- **palette**: two stripe colours, palette (j + s) mod 5 — every palette is
  used by two classes of different shapes, so colour alone is not decisive;
- **texture**: a grating inside the object with orientation
  45°·(j mod 2) + 90°·s (siblings orthogonal) and period 8 px or 4.5 px
  (alternating with j + s).

Latents of one image:

1. visual class ``a`` ~ uniform{0..9};
2. ambiguity: with probability ``mix_prob`` the image also shows a second
   class ``b`` ≠ a (the sibling of a with probability 1/2, else uniform over
   the other 8 classes) with visual weight m ~ U(0, ``mix_max``); otherwise
   m = 0. The object is the alpha blend (1 − m)·object_a + m·object_b of the
   two classes' objects, drawn at the same place and size (a morph of the two);
3. clarity c ~ U(``clarity_min``, 1): the contrast of the object against the
   background (low clarity = faint object);
4. nuisance, independent of the class: object centre (±6 px) and radius
   (6–11 px), texture phase, orientation (±8°) and period (±8 %) jitter,
   palette jitter (±25 per channel), background colour (grey level plus
   tint), a grey background grating ("clutter": any orientation, period
   3–12 px, amplitude up to 30), a linear illumination gradient (up to
   ±30 %), and additive triangular pixel noise (amplitude ``noise``,
   std ≈ noise/√6).

Pixel value = illumination · (bg + clutter + c·[(1 − m)·mask_a·(colour_a − bg)
+ m·mask_b·(colour_b − bg)]) + noise, rounded and clipped to 0..255
(colour_k: the two palette colours of class k alternating with the stripes
of its grating).

Label: y ~ P(y | a, b, m, c) = softmax(β·c·((1 − m)·e_a + m·e_b)) with
β = ``beta`` (e_k the k-th unit vector). The posterior depends only on
latents that are visible in the image (the two blended objects, their
weights and the object contrast), so it is the Bayes posterior given the
image up to the pixel noise and the nuisance that blurs how exactly c and m
can be read off. It mixes confident images (clear, unmixed: max-posterior
up to 0.99) with ambiguous ones (faint or half-blended: 0.3–0.6); with the
defaults the mean max-posterior is ≈ 0.78 (so the Bayes accuracy is ≈ 0.78),
quartiles ≈ 0.64 / 0.84 / 0.95.

Learnability (default settings): a 3-layer CNN (16/32/32 channels, BatchNorm,
Adam) trained on CPU reaches ≈ 0.69 top-1 accuracy after 5 epochs on 3,000
images and ≈ 0.72 after 4 epochs on 8,000 (≈ 20–25 CPU-seconds), and is
clearly miscalibrated (top-label ECE ≈ 0.08–0.11, under-confident early in
training).

Determinism and addressing
--------------------------
Image i belongs to block b = i // ``block_size``; the latents and labels of
the whole block come from ``numpy.random.default_rng([seed, 0, b])`` (a few
numbers per image, cheap), so every image can be regenerated alone, in any
order, identically. Pixel noise is a window of a fixed noise bank (generated
once from ``default_rng([seed, 1])``) at an offset drawn with the latents.
Rendering is vectorised over images (separable gratings and shape distance
fields from 32-vectors; no per-image Python loop); 10^6 images take well
under a minute on one core (``benchmarks/speed/procedural_speed.py``).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

import numpy as np

from fitontest.core.validation import check_indices

NUM_CLASSES = 10
IMAGE_SHAPE = (32, 32, 3)

#: ``config["procedural"]`` keys, their defaults and meaning.
DEFAULTS: dict = {
    "seed": 2026,          # master seed of the image stream
    "block_size": 10_000,  # images per independently seeded block
    "beta": 7.0,           # label-noise inverse temperature of the posterior
    "mix_prob": 0.5,       # probability that an image blends a second class
    "mix_max": 0.5,        # maximum visual weight m of the second class
    "clarity_min": 0.35,   # minimum object contrast c (c ~ U(clarity_min, 1))
    "noise": 24.0,         # amplitude of the triangular pixel noise (0..255 scale)
}

SHAPES = ("disc", "square", "ring", "diamond", "cross")

# stripe colours (RGB, 0..255) of the five palettes
PALETTES = np.array([
    [[200, 45, 40], [245, 160, 70]],    # red / orange
    [[35, 65, 200], [130, 190, 245]],   # blue / sky
    [[30, 150, 55], [175, 225, 95]],    # green / lime
    [[140, 40, 165], [235, 135, 215]],  # purple / pink
    [[60, 45, 25], [235, 215, 80]],     # brown / yellow
], dtype=np.float32)

_k = np.arange(NUM_CLASSES)
CLASS_SHAPE = _k // 2
CLASS_PALETTE = (_k // 2 + _k % 2) % 5
CLASS_ORIENT = np.deg2rad(45.0 * ((_k // 2) % 2) + 90.0 * (_k % 2))
CLASS_PERIOD = np.where((_k // 2 + _k % 2) % 2 == 0, 8.0, 4.5)

# nuisance ranges
P_SHIFT = 6.0        # object centre offset (px) ~ U(-P_SHIFT, P_SHIFT) per axis
R_MIN, R_MAX = 6.0, 11.0   # object radius (px)
PAL_JITTER = 25.0    # per-channel jitter of the palette colours (0..255 scale)
CLUTTER_AMP = 30.0   # max amplitude of the background grating clutter


def _clutter_k(u):
    """Wave vectors (n, 2) of the background grating: any orientation, period 3-12 px."""
    theta = np.pi * u[:, 0]
    freq = 2.0 * np.pi / (3.0 + 9.0 * u[:, 1])
    return np.stack([freq * np.cos(theta), freq * np.sin(theta)], axis=1)


_NOISE_BANK_LEN = 1 << 22
_COORD = (np.arange(32, dtype=np.float32) - 15.5)


def check_params(params: dict) -> dict:
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown procedural setting(s) {sorted(unknown)}; "
                         f"known: {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    p["seed"] = int(p["seed"])
    p["block_size"] = int(p["block_size"])
    if p["block_size"] < 1:
        raise ValueError(f"procedural.block_size must be positive, got {p['block_size']}")
    for key in ("beta", "mix_prob", "mix_max", "clarity_min", "noise"):
        p[key] = float(p[key])
        if not np.isfinite(p[key]) or p[key] < 0:
            raise ValueError(f"procedural.{key} must be a finite non-negative number, "
                             f"got {p[key]!r}")
    for key in ("mix_prob", "mix_max", "clarity_min"):
        if p[key] > 1:
            raise ValueError(f"procedural.{key} must lie in [0, 1], got {p[key]}")
    if p["noise"] > 127:
        raise ValueError(f"procedural.noise must be at most 127, got {p['noise']}")
    return p


class ProceduralSource:
    """Block-addressable procedural image source (see the module docstring).

    ``n_images`` is the number of addressable images (indices 0..n_images-1);
    image i does not depend on ``n_images``.
    """

    num_classes = NUM_CLASSES
    has_posterior = True

    def __init__(self, n_images: int, **params):
        self.n_images = int(n_images)
        if self.n_images < 1:
            raise ValueError(f"n_images must be positive, got {n_images}")
        self.params = check_params(params)
        self.seed = self.params["seed"]
        self.block_size = self.params["block_size"]
        self._bank: np.ndarray | None = None
        self._latent_cache: OrderedDict[int, dict] = OrderedDict()

    def __repr__(self) -> str:
        return f"ProceduralSource(n_images={self.n_images}, {self.params})"

    # -- latents ---------------------------------------------------------------
    def block_latents(self, block: int) -> dict[str, np.ndarray]:
        """All latents, posteriors and labels of one block (cached, small)."""
        block = int(block)
        hit = self._latent_cache.get(block)
        if hit is not None:
            self._latent_cache.move_to_end(block)
            return hit
        lat = self._draw_block(block)
        self._latent_cache[block] = lat
        while len(self._latent_cache) > 8:
            self._latent_cache.popitem(last=False)
        return lat

    def _draw_block(self, block: int) -> dict[str, np.ndarray]:
        p = self.params
        n = self.block_size
        rng = np.random.default_rng([self.seed, 0, block])
        # the order of the draws is part of the format: never reorder
        a = rng.integers(0, NUM_CLASSES, n)
        mixed = rng.random(n) < p["mix_prob"]
        m = rng.random(n) * p["mix_max"]
        m = np.where(mixed, m, 0.0)
        to_sibling = rng.random(n) < 0.5
        other = rng.integers(0, NUM_CLASSES - 2, n)
        pair_start = 2 * (a // 2)
        other = other + 2 * (other >= pair_start)
        b = np.where(to_sibling, a ^ 1, other)
        clarity = p["clarity_min"] + (1.0 - p["clarity_min"]) * rng.random(n)
        centre = rng.uniform(-P_SHIFT, P_SHIFT, (n, 2))
        radius = rng.uniform(R_MIN, R_MAX, n)
        tex = rng.random((n, 2, 3))            # (layer a/b) x (orient, period, phase)
        bg_grey = rng.uniform(45.0, 210.0, n)
        bg_tint = rng.uniform(-40.0, 40.0, (n, 3))
        illum = rng.random((n, 2))             # strength, direction
        noise_off = rng.integers(0, _NOISE_BANK_LEN - 3072 + 1, n)
        u = rng.random(n)
        pal_jitter = rng.uniform(-1.0, 1.0, (n, 2, 3))   # (layer a/b) x RGB
        clutter = rng.random((n, 4))           # orientation, period, phase, amplitude

        logits = np.zeros((n, NUM_CLASSES))
        rows = np.arange(n)
        scale = p["beta"] * clarity
        logits[rows, a] += scale * (1.0 - m)
        logits[rows, b] += scale * m
        logits -= logits.max(axis=1, keepdims=True)
        post = np.exp(logits)
        post /= post.sum(axis=1, keepdims=True)
        y = (np.cumsum(post, axis=1) <= u[:, None]).sum(axis=1)
        y = np.minimum(y, NUM_CLASSES - 1).astype(np.int64)

        orient_j = np.deg2rad(8.0) * (2.0 * tex[..., 0] - 1.0)
        period_j = 1.0 + 0.08 * (2.0 * tex[..., 1] - 1.0)
        phase = 2.0 * np.pi * tex[..., 2]
        classes = np.stack([a, b], axis=1)
        theta = CLASS_ORIENT[classes] + orient_j
        freq = 2.0 * np.pi / (CLASS_PERIOD[classes] * period_j)
        bg = np.clip(bg_grey[:, None] + bg_tint, 10.0, 245.0)
        return {
            "a": a, "b": b, "m": m, "clarity": clarity, "label": y, "posterior": post,
            "centre": centre, "radius": radius,
            "kx": freq * np.cos(theta), "ky": freq * np.sin(theta), "phase": phase,
            "bg": bg, "illum_strength": 0.3 * illum[:, 0],
            "illum_angle": 2.0 * np.pi * illum[:, 1], "noise_off": noise_off,
            "pal_jitter": PAL_JITTER * pal_jitter,
            "clutter_k": _clutter_k(clutter), "clutter_phase": 2.0 * np.pi * clutter[:, 2],
            "clutter_amp": CLUTTER_AMP * clutter[:, 3],
        }

    def _noise_bank(self) -> np.ndarray:
        if self._bank is None:
            rng = np.random.default_rng([self.seed, 1])
            tri = (rng.integers(0, 256, _NOISE_BANK_LEN, dtype=np.int16)
                   + rng.integers(0, 256, _NOISE_BANK_LEN, dtype=np.int16) - 255)
            # +0.5 so that truncation to uint8 rounds to nearest
            self._bank = (tri.astype(np.float32) * np.float32(self.params["noise"] / 255.0)
                          + np.float32(0.5))
        return self._bank

    # -- indices -----------------------------------------------------------------
    def _check_indices(self, indices) -> np.ndarray:
        return check_indices(indices, self.n_images)

    def _gather(self, idx: np.ndarray, keys) -> dict[str, np.ndarray]:
        """Latent arrays for sorted unique global indices ``idx``."""
        blocks = idx // self.block_size
        out: dict[str, list] = {k: [] for k in keys}
        bounds = np.flatnonzero(np.diff(blocks)) + 1
        for part in np.split(np.arange(idx.size), bounds):
            if part.size == 0:
                continue
            lat = self.block_latents(int(blocks[part[0]]))
            local = idx[part] - int(blocks[part[0]]) * self.block_size
            for k in keys:
                out[k].append(lat[k][local])
        return {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in out.items()}

    # -- public API ------------------------------------------------------------------
    def labels(self, indices) -> np.ndarray:
        idx = self._check_indices(indices)
        uniq, inv = np.unique(idx, return_inverse=True)
        return self._gather(uniq, ["label"])["label"].astype(np.int64)[inv]

    def posterior(self, indices) -> np.ndarray:
        """(n, 10) float64 class posterior P(y | image) the labels were drawn from."""
        idx = self._check_indices(indices)
        uniq, inv = np.unique(idx, return_inverse=True)
        post = self._gather(uniq, ["posterior"])["posterior"]
        return post.reshape(-1, NUM_CLASSES)[inv]

    def load(self, indices) -> tuple[np.ndarray, np.ndarray]:
        idx = self._check_indices(indices)
        uniq, inv = np.unique(idx, return_inverse=True)
        X, y = self._render_sorted(uniq)
        if uniq.size == idx.size and np.array_equal(uniq, idx):
            return X, y
        return X[inv], y[inv]

    def iter_chunks(self, indices, chunk_size: int = 50_000
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(X, y, positions into ``indices``) in chunks of at most ``chunk_size``,
        in increasing image index (block locality); memory bounded by one chunk."""
        idx = self._check_indices(indices)
        chunk_size = int(chunk_size)
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        order = np.argsort(idx, kind="stable")
        for start in range(0, order.size, chunk_size):
            pos = order[start:start + chunk_size]
            X, y = self.load(idx[pos])
            yield X, y, pos

    def iter_blocks(self, start: int = 0, stop: int | None = None
                    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(first index, X, y) block by block over [start, stop) (streaming)."""
        stop = self.n_images if stop is None else int(stop)
        b0 = int(start) // self.block_size
        for b in range(b0, -(-stop // self.block_size)):
            lo = max(b * self.block_size, int(start))
            hi = min((b + 1) * self.block_size, stop)
            if hi > lo:
                X, y = self.load(np.arange(lo, hi))
                yield lo, X, y

    # -- rendering ---------------------------------------------------------------------
    _KEYS = ("a", "b", "m", "clarity", "label", "centre", "radius", "kx", "ky", "phase",
             "bg", "illum_strength", "illum_angle", "noise_off", "pal_jitter",
             "clutter_k", "clutter_phase", "clutter_amp")

    def _render_sorted(self, idx: np.ndarray, batch: int = 256):
        lat = self._gather(idx, self._KEYS)
        n = idx.size
        X = np.empty((n,) + IMAGE_SHAPE, dtype=np.uint8)
        bank = self._noise_bank()
        for s in range(0, n, batch):
            sl = slice(s, min(s + batch, n))
            X[sl] = _render({k: v[sl] for k, v in lat.items()}, bank)
        return X, lat["label"].astype(np.int64)


def _shape_mask(shape_ids, dx, dy, radius):
    """Soft (anti-aliased) masks (n, 32, 32) of the class shapes.

    ``dx`` (n, 1, 32), ``dy`` (n, 32, 1) are coordinates in units of the radius;
    each shape is {d <= 1} for a distance-like d, with a 1-px soft edge.
    """
    n = shape_ids.shape[0]
    out = np.empty((n, 32, 32), dtype=np.float32)
    ax, ay = np.abs(dx), np.abs(dy)
    for s in range(len(SHAPES)):
        sel = np.flatnonzero(shape_ids == s)
        if sel.size == 0:
            continue
        x, y, px, py = dx[sel], dy[sel], ax[sel], ay[sel]
        if s == 0:      # disc
            d, edge = np.sqrt(x * x + y * y), 1.0
        elif s == 1:    # square (same area as the disc)
            d, edge = np.maximum(px, py) * np.float32(1.12), 1.0 / 1.12
        elif s == 2:    # ring, annulus 0.40..1.04
            d, edge = np.abs(np.sqrt(x * x + y * y) - np.float32(0.72)) * np.float32(1 / 0.32), 0.32
        elif s == 3:    # diamond
            d, edge = (px + py) * np.float32(0.8), 0.8 / np.sqrt(2.0)
        else:           # cross: two bars of half-width 0.3
            d = np.maximum(np.minimum(px, py) * np.float32(1 / 0.3),
                           np.maximum(px, py) * np.float32(1 / 1.05))
            edge = 0.3
        r = (radius[sel] * edge).astype(np.float32)[:, None, None]
        out[sel] = np.clip((1.0 - d) * r + np.float32(0.5), 0.0, 1.0)
    return out


def _render(lat: dict, bank: np.ndarray) -> np.ndarray:
    """Render images (n, 32, 32, 3) uint8 from their latents.

    Computed channel-planar, (n, 3, 1024), so every broadcast has a long inner
    loop, and transposed to NHWC once at the end.
    """
    n = lat["a"].shape[0]
    f32 = np.float32
    c = _COORD
    cx = lat["centre"][:, 0].astype(f32)[:, None]
    cy = lat["centre"][:, 1].astype(f32)[:, None]
    inv_r = (1.0 / lat["radius"]).astype(f32)[:, None]
    dx = ((c[None, :] - cx) * inv_r)[:, None, :]     # (n, 1, 32): columns
    dy = ((c[None, :] - cy) * inv_r)[:, :, None]     # (n, 32, 1): rows
    bg = lat["bg"].astype(f32)                       # (n, 3)
    # background colour plus clutter: a grey grating of random orientation and period
    kx = lat["clutter_k"][:, 0].astype(f32)[:, None]
    ky = lat["clutter_k"][:, 1].astype(f32)[:, None]
    amp = lat["clutter_amp"].astype(f32)[:, None]
    ax = kx * c[None, :] + lat["clutter_phase"].astype(f32)[:, None]
    ay = ky * c[None, :]
    clut = ((amp * np.cos(ay))[:, :, None] * np.cos(ax)[:, None, :]
            - (amp * np.sin(ay))[:, :, None] * np.sin(ax)[:, None, :])
    img = bg[:, :, None] + clut.reshape(n, 1, 1024)                  # (n, 3, 1024)
    clar = lat["clarity"].astype(f32)
    m = lat["m"].astype(f32)
    for layer, cls, weight in ((0, lat["a"], clar * (1 - m)), (1, lat["b"], clar * m)):
        sel = np.arange(n) if layer == 0 else np.flatnonzero(m > 0)
        if sel.size == 0:
            continue
        k = cls[sel]
        mask = _shape_mask(CLASS_SHAPE[k], dx[sel], dy[sel], lat["radius"][sel])
        mask *= weight[sel][:, None, None]
        # separable grating cos(kx x + ky y + phase) on image coordinates
        kx = lat["kx"][sel, layer].astype(f32)[:, None]
        ky = lat["ky"][sel, layer].astype(f32)[:, None]
        ph = lat["phase"][sel, layer].astype(f32)[:, None]
        ax = kx * c[None, :] + ph
        ay = ky * c[None, :]
        t = (np.cos(ay)[:, :, None] * np.cos(ax)[:, None, :]
             - np.sin(ay)[:, :, None] * np.sin(ax)[:, None, :])
        stripe = np.clip(f32(0.5) + f32(0.9) * t, 0.0, 1.0)          # (s, 32, 32)
        stripe *= mask                                                 # weighted stripes
        pal = PALETTES[CLASS_PALETTE[k]]                               # (s, 2, 3)
        pal = pal + lat["pal_jitter"][sel, layer].astype(f32)[:, None, :]
        col0 = pal[:, 0] - bg[sel]                                     # (s, 3)
        dcol = pal[:, 1] - pal[:, 0]
        stripe = stripe.reshape(-1, 1024)
        mask = mask.reshape(-1, 1024)
        tmp = np.empty_like(stripe)
        for ch in range(3):
            np.multiply(stripe, dcol[:, ch, None], out=tmp)
            tmp += mask * col0[:, ch, None]
            if layer == 0:
                img[:, ch] += tmp
            else:
                img[sel, ch] += tmp
    # illumination gradient and pixel noise
    ang = lat["illum_angle"]
    g = lat["illum_strength"]
    gx = (g * np.cos(ang) / 16.0).astype(f32)[:, None]
    gy = (g * np.sin(ang) / 16.0).astype(f32)[:, None]
    illum = f32(1.0) + (gy * c[None, :])[:, :, None] + (gx * c[None, :])[:, None, :]
    img *= illum.reshape(n, 1, 1024)
    windows = np.lib.stride_tricks.sliding_window_view(bank, 3072)
    img += windows[lat["noise_off"]].reshape(n, 3, 1024)   # noise (+0.5: rounding)
    np.clip(img, 0.0, 255.0, out=img)
    planar = img.astype(np.uint8)
    out = np.empty((n, 1024, 3), dtype=np.uint8)
    for ch in range(3):
        out[:, :, ch] = planar[:, ch]
    return out.reshape(n, 32, 32, 3)
