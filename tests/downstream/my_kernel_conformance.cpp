// A user's kernel (plain loops in double) and the one line that runs the
// attnspec conformance suite on it.
#include <attnspec/properties/gtest_suite.hpp>
#include <cmath>
#include <limits>

class MyKernel final : public attnspec::Kernel {
 public:
  std::string name() const override { return "my-kernel"; }
  attnspec::KernelFormats formats() const override {
    return {attnspec::FormatId::float64, attnspec::FormatId::float64, attnspec::FormatId::float64};
  }
  attnspec::Capabilities capabilities() const override {
    attnspec::Capabilities c;
    c.bool_mask = c.gqa = c.dv_ne_dk = true;  // no additive mask, causal, scale, softcap or lse
    return c;
  }
  attnspec::KernelResult run(const attnspec::Problem& p) override {
    attnspec::KernelResult result;
    result.out.assign(p.out_size(), 0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(p.dims.d_k));
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const attnspec::RowIndex r = p.row_index(row);
      const int g = p.kv_head_of(r.head);
      std::vector<double> logits(p.dims.kv_len, -std::numeric_limits<double>::infinity());
      double max = -std::numeric_limits<double>::infinity();
      bool any = false;
      for (int j = 0; j < p.dims.kv_len; ++j) {
        if (!p.visible(r, j)) continue;
        any = true;
        double dot = 0;
        for (int t = 0; t < p.dims.d_k; ++t) dot += p.query_row(r)[t] * p.key_row(r.batch, g, j)[t];
        logits[j] = dot * scale;
        max = std::isnan(logits[j]) || logits[j] > max ? logits[j] : max;
      }
      if (!any) continue;
      double sum = 0;
      for (int j = 0; j < p.dims.kv_len; ++j)
        if (p.visible(r, j)) sum += std::exp(logits[j] - max);
      for (int j = 0; j < p.dims.kv_len; ++j) {
        if (!p.visible(r, j)) continue;
        const double w = std::exp(logits[j] - max) / sum;
        for (int t = 0; t < p.dims.d_v; ++t) result.out[row * p.dims.d_v + t] += w * p.value_row(r.batch, g, j)[t];
      }
    }
    return result;
  }
};

ATTNSPEC_CONFORMANCE_SUITE(MyKernel, [] { return std::make_unique<MyKernel>(); });
