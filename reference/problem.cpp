// Layout, broadcasting and visibility of a Problem (spec/SPEC.md §2.1-2.2).
#include "reference/problem.hpp"

#include <bit>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <string>

namespace attnspec {

std::string_view to_string(MaskKind kind) {
  switch (kind) {
    case MaskKind::none: return "none";
    case MaskKind::boolean: return "bool";
    case MaskKind::additive: return "additive";
  }
  return "?";
}

std::string_view to_string(Causal causal) {
  switch (causal) {
    case Causal::none: return "none";
    case Causal::top_left: return "top_left";
    case Causal::bottom_right: return "bottom_right";
  }
  return "?";
}

std::string_view to_string(Alignment alignment) {
  return alignment == Alignment::top_left ? "top_left" : "bottom_right";
}

std::span<const double> Problem::query_row(RowIndex r) const {
  const std::size_t row = (static_cast<std::size_t>(r.batch) * dims.q_heads + r.head) * dims.q_len + r.query;
  return {q.data() + row * dims.d_k, static_cast<std::size_t>(dims.d_k)};
}

std::span<const double> Problem::key_row(int batch, int kv_head, int key) const {
  const std::size_t row = (static_cast<std::size_t>(batch) * dims.kv_heads + kv_head) * dims.kv_len + key;
  return {k.data() + row * dims.d_k, static_cast<std::size_t>(dims.d_k)};
}

std::span<const double> Problem::value_row(int batch, int kv_head, int key) const {
  const std::size_t row = (static_cast<std::size_t>(batch) * dims.kv_heads + kv_head) * dims.kv_len + key;
  return {v.data() + row * dims.d_v, static_cast<std::size_t>(dims.d_v)};
}

namespace {
std::size_t mask_offset(const Problem& p, RowIndex r, int key) {
  const std::size_t b = p.mask_batch == 1 ? 0 : static_cast<std::size_t>(r.batch);
  const std::size_t h = p.mask_heads == 1 ? 0 : static_cast<std::size_t>(r.head);
  return ((b * p.mask_heads + h) * p.dims.q_len + r.query) * p.dims.kv_len + key;
}
}  // namespace

bool Problem::visible(RowIndex r, int key) const {
  switch (causal) {
    case Causal::none: break;
    case Causal::top_left:
      if (key > r.query) return false;
      break;
    case Causal::bottom_right:
      if (key > r.query + diagonal_offset(Alignment::bottom_right, dims)) return false;
      break;
  }
  return in_window(r, key) && mask_allows(r, key);
}

bool window_contains(const Window& window, const Dims& d, int query, int key) {
  // In 64 bits: i + off - left can pass INT_MIN for a left near 2^31.
  const std::int64_t diagonal = std::int64_t{query} + diagonal_offset(window.alignment, d);
  if (window.left && key < diagonal - *window.left) return false;
  if (window.right && key > diagonal + *window.right) return false;
  return true;
}

bool Problem::in_window(RowIndex r, int key) const { return !window || window_contains(*window, dims, r.query, key); }

bool Problem::mask_allows(RowIndex r, int key) const {
  switch (mask_kind) {
    case MaskKind::none: return true;
    case MaskKind::boolean: return mask[mask_offset(*this, r, key)] != 0.0;
    case MaskKind::additive: return mask[mask_offset(*this, r, key)] != -INFINITY;
  }
  return true;
}

double Problem::mask_value(RowIndex r, int key) const {
  return mask_kind == MaskKind::additive ? mask[mask_offset(*this, r, key)] : 0.0;
}

std::vector<double> alibi_paper_slopes(int heads) {
  const int n = static_cast<int>(std::bit_floor(static_cast<unsigned>(heads)));
  std::vector<double> slopes;
  for (int head = 0; head < heads; ++head) {
    const double slope = head < n ? std::exp2(-8.0 * (head + 1) / n) : std::exp2(-4.0 * (2 * (head - n + 1) - 1) / n);
    slopes.push_back(static_cast<double>(static_cast<float>(slope)));
  }
  return slopes;
}

double Problem::alibi_bias(RowIndex r, int key) const {
  if (!alibi) return 0.0;
  const std::size_t head = alibi->per_batch ? static_cast<std::size_t>(r.batch) * dims.q_heads + r.head
                                            : static_cast<std::size_t>(r.head);
  const std::int64_t diagonal = std::int64_t{r.query} + diagonal_offset(alibi->alignment, dims);
  const std::int64_t distance = diagonal > key ? diagonal - key : key - diagonal;
  return -alibi->slopes[head] * static_cast<double>(distance);
}

std::size_t Problem::rows() const {
  return static_cast<std::size_t>(dims.batch) * dims.q_heads * dims.q_len;
}

RowIndex Problem::row_index(std::size_t flat) const {
  RowIndex r;
  r.query = static_cast<int>(flat % dims.q_len);
  flat /= dims.q_len;
  r.head = static_cast<int>(flat % dims.q_heads);
  r.batch = static_cast<int>(flat / dims.q_heads);
  return r;
}

std::size_t Problem::row_flat(RowIndex r) const {
  return (static_cast<std::size_t>(r.batch) * dims.q_heads + r.head) * dims.q_len + r.query;
}

std::string size_limit_error(const Dims& d) {
  struct Tensor {
    const char* name;
    std::initializer_list<int> extents;
  };
  const Tensor tensors[] = {{"q [B, Hq, L, d_k]", {d.batch, d.q_heads, d.q_len, d.d_k}},
                            {"k [B, Hkv, S, d_k]", {d.batch, d.kv_heads, d.kv_len, d.d_k}},
                            {"v [B, Hkv, S, d_v]", {d.batch, d.kv_heads, d.kv_len, d.d_v}},
                            {"the output [B, Hq, L, d_v]", {d.batch, d.q_heads, d.q_len, d.d_v}},
                            {"the weights (and a full mask) [B, Hq, L, S]", {d.batch, d.q_heads, d.q_len, d.kv_len}}};
  for (const Tensor& t : tensors) {
    std::uint64_t count = 1;
    bool over = false;
    std::string extents;
    for (int extent : t.extents) {
      extents += (extents.empty() ? "" : ", ") + std::to_string(extent);
      over = over || extent < 0 || __builtin_mul_overflow(count, static_cast<std::uint64_t>(extent), &count) ||
             count > kMaxTensorElements;
    }
    if (over)
      return std::string(t.name) + " = [" + extents +
             "] holds more than 2^28 elements, the most a tensor may hold (spec/SPEC.md section 4)";
  }
  return "";
}

std::vector<std::string> validate(const Problem& p) {
  std::vector<std::string> errors;
  const Dims& d = p.dims;
  const auto positive = [&](int value, const char* name) {
    if (value < 1) errors.push_back(std::string(name) + ": expected an integer >= 1, got " + std::to_string(value));
  };
  positive(d.batch, "batch");
  positive(d.q_heads, "q_heads");
  positive(d.kv_heads, "kv_heads");
  positive(d.q_len, "q_len");
  positive(d.kv_len, "kv_len");
  positive(d.d_k, "d_k");
  positive(d.d_v, "d_v");
  if (!errors.empty()) return errors;
  if (std::string error = size_limit_error(d); !error.empty()) return {error};
  if (d.q_heads % d.kv_heads != 0)
    errors.push_back("q_heads: expected a multiple of kv_heads (" + std::to_string(d.kv_heads) + "), got " +
                     std::to_string(d.q_heads));
  if (p.scale && !(std::isfinite(*p.scale) && *p.scale > 0))
    errors.push_back("scale: expected null or a finite number > 0");
  if (p.softcap && !(std::isfinite(*p.softcap) && *p.softcap > 0))
    errors.push_back("softcap: expected null or a finite number > 0");
  if (p.alibi) {
    const std::size_t want = static_cast<std::size_t>(p.alibi->per_batch ? d.batch : 1) * d.q_heads;
    if (p.alibi->slopes.size() != want)
      errors.push_back("alibi_slopes: expected " + std::to_string(want) + " values (" +
                       (p.alibi->per_batch ? "[B, Hq]" : "[Hq]") + "), got " + std::to_string(p.alibi->slopes.size()));
    for (double slope : p.alibi->slopes)
      if (!std::isfinite(slope) || static_cast<double>(static_cast<float>(slope)) != slope) {
        errors.push_back("alibi_slopes: expected finite float32 values, got " + std::to_string(slope));
        break;
      }
  }
  if (p.descales) {
    const std::size_t expected = static_cast<std::size_t>(d.batch) * static_cast<std::size_t>(d.kv_heads);
    const std::pair<const char*, const std::vector<double>*> factors[] = {
        {"q_descale", &p.descales->q}, {"k_descale", &p.descales->k}, {"v_descale", &p.descales->v}};
    for (const auto& [name, values] : factors) {
      if (values->size() != expected)
        errors.push_back(std::string(name) + ": expected " + std::to_string(expected) + " values ([B, Hkv]), got " +
                         std::to_string(values->size()));
      for (double factor : *values)
        if (!(factor > 0 && std::isfinite(factor) && static_cast<double>(static_cast<float>(factor)) == factor)) {
          errors.push_back(std::string(name) + ": expected float32 values > 0, finite, got " + std::to_string(factor));
          break;
        }
    }
  }
  if (!p.sinks.empty()) {
    if (p.sinks.size() != static_cast<std::size_t>(d.q_heads))
      errors.push_back("sinks: expected " + std::to_string(d.q_heads) + " values ([Hq]), got " +
                       std::to_string(p.sinks.size()));
    for (double sink : p.sinks)
      if (!(sink == -INFINITY || (std::isfinite(sink) && static_cast<double>(static_cast<float>(sink)) == sink))) {
        errors.push_back("sinks: expected float32 values, finite or -inf, got " + std::to_string(sink));
        break;
      }
  }
  if (p.window) {
    if (p.window->left && *p.window->left < 0)
      errors.push_back("window.left: expected null (unbounded) or an integer >= 0, got " + std::to_string(*p.window->left));
    if (p.window->right && *p.window->right < 0)
      errors.push_back("window.right: expected null (unbounded) or an integer >= 0, got " +
                       std::to_string(*p.window->right));
  }
  const auto sized = [&](const std::vector<double>& t, std::size_t n, const char* name) {
    if (t.size() != n)
      errors.push_back(std::string(name) + ": expected " + std::to_string(n) + " values, got " +
                       std::to_string(t.size()));
  };
  const std::size_t S = static_cast<std::size_t>(d.kv_len);
  sized(p.q, p.rows() * d.d_k, "q");
  sized(p.k, static_cast<std::size_t>(d.batch) * d.kv_heads * S * d.d_k, "k");
  sized(p.v, static_cast<std::size_t>(d.batch) * d.kv_heads * S * d.d_v, "v");
  if (!p.dout.empty()) {
    sized(p.dout, p.rows() * d.d_v, "dout");
    if (p.descales) errors.push_back("dout: a backward problem carries no descale factors (spec/SPEC.md section 2.6)");
  }
  if (p.mask_kind == MaskKind::none) {
    if (!p.mask.empty()) errors.push_back("mask: values given but mask kind is none");
  } else {
    if (p.mask_batch != 1 && p.mask_batch != d.batch)
      errors.push_back("mask: batch extent must be 1 or " + std::to_string(d.batch));
    if (p.mask_heads != 1 && p.mask_heads != d.q_heads)
      errors.push_back("mask: head extent must be 1 or " + std::to_string(d.q_heads));
    sized(p.mask, static_cast<std::size_t>(p.mask_batch) * p.mask_heads * d.q_len * S, "mask");
    for (double m : p.mask) {
      const bool ok = p.mask_kind == MaskKind::boolean ? (m == 0.0 || m == 1.0) : (m == -INFINITY || std::isfinite(m));
      if (!ok) {
        errors.push_back(p.mask_kind == MaskKind::boolean ? "mask: bool mask values must be 0 or 1"
                                                          : "mask: additive values must be finite or -inf");
        break;
      }
    }
  }
  return errors;
}

}  // namespace attnspec

