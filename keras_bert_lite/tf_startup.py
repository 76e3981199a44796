"""What TensorFlow must be told before it loads: on a machine without an NVIDIA driver, not to probe for GPUs.

TensorFlow's Linux CUDA build calls `cuInit` when it starts even where no NVIDIA driver is
installed, and logs the failure as an error (`E0000 ... failed call to cuInit: ... (303)`) on
every run. Importing this module calls `skip_gpu_probe_without_driver`, and `keras_bert_lite`
imports it before TensorFlow, so programs that import the package first (its scripts do) start
without that line. It only acts where no GPU can be used anyway, and never overrides a value the
user set.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import sys

DEVICE_TYPES_VARIABLE = "TF_ENABLED_DEVICE_TYPES"
# Every device type TensorFlow's CUDA build can use without an NVIDIA driver.
DRIVERLESS_DEVICE_TYPES = "CPU,TPU,TPU_SYSTEM"


def cuda_driver_missing() -> bool:
    """True when TensorFlow's Linux CUDA build would look for GPUs without an NVIDIA driver.

    Not for other builds (tensorflow-cpu has no CUDA, tensorflow-rocm drives AMD GPUs without
    libcuda) nor with PluggableDevice plugins (their GPUs need no libcuda either).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return False
    if any(os.path.isdir(os.path.join(path, "tensorflow-plugins")) for path in sys.path if path):
        return False
    try:
        ctypes.CDLL("libcuda.so.1")  # the driver library that cuInit lives in; TensorFlow loads it too
    except OSError:
        return True
    return False


def skip_gpu_probe_without_driver() -> None:
    """Registers only the CPU and TPU device types if the CUDA driver is missing.

    TensorFlow reads `TF_ENABLED_DEVICE_TYPES` when it is imported, so this does nothing once
    TensorFlow is loaded, nor when the variable is already set.
    """
    if "tensorflow" in sys.modules or DEVICE_TYPES_VARIABLE in os.environ:
        return
    if cuda_driver_missing():
        os.environ[DEVICE_TYPES_VARIABLE] = DRIVERLESS_DEVICE_TYPES


skip_gpu_probe_without_driver()
