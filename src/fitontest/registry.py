"""Name -> class registries (torchvision/timm style).

Adding a method is one module with one ``@REGISTRY.register("name")`` line;
nothing central is edited.
"""
from __future__ import annotations

from typing import Any, Callable


class Registry:
    """A named collection of factories (usually estimator classes)."""

    def __init__(self, kind: str, package: str | None = None, path=None):
        """``package``/``path`` (a package's ``__name__``/``__path__``): every
        module of that package is imported on the first look-up, so that its
        ``register`` decorators have run."""
        self.kind = kind
        self._entries: dict[str, Callable[..., Any]] = {}
        self._defaults: dict[str, dict[str, Any]] = {}
        self._package = (package, path) if package else None

    def _load(self) -> None:
        if self._package is not None:
            package, self._package = self._package, None
            import_submodules(*package)

    def register(self, name: str, **default_params: Any):
        """Decorator registering ``obj`` under ``name``.

        ``default_params`` are passed to the factory by :meth:`get`, so one class
        can be registered under several names with different settings
        (``ece_es15`` and ``ece_ew15`` are one binning class).
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")

        def decorator(obj):
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is already registered "
                                 f"(by {self._entries[name]!r})")
            self._entries[name] = obj
            self._defaults[name] = dict(default_params)
            return obj

        return decorator

    def entry(self, name: str) -> Callable[..., Any]:
        """The registered factory itself."""
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; registered: "
                           f"{', '.join(self.names()) or '(none)'}") from None

    def defaults(self, name: str) -> dict[str, Any]:
        self.entry(name)
        return dict(self._defaults[name])

    def get(self, name: str, **params: Any) -> Any:
        """A fresh instance: the registered defaults updated by ``params``."""
        factory = self.entry(name)
        return factory(**{**self._defaults[name], **params})

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        self._load()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self):
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"


def import_submodules(package_name: str, package_path) -> None:
    """Import every module of a package so that its decorators run."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(package_path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
