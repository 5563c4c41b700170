// Naive attention in Scalar arithmetic: the whole logit matrix of a head is
// formed, then each row is soft-maxed and multiplied by V. Blocked keys get
// -inf before the softmax; a row with no visible key outputs 0 and lse -inf.
#include "adapters/naive/naive_kernel.hpp"

#include "adapters/merge/merge_states.hpp"
#include "adapters/naive/naive_backward.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <optional>

namespace attnspec {
namespace {

template <typename Scalar>
class NaiveKernel final : public Kernel {
 public:
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  static constexpr FormatId kArithmetic = std::is_same_v<Scalar, double> ? FormatId::float64 : FormatId::float32;

  explicit NaiveKernel(FormatId output = kArithmetic, FormatId storage = kArithmetic,
                       std::optional<FormatId> weights = std::nullopt, double weights_scale = 1,
                       LogitProduct product = LogitProduct::blocked)
      : output_(output), storage_(storage), weights_(weights), weights_scale_(static_cast<Scalar>(weights_scale)),
        product_(product) {}

  std::string name() const override {
    const std::string base = std::is_same_v<Scalar, double> ? "naive-f64" : "naive-f32";
    return output_ == kArithmetic ? base : base + "-to-" + std::string(format_info(output_).name);
  }

  KernelFormats formats() const override {
    KernelFormats f{output_, storage_, output_};
    f.weights = weights_;
    f.weights_scale = static_cast<double>(weights_scale_);
    return f;
  }

  Capabilities capabilities() const override {
    Capabilities c = full_capabilities();
    // float64 inputs times float32 factors are not binary64 numbers (SPEC 2.4).
    c.descales = format_info(output_).precision <= 29;
    if (storage_ == kArithmetic) c.merge_partials = kArithmetic;
    c.backward = storage_ == kArithmetic && !weights_;
    return c;
  }

  GradientOutputs run_backward(const Problem& p) override {
    if (!capabilities().backward) return Kernel::run_backward(p);
    return naive_gradients<Scalar>(p, output_);
  }

  KernelResult merge(const MergeInput& input) override {
    if (storage_ != kArithmetic) return Kernel::merge(input);
    return merge_states<Scalar>(input, output_);
  }

  KernelResult run(const Problem& p) override {
    const Dims& d = p.dims;
    KernelResult result;
    result.out.resize(p.out_size());
    result.lse.resize(p.rows());
    const Scalar scale = p.scale ? static_cast<Scalar>(*p.scale) : Scalar(1) / std::sqrt(static_cast<Scalar>(d.d_k));
    const Scalar minus_infinity = -std::numeric_limits<Scalar>::infinity();
    for (int b = 0; b < d.batch; ++b) {
      for (int h = 0; h < d.q_heads; ++h) {
        const int g = p.kv_head_of(h);
        Matrix q = rows_of(p, [&](int i) { return p.query_row({b, h, i}); }, d.q_len, d.d_k);
        Matrix k = rows_of(p, [&](int j) { return p.key_row(b, g, j); }, d.kv_len, d.d_k);
        Matrix v = rows_of(p, [&](int j) { return p.value_row(b, g, j); }, d.kv_len, d.d_v);
        if (p.descales) {
          // Dequantised first, as a framework's reference does (FlashAttention
          // 3's tests multiply the fp8 tensors by their descales).
          const auto dequantise = [this](Matrix& m, double factor) {
            m = (m * static_cast<Scalar>(factor)).unaryExpr([this](Scalar x) { return store(x); });
          };
          dequantise(q, p.descales->q_of(b, g, d.kv_heads));
          dequantise(k, p.descales->k_of(b, g, d.kv_heads));
          dequantise(v, p.descales->v_of(b, g, d.kv_heads));
        }
        Matrix logits = product_ == LogitProduct::blocked ? Matrix((q * k.transpose()) * scale) : running_products(q, k, scale);
        logits = logits.unaryExpr([this](Scalar x) { return store(x); });
        std::vector<char> has_visible(static_cast<std::size_t>(d.q_len), 0);
        for (int i = 0; i < d.q_len; ++i) {
          const RowIndex r{b, h, i};
          bool any_visible = false;  // tracked apart: -inf is also a possible logit
          bool nonfinite = false;    // a visible logit NaN or infinite: the row is NaN (SPEC 2.3)
          for (int j = 0; j < d.kv_len; ++j) {
            Scalar& x = logits(i, j);
            if (p.softcap) x = store(static_cast<Scalar>(*p.softcap) * std::tanh(x / static_cast<Scalar>(*p.softcap)));
            any_visible = any_visible || p.visible(r, j);
            nonfinite = nonfinite || (p.visible(r, j) && !std::isfinite(x));
            x = p.visible(r, j) ? store(x + static_cast<Scalar>(p.logit_offset(r, j))) : minus_infinity;
          }
          const std::size_t row = p.row_flat(r);
          has_visible[static_cast<std::size_t>(i)] = any_visible;
          // The sink: one more column of the softmax, with no value
          // (gpt-oss' reference appends it to the logits and drops it after).
          const std::optional<double> sink = p.sink(r);
          const Scalar sink_logit = sink ? store(static_cast<Scalar>(*sink)) : minus_infinity;
          if (!any_visible) {
            for (int t = 0; t < d.d_v; ++t) result.out[row * d.d_v + t] = 0.0;
            result.lse[row] = static_cast<double>(sink_logit);
            logits.row(i).setZero();
            continue;
          }
          // Eigen's maxCoeff skips NaN; a NaN logit must spoil the row, and
          // so must an infinite one (an infinite query makes every logit
          // -inf, which a finite sink would otherwise turn into weights 0).
          const Scalar max = nonfinite || logits.row(i).hasNaN() ? std::numeric_limits<Scalar>::quiet_NaN()
                                                                 : std::max(logits.row(i).maxCoeff(), sink_logit);
          logits.row(i) = (logits.row(i).array() - max).exp().matrix();
          const Scalar sum = logits.row(i).sum() + (sink ? std::exp(sink_logit - max) : Scalar(0));
          if (weights_) {  // P times the scale rounded for P V; the denominator from P as it was
            logits.row(i) = logits.row(i).unaryExpr([this](Scalar x) {
              return static_cast<Scalar>(round_to_format(static_cast<double>(x * weights_scale_), *weights_));
            });
            logits.row(i) /= sum * weights_scale_;
          } else {
            logits.row(i) /= sum;
          }
          logits.row(i) = logits.row(i).unaryExpr([this](Scalar x) { return store(x); });
          result.lse[row] = static_cast<double>(max + std::log(sum));
        }
        // P V row by row over visible keys only: a blocked key's value is
        // never read, so NaN there cannot leak through 0 * NaN.
        for (int i = 0; i < d.q_len; ++i) {
          const RowIndex r{b, h, i};
          const std::size_t row = p.row_flat(r);
          if (!has_visible[static_cast<std::size_t>(i)]) continue;  // already exactly 0
          Eigen::Matrix<Scalar, 1, Eigen::Dynamic> out = Eigen::Matrix<Scalar, 1, Eigen::Dynamic>::Zero(d.d_v);
          for (int j = 0; j < d.kv_len; ++j)
            if (p.visible(r, j)) out += logits(i, j) * v.row(j);
          for (int t = 0; t < d.d_v; ++t)
            result.out[row * d.d_v + t] = round_to_format(static_cast<double>(store(out(t))), output_);
        }
      }
    }
    return result;
  }