namespace attnspec {

Problem apply_descales(const Problem& p) {
  if (!p.descales || p.descales->applied) return p;
  Problem real = p;
  const Dims& d = p.dims;
  // Exact where the inputs have at most 29 significant bits (every format
  // but float64; a float32 factor has 24); a product that is not is refused
  // rather than certified wrongly.
  const auto scale_rows = [](std::vector<double>& values, std::size_t start, std::size_t count, double factor) {
    for (std::size_t i = start; i < start + count; ++i) {
      const double product = values[i] * factor;
      if (std::isfinite(product) && (std::fma(values[i], factor, -product) != 0 || (product == 0 && values[i] != 0)))
        throw std::invalid_argument("descales: " + std::to_string(values[i]) + " times " + std::to_string(factor) +
                                    " is not a binary64 number; descales need inputs of at most 29 significant bits "
                                    "(spec/SPEC.md section 2.4)");
      values[i] = product;
    }
  };
  const auto per_query_head = static_cast<std::size_t>(d.q_len) * static_cast<std::size_t>(d.d_k);
  const auto per_key_head = static_cast<std::size_t>(d.kv_len) * static_cast<std::size_t>(d.d_k);
  const auto per_value_head = static_cast<std::size_t>(d.kv_len) * static_cast<std::size_t>(d.d_v);
  for (int b = 0; b < d.batch; ++b) {
    for (int h = 0; h < d.q_heads; ++h)
      scale_rows(real.q, (static_cast<std::size_t>(b) * d.q_heads + h) * per_query_head, per_query_head,
                 p.descales->q_of(b, p.kv_head_of(h), d.kv_heads));
    for (int g = 0; g < d.kv_heads; ++g) {
      const std::size_t head = static_cast<std::size_t>(b) * d.kv_heads + g;
      scale_rows(real.k, head * per_key_head, per_key_head, p.descales->k_of(b, g, d.kv_heads));
      scale_rows(real.v, head * per_value_head, per_value_head, p.descales->v_of(b, g, d.kv_heads));
    }
  }
  real.descales->applied = true;
  return real;
}

const Problem& real_problem(const Problem& given, std::optional<Problem>& storage) {
  if (!given.descales || given.descales->applied) return given;
  storage = apply_descales(given);
  return *storage;
}

void require_real_inputs(const Problem& p, std::string_view who) {
  if (p.descales && !p.descales->applied)
    throw std::logic_error(std::string(who) + " needs the real inputs: apply_descales first");
}

}  // namespace attnspec
