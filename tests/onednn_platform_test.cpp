// The oneDNN adapter's answer about this CPU: onednn-bf16 runs exactly
// where oneDNN 2.6 dispatches to AVX-512 (avx512_core) or more, and says
// why not elsewhere; both kernels name the ISA they run on. ctest runs this
// twice, as the CPU is and with ONEDNN_MAX_CPU_ISA=AVX2, so an AVX-512
// machine checks both kinds of CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "adapters/registry.hpp"
#include "adapters/third_party.hpp"
#include "reference/problem.hpp"

namespace attnspec {
namespace {

bool onednn_has_avx512_core() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512_core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & avx512_core) == avx512_core;
}

KernelPlatform platform(const char* name) {
  register_third_party_kernels();
  const std::optional<KernelEntry> entry = find_kernel_entry(name);
  if (!entry) throw std::runtime_error(std::string("no kernel ") + name);
  return platform_of(*entry);
}

Problem small_problem() {
  Problem p;
  p.dims = {1, 1, 1, 2, 3, 2, 2};
  p.q = {1, 0.5, -1, 2};
  p.k = {0.25, 1, -0.5, 1, 2, -2};
  p.v = {1, 2, 3, 4, 5, 6};
  return p;
}

TEST(OnednnPlatform, Bf16RunsExactlyWhereOnednnHasAvx512Core) {
  const KernelPlatform bf16 = platform("onednn-bf16");
  if (onednn_has_avx512_core()) {
    EXPECT_EQ(bf16.unavailable, "");
    const KernelResult result = make_kernel("onednn-bf16")->run(small_problem());
    EXPECT_EQ(result.out.size(), 4u);
  } else {
    EXPECT_NE(bf16.unavailable.find("avx512_core"), std::string::npos) << bf16.unavailable;
    try {
      make_kernel("onednn-bf16");
      ADD_FAILURE() << "make_kernel built onednn-bf16 on a CPU oneDNN has no bf16 path for";
    } catch (const KernelUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find("onednn-bf16"), std::string::npos) << e.what();
    }
  }
}

TEST(OnednnPlatform, F32RunsOnEveryX86CpuAndNamesItsIsa) {
  const KernelPlatform f32 = platform("onednn-f32");
  EXPECT_EQ(f32.unavailable, "");
  EXPECT_EQ(f32.code_path.rfind("oneDNN ISA ", 0), 0u) << f32.code_path;
  const KernelResult result = make_kernel("onednn-f32")->run(small_problem());
  EXPECT_EQ(result.out.size(), 4u);
}

TEST(OnednnPlatform, ACappedIsaIsNamedInTheCodePath) {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!cap || !*cap) GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA is not set (ctest's capped run sets it)";
  const KernelPlatform f32 = platform("onednn-f32");
  EXPECT_NE(f32.code_path.find(std::string("ONEDNN_MAX_CPU_ISA=") + cap), std::string::npos) << f32.code_path;
  if (std::string(cap) == "AVX2") {
    EXPECT_FALSE(onednn_has_avx512_core());
    EXPECT_NE(platform("onednn-bf16").unavailable, "");
  }
}

}  // namespace
}  // namespace attnspec
