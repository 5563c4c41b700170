import contextlib
import enum


class SDPBackend(enum.Enum):
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3


def sdpa_kernel(backend):
    return contextlib.nullcontext()
