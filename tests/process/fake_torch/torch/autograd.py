"""torch.autograd.grad for the stand-in: the gradients an SDPA output
carries (nn/functional.py), for dO = grad_outputs."""
from . import Tensor


def grad(outputs, inputs, grad_outputs):
    if outputs.backward_of is None:
        raise RuntimeError("the stand-in differentiates scaled_dot_product_attention's output only")
    if len(inputs) != 3:
        raise RuntimeError("the stand-in returns the gradients of (query, key, value)")
    return tuple(Tensor(g) for g in outputs.backward_of(grad_outputs.array))
