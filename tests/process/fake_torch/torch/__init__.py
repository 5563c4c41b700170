"""A stand-in for PyTorch, just large enough to drive
adapters/pytorch/torch_adapter.py on a machine without PyTorch (tests
only): tensors are NumPy arrays, and scaled_dot_product_attention follows
PyTorch 2.5's documented semantics. It checks the adapter's plumbing
(arguments, masks, formats, the protocol), not PyTorch."""
import contextlib

import numpy as np

__version__ = "2.5.0+fake"

float64, float32, float16 = np.float64, np.float32, np.float16
bfloat16 = "bfloat16"  # NumPy has none; the adapter's tests do not use it


class Tensor:
    def __init__(self, array, backward=None):
        self.array = np.asarray(array)
        self.backward_of = backward  # dO -> the inputs' gradients, on an SDPA output

    def requires_grad_(self, flag=True):
        return self

    def detach(self):
        return Tensor(self.array)

    def to(self, target):
        if isinstance(target, str):  # a device
            return self
        return Tensor(self.array.astype(target))

    def cpu(self):
        return self

    def numpy(self):
        return self.array

    # What FlexAttention's score_mod and mask_mod do with captured tensors:
    # index them with the (broadcast) index arrays the stand-in passes.
    @property
    def shape(self):
        return self.array.shape

    @property
    def dtype(self):
        return self.array.dtype

    def dim(self):
        return self.array.ndim

    def __getitem__(self, index):
        return self.array[index]

    def transpose(self, a, b):
        return Tensor(np.swapaxes(self.array, a, b))

    def contiguous(self):
        return self


def from_numpy(array):
    return Tensor(array)


def tanh(x):
    return np.tanh(x)


def abs(x):  # noqa: A001 (torch's name)
    return np.abs(x)


def where(condition, x, y):
    return np.where(condition, x, y)


def no_grad():
    return contextlib.nullcontext()


from . import autograd, nn  # noqa: E402  (after Tensor, which they use)
