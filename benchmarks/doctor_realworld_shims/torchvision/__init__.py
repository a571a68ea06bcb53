"""A stand-in for torchvision (not installed here): synthetic datasets, tensor transforms."""

from torchvision import datasets, models, transforms, utils

__all__ = ["datasets", "models", "transforms", "utils"]
