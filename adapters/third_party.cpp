// One block per third-party library: its kernels join the registry when
// CMake compiled its adapter in (ATTNSPEC_HAVE_<LIBRARY>).
#include "adapters/third_party.hpp"

#include "adapters/registry.hpp"

#ifdef ATTNSPEC_HAVE_LIBTORCH
#include "adapters/libtorch/libtorch_kernel.hpp"
#endif
#ifdef ATTNSPEC_HAVE_ONEDNN
#include "adapters/onednn/onednn_kernel.hpp"
#endif
#ifdef ATTNSPEC_HAVE_XNNPACK
#include "adapters/xnnpack/xnnpack_kernel.hpp"
#endif
#ifdef ATTNSPEC_HAVE_GGML
#include "adapters/ggml/ggml_kernel.hpp"
#endif

namespace attnspec {

void register_third_party_kernels() {
  static const bool once = [] {
#ifdef ATTNSPEC_HAVE_LIBTORCH
    register_kernels(libtorch_kernels());
#endif
#ifdef ATTNSPEC_HAVE_ONEDNN
    register_kernels(onednn_kernels());
#endif
#ifdef ATTNSPEC_HAVE_XNNPACK
    register_kernels(xnnpack_kernels());
#endif
#ifdef ATTNSPEC_HAVE_GGML
    register_kernels(ggml_kernels());
#endif
    return true;
  }();
  (void)once;
}

std::vector<std::string> third_party_libraries() {
  std::vector<std::string> libraries;
#ifdef ATTNSPEC_HAVE_LIBTORCH
  libraries.push_back(libtorch_version());
#endif
#ifdef ATTNSPEC_HAVE_ONEDNN
  libraries.push_back(onednn_version());
#endif
#ifdef ATTNSPEC_HAVE_XNNPACK
  libraries.push_back(xnnpack_version());
#endif
#ifdef ATTNSPEC_HAVE_GGML
  libraries.push_back(ggml_version());
#endif
  return libraries;
}

}  // namespace attnspec
