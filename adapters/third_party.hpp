// The in-process adapters of third-party kernels (libtorch, oneDNN,
// XNNPACK), each compiled in where CMake found its library. Programs that
// want them link attnspec::third_party and call this once at start-up.
#pragma once

#include <string>
#include <vector>

namespace attnspec {

// Registers every compiled-in third-party kernel with make_kernel
// (adapters/registry.hpp). Calling it twice is harmless.
void register_third_party_kernels();

// The libraries compiled in, e.g. {"libtorch 1.13.1", "oneDNN 2.6.3"}.
std::vector<std::string> third_party_libraries();

}  // namespace attnspec
