// oneDNN 2.6's matmul post-op chains, as the oneDNN adapter uses them for
// the softcap c * tanh(x / c). The adapter spells it linear(1/c) then
// tanh with output scale c, because a second eltwise_linear in the same
// chain is applied with the first one's factor (README, Findings). The
// first test checks the spelling the adapter uses; the second pins the
// library behaviour it works around, so that a fixed oneDNN shows up here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "adapters/onednn/onednn_kernel.hpp"

namespace {

struct MatmulResult {
  std::vector<float> out;
  std::string implementation;  // oneDNN's name for the kernel it chose
};

// One row times one column of weights w_j, with the post-ops; returns the
// outputs for x_j = w_j (the single input value is 1).
MatmulResult matmul_with(const std::vector<float>& weights, const std::function<void(dnnl::post_ops&)>& build) {
  using dnnl::memory;
  attnspec::apply_onednn_isa_policy();  // the configuration the adapter runs in
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const auto n = static_cast<memory::dim>(weights.size());
  std::vector<float> source(1, 1.0f), w = weights, out(weights.size());
  const memory::desc source_md({1, 1}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc weights_md({1, n}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc out_md({1, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::post_ops post_ops;
  build(post_ops);
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(source_md, weights_md, out_md), attr, engine);
  memory source_memory(source_md, engine, source.data()), weights_memory(weights_md, engine, w.data()),
      out_memory(out_md, engine, out.data());
  dnnl::matmul(pd).execute(stream, {{DNNL_ARG_SRC, source_memory}, {DNNL_ARG_WEIGHTS, weights_memory},
                                    {DNNL_ARG_DST, out_memory}});
  stream.wait();
  return {out, pd.impl_info_str()};
}

const std::vector<float> kInputs = {0.5f, 1.0f, 2.0f, -3.0f, 7.5f, 0.25f, -0.75f, 12.0f};

TEST(OnednnPostOps, TheAdaptersSoftcapSpellingComputesCTanhXOverC) {
  const float cap = 5.0f;
  const std::vector<float> out = matmul_with(kInputs, [&](dnnl::post_ops& p) {
    p.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f / cap, 0.0f);
    p.append_eltwise(cap, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f);
  }).out;
  for (std::size_t i = 0; i < kInputs.size(); ++i) {
    const double exact = cap * std::tanh(static_cast<double>(kInputs[i]) / cap);
    EXPECT_NEAR(out[i], exact, 1e-6 * cap) << "x = " << kInputs[i];
  }
}

// Seen with both matmul implementations oneDNN 2.6.3 chooses on the two
// CPU kinds CI runs on: the AVX-512 brgemm matmul ("brg:avx512_core...") and,
// on AVX2-only CPUs, "gemm:jit". Another implementation is not judged.
TEST(OnednnPostOps, TwoLinearPostOpsMultiplyByTheFirstFactorTwice) {
  const MatmulResult result = matmul_with(kInputs, [](dnnl::post_ops& p) {
    p.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 3.0f, 0.0f);
    p.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 5.0f, 0.0f);
  });
  if (result.implementation.rfind("brg:avx512", 0) != 0 && result.implementation != "gemm:jit")
    GTEST_SKIP() << "oneDNN chose " << result.implementation << ", neither the AVX-512 brgemm matmul nor gemm:jit";
  const std::vector<float>& out = result.out;
  for (std::size_t i = 0; i < kInputs.size(); ++i)
    EXPECT_EQ(out[i], 9.0f * kInputs[i])
        << "x = " << kInputs[i] << " gave " << out[i] << " with oneDNN's " << result.implementation
        << " (15x would be right): if oneDNN now computes 15x, the README note and the adapter's comment about "
        << "this chain are out of date";
}

}  // namespace
