"""The fast training path's switches, validated (no torch import here, so
configuration checks can use it cheaply; the step itself: :mod:`.fast`; which
switches ``auto`` takes on a device: :mod:`.fast_auto`).

A ``training.fast`` setting is ``"auto"`` (the default: the measured best path
on CUDA, eager elsewhere), ``"eager"``, the name of a path of :data:`PATHS`, or
a mapping of :class:`FastOptions` switches."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from fitontest.core.validation import check_option

__all__ = ["FastOptions", "fast_options", "check_setting", "PATHS", "AUTO",
           "COMPILE_MODES", "CUDAGRAPH_MODES", "PRECISIONS"]

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# modes in which inductor itself records CUDA graphs (cudagraph trees)
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
PRECISIONS = ("auto", "bf16", "fp32")


@dataclasses.dataclass(frozen=True)
class FastOptions:
    """Switches of the fast training path (module notes); all off = eager."""
    device_data: bool = False
    fused_optimizer: bool = False
    compile: str | None = None
    compile_scope: str = "model"
    compile_backend: str = "inductor"
    cuda_graph: bool = False
    channels_last: bool | None = None
    precision: str = "auto"

    @property
    def eager(self) -> bool:
        return self == FastOptions()

    def describe(self) -> str:
        """The switches that are on, for the log."""
        on = {k: v for k, v in dataclasses.asdict(self).items()
              if v != getattr(FastOptions(), k) or (k == "compile_scope" and self.compile)}
        return ", ".join(f"{k}={v}" for k, v in on.items()) or "off (eager)"


def fast_options(value: Any = None) -> FastOptions:
    """Validated :class:`FastOptions` from None, a mapping or FastOptions;
    ValueError naming the problem."""
    if value is None:
        return FastOptions()
    if isinstance(value, FastOptions):
        fields = dataclasses.asdict(value)
    elif isinstance(value, Mapping):
        known = {f.name for f in dataclasses.fields(FastOptions)}
        unknown = set(value) - known
        if unknown:
            raise ValueError(f"unknown fast-training option(s) {sorted(unknown)}; "
                             f"known: {sorted(known)}")
        fields = {**dataclasses.asdict(FastOptions()), **dict(value)}
    else:
        raise TypeError(f"fast options must be a mapping, got {type(value).__name__}")
    for key in ("device_data", "fused_optimizer", "cuda_graph"):
        if not isinstance(fields[key], bool):
            raise ValueError(f"fast option {key} must be true/false, got {fields[key]!r}")
    if fields["channels_last"] is not None and not isinstance(fields["channels_last"], bool):
        raise ValueError("fast option channels_last must be true/false/null, "
                         f"got {fields['channels_last']!r}")
    if fields["compile"] is not None and fields["compile"] not in COMPILE_MODES:
        raise ValueError(f"fast option compile must be null or one of {COMPILE_MODES}, "
                         f"got {fields['compile']!r}")
    if fields["compile_scope"] not in ("model", "step"):
        raise ValueError("fast option compile_scope must be 'model' or 'step', "
                         f"got {fields['compile_scope']!r}")
    if not isinstance(fields["compile_backend"], str) or not fields["compile_backend"]:
        raise ValueError("fast option compile_backend must be a backend name, "
                         f"got {fields['compile_backend']!r}")
    check_option("fast option precision", fields["precision"], PRECISIONS)
    if fields["cuda_graph"] and fields["compile"] in CUDAGRAPH_MODES:
        raise ValueError(f"compile mode {fields['compile']!r} records CUDA graphs itself; with "
                         "cuda_graph use compile 'default' or 'max-autotune-no-cudagraphs'")
    if fields["cuda_graph"]:     # a replayed graph reads device inputs and a device lr
        fields.update(device_data=True, fused_optimizer=True)
    return FastOptions(**fields)


#: the setting that lets the device and the measured rates choose (:mod:`.fast_auto`)
AUTO = "auto"
_GRAPH = {"device_data": True, "fused_optimizer": True, "cuda_graph": True}
#: the named paths, the candidates of ``auto``; the names are the variants of
#: benchmarks/training/gpu_fast_path.py whose measured rows ``auto`` reads
PATHS: dict[str, FastOptions] = {
    "eager": FastOptions(),
    "graph": fast_options(_GRAPH),
    "compile+graph": fast_options({**_GRAPH, "compile": "default"}),
}


def check_setting(value: Any) -> str | FastOptions:
    """A ``training.fast`` setting, validated: ``"auto"``, or the
    :class:`FastOptions` of a path name, a mapping, FastOptions or None (eager)."""
    if value == AUTO:
        return AUTO
    if isinstance(value, str):
        if value not in PATHS:
            raise ValueError(f"fast must be {AUTO!r}, one of {sorted(PATHS)} or a mapping of "
                             f"switches, got {value!r}")
        return PATHS[value]
    return fast_options(value)
