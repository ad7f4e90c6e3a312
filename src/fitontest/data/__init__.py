"""Data sources: the synthetic study, the procedural pseudo-real images, CIFAR-5m."""
