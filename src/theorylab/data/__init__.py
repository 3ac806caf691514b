"""Task generators and data sets. Every generator takes an explicit generator/seed and a size."""

from theorylab.data.digits import digits, disjoint_splits, stratify_by_pc
from theorylab.data.gaussian import PowerLawGaussian, wishart_sample_covariance
from theorylab.data.images import ImageFolderArray

__all__ = [
    "ImageFolderArray",
    "PowerLawGaussian",
    "digits",
    "disjoint_splits",
    "stratify_by_pc",
    "wishart_sample_covariance",
]
