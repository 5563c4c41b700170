"""torch.compile(flex_attention) for adapters/pytorch/torch_adapter.py
--backend flex --compile: inductor's fused FlexAttention kernel (on the
CPU its C++ flash template) instead of the eager composition.

What compilation costs and how the adapter bounds it:
- One compilation per new combination of what inductor specialises on
  (head sizes, dtype, sizes of 1, the features the case's score_mod and
  mask_mod use); sequence lengths and the captured tensors' values are
  dynamic (dynamic=True), so most cases reuse a compiled kernel. Each
  compilation's time goes to the adapter's stderr.
- Compiled kernels persist in an inductor cache of the adapter's own
  (TORCHINDUCTOR_CACHE_DIR, default ~/.cache/attnspec/torchinductor), so a
  second run compiles little.
- Dynamo's recompile limit is lifted and hitting it is an error, not the
  silent fallback to eager it is by default: a compiled column judges the
  compiled kernel or reports the case as failed, never the eager one.
"""
import functools
import os
import sys
import time


def prepare_inductor(torch):
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                          os.path.join(os.path.expanduser("~"), ".cache", "attnspec", "torchinductor"))
    import torch._dynamo
    import torch._inductor.cpp_builder as builder
    torch._dynamo.config.recompile_limit = 1 << 20
    torch._dynamo.config.accumulated_recompile_limit = 1 << 20
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    # Inductor links its kernels with -L<Python's LIBDIR> before -L<torch/lib>.
    # With Debian's python and libtorch-dev (which attnspec installs for its
    # libtorch adapter) LIBDIR holds libtorch 1.13's libtorch_cpu.so, the
    # kernels link against it, their SLEEF symbols stay undefined, the
    # dlopen probe of the vector ISA fails, and every CPU flex kernel stops
    # with "trans_b requires AVX512 or AVX2 vec ISA". torch/lib goes first.
    python_related_args = builder._get_python_related_args
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")

    def torch_lib_first():
        include_dirs, library_dirs = python_related_args()
        return include_dirs, [torch_lib] + [d for d in library_dirs if d != torch_lib]

    builder._get_python_related_args = torch_lib_first


@functools.cache
def compiled_flex_attention(torch):
    from torch.nn.attention.flex_attention import flex_attention
    return torch.compile(flex_attention, dynamic=True)


def timed_call(torch, function, *args, **kwargs):
    """Calls the compiled function, writing to stderr how long each call that compiled took."""
    from torch._dynamo.utils import counters
    before = counters["stats"]["unique_graphs"]
    start = time.monotonic()
    result = function(*args, **kwargs)
    compiled = counters["stats"]["unique_graphs"] - before
    if compiled:
        print("flex_compile: %d compilation(s), %.1f s (call included)" % (compiled, time.monotonic() - start),
              file=sys.stderr, flush=True)
    return result
