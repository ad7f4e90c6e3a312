"""Vision layer: image sources (CIFAR-5m, procedural), the split, the synthetic
shapes, networks, training recipes and training. torch is imported by the
modules that need it, never by this package."""
