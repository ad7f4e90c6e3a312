"""Name -> class registries (torchvision/timm style).

Adding a method is one module with one ``@REGISTRY.register("name")`` line;
nothing central is edited.

Plugins: modules outside the package (a ``.py`` path or an importable module
name, optionally ``:ClassName``) imported on every registry's first look-up.
The workflow names them in the config key ``plugins``; :func:`use_plugins`
imports them and exports them in the environment variable
``FITONTEST_PLUGINS`` (a JSON list), which every process -- each Snakemake
job included -- reads on its first look-up (:func:`load_plugins`).
"""
from __future__ import annotations

import json
import os
from typing import Any

#: environment variable holding the plugin specs (a JSON list of strings)
PLUGINS_ENV = "FITONTEST_PLUGINS"
_loaded: dict[str, Any] = {}     # spec -> imported module (imported once per process)
# registries with a base class; the plugin loader finds a class's registry here
# (a plugin class's base is imported, so its registry exists, before the class)
_TYPED: list["Registry"] = []


class UnknownNameError(KeyError, ValueError):
    """A name no registry entry has: a ValueError (bad input) and, as a failed
    look-up, a KeyError. The message names close matches."""

    def __str__(self) -> str:          # KeyError's str() would quote the message
        return str(self.args[0]) if self.args else ""


class Registry:
    """A named collection of factories (usually estimator classes)."""

    def __init__(self, kind: str, package: str | None = None, path=None,
                 base: type | None = None):
        """``package``/``path`` (a package's ``__name__``/``__path__``): every
        module of that package is imported on the first look-up, so that its
        ``register`` decorators have run. ``base``: the class every entry
        derives from; a plugin's ``:ClassName`` subclassing it is registered here."""
        self.kind = kind
        self.base = base
        if base is not None:
            _TYPED.append(self)
        # classes or factories: callers read their class attributes too
        self._entries: dict[str, Any] = {}
        self._defaults: dict[str, dict[str, Any]] = {}
        self._package = (package, path) if package else None

    def _load(self) -> None:
        if self._package is not None:
            package, self._package = self._package, None
            import_submodules(*package)
            load_plugins()

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

    def entry(self, name: str) -> Any:
        """The registered factory itself."""
        self._load()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UnknownNameError(self._unknown(name)) from None

    def _unknown(self, name) -> str:
        """The message for an unknown ``name``: the registry that has it, or
        the close names (difflib), or every name."""
        import difflib

        if isinstance(name, str):
            for other in _TYPED:
                if other is not self and name in other:
                    return f"{name!r} is a {other.kind}, not a {self.kind}"
            close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
            if close:
                return (f"unknown {self.kind} {name!r}; did you mean "
                        f"{' or '.join(repr(c) for c in close)}?")
        return f"unknown {self.kind} {name!r}; registered: {', '.join(self.names()) or '(none)'}"

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


# ----------------------------------------------------------------------- plugins
def parse_plugin(spec: str) -> tuple[str, str | None]:
    """``"path/to/mod.py"``, ``"pkg.mod"``, or either with ``":ClassName"``:
    (target, class name or None)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a plugin is a .py path or a module name (optionally "
                         f"':ClassName'), got {spec!r}")
    target, sep, cls = spec.strip().rpartition(":")
    if sep and cls.isidentifier() and target:
        return target, cls
    return spec.strip(), None


def _import_target(target: str):
    import hashlib
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    if target.endswith(".py"):
        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"plugin file {target!r} does not exist (resolved: {path})")
        name = f"fitontest_plugin_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ValueError(f"plugin file {target!r} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    try:
        return importlib.import_module(target)
    except ImportError as err:
        raise ValueError(f"plugin module {target!r} cannot be imported: {err}") from err


def load_plugin(spec: str):
    """Import one plugin (once per process) and return the object it names:
    the class for ``target:ClassName`` (registered under ``ClassName`` in the
    registry of its kind unless its module registered it already), else the
    module."""
    target, cls = parse_plugin(spec)
    if spec not in _loaded:
        _loaded[spec] = None                       # a plugin may look up a registry
        try:
            module = _import_target(target)
        except BaseException:
            del _loaded[spec]
            raise
        obj = module
        if cls is not None:
            obj = getattr(module, cls, None)
            if obj is None:
                del _loaded[spec]
                raise ValueError(f"plugin {spec!r}: {target!r} defines no {cls!r}")
            _register_class(obj, cls)
        _loaded[spec] = obj
    return _loaded[spec]


def _register_class(obj, name: str) -> None:
    for reg in _TYPED:
        if isinstance(obj, type) and reg.base is not None and issubclass(obj, reg.base):
            if obj not in reg._entries.values():
                reg.register(name)(obj)
            return
    bases = ", ".join(reg.base.__name__ for reg in _TYPED if reg.base is not None) \
        or "none registered"
    raise ValueError(f"plugin class {name!r} derives from no registry's base class ({bases})")


def plugin_specs() -> list[str]:
    """The plugin specs exported in ``FITONTEST_PLUGINS`` (empty if unset)."""
    raw = os.environ.get(PLUGINS_ENV, "").strip()
    if not raw:
        return []
    try:
        specs = json.loads(raw)
    except json.JSONDecodeError:
        raise ValueError(f"{PLUGINS_ENV} must hold a JSON list of strings, got {raw!r}") from None
    if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
        raise ValueError(f"{PLUGINS_ENV} must hold a JSON list of strings, got {raw!r}")
    return specs


def load_plugins(specs=None) -> list:
    """Import ``specs`` (default: those of ``FITONTEST_PLUGINS``)."""
    return [load_plugin(s) for s in (plugin_specs() if specs is None else specs)]


def absolute_spec(spec: str) -> str:
    """``spec`` with a relative .py path made absolute (jobs may run elsewhere)."""
    from pathlib import Path

    target, cls = parse_plugin(spec)
    if target.endswith(".py"):
        target = str(Path(target).expanduser().resolve())
    return target if cls is None else f"{target}:{cls}"


def use_plugins(specs) -> list:
    """Import ``specs`` here and export them to every child process (the
    workflow's jobs) through ``FITONTEST_PLUGINS``; returns the imported objects."""
    specs = [absolute_spec(s) for s in (specs or [])]
    known = plugin_specs()
    merged = known + [s for s in specs if s not in known]
    if merged:
        os.environ[PLUGINS_ENV] = json.dumps(merged)
    return load_plugins(specs)