 private:
  // Intermediates (logits, weights, the output before its final rounding)
  // stored in a narrower format than the arithmetic, as frameworks do
  // with 16-bit tensors between operations.
  Scalar store(Scalar x) const {
    return storage_ == kArithmetic ? x : static_cast<Scalar>(round_to_format(static_cast<double>(x), storage_));
  }

  FormatId output_;
  FormatId storage_;
  std::optional<FormatId> weights_;
  Scalar weights_scale_;
  LogitProduct product_;

  // Q K^T with each q.k one running sum in index order, then scaled: the
  // plainest order a kernel may take (LogitProduct::running_sum).
  static Matrix running_products(const Matrix& q, const Matrix& k, Scalar scale) {
    Matrix logits(q.rows(), k.rows());
    for (Eigen::Index i = 0; i < q.rows(); ++i)
      for (Eigen::Index j = 0; j < k.rows(); ++j) {
        Scalar sum = 0;
        for (Eigen::Index t = 0; t < q.cols(); ++t) sum += q(i, t) * k(j, t);
        logits(i, j) = sum * scale;
      }
    return logits;
  }

  template <typename RowOf>
  static Matrix rows_of(const Problem&, RowOf row_of, int rows, int cols) {
    Matrix m(rows, cols);
    for (int i = 0; i < rows; ++i) {
      const auto row = row_of(i);
      for (int t = 0; t < cols; ++t) m(i, t) = static_cast<Scalar>(row[t]);
    }
    return m;
  }
};

}  // namespace

std::unique_ptr<Kernel> make_naive_f64() { return std::make_unique<NaiveKernel<double>>(); }
std::unique_ptr<Kernel> make_naive_f32() { return std::make_unique<NaiveKernel<float>>(); }

std::unique_ptr<Kernel> make_naive_kernel(const KernelFormats& f, LogitProduct product) {
  const double weights_scale = f.weights ? f.weights_scale : 1.0;
  if (f.accumulate == FormatId::float64)
    return std::make_unique<NaiveKernel<double>>(f.output, FormatId::float64, f.weights, weights_scale, product);
  // float32 arithmetic, a narrower accumulator the storage between steps.
  return std::make_unique<NaiveKernel<float>>(f.output, f.accumulate, f.weights, weights_scale, product);
}

std::unique_ptr<Kernel> make_naive_kernel(FormatId accumulate, FormatId output) {
  return make_naive_kernel(KernelFormats{output, accumulate, output});
}

}  // namespace attnspec
