// An attention problem: shapes, options and exact inputs, as defined in
// spec/SPEC.md §2. Everything that reads a problem (the reference, the case
// files, later the kernels) goes through these accessors, so the layout,
// broadcasting, GQA mapping and visibility rules live in one place.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnspec {

enum class MaskKind { none, boolean, additive };
enum class Causal { none, top_left, bottom_right };
// Where row i's diagonal meets the keys: key i + off, off = 0 (top_left) or
// S - L (bottom_right).
enum class Alignment { top_left, bottom_right };

std::string_view to_string(MaskKind kind);  // "none", "bool", "additive"
std::string_view to_string(Causal causal);  // "none", "top_left", "bottom_right"
std::string_view to_string(Alignment alignment);  // "top_left", "bottom_right"

struct Dims {
  int batch = 1;
  int q_heads = 1;
  int kv_heads = 1;
  int q_len = 1;   // L
  int kv_len = 1;  // S
  int d_k = 1;
  int d_v = 1;
  bool operator==(const Dims&) const = default;
};

// The diagonal offset off of an alignment for a problem of shape d: 0
// (top_left) or S - L (bottom_right); row i's diagonal is key i + off.
inline int diagonal_offset(Alignment alignment, const Dims& d) {
  return alignment == Alignment::bottom_right ? d.kv_len - d.q_len : 0;
}

struct RowIndex {
  int batch = 0;
  int head = 0;   // query head
  int query = 0;  // i
};

// A sliding window (spec/SPEC.md section 2.2): key j is visible to query i
// iff i + off - left <= j <= i + off + right; an absent side is unbounded.
// Causal masking is the window (unbounded, 0) of its alignment.
struct Window {
  std::optional<int> left;   // >= 0
  std::optional<int> right;  // >= 0
  Alignment alignment = Alignment::bottom_right;
  bool operator==(const Window&) const = default;
};

// Whether key `key` lies in query `query`'s window for a problem of shape d.
bool window_contains(const Window& window, const Dims& d, int query, int key);

// ALiBi (spec/SPEC.md section 2.3): row i's logit of key j gets the bias
// -slope_h |i + off - j|, off = 0 (top_left) or S - L (bottom_right),
// added after the scale and the softcap, beside the additive mask. Slopes
// are float32 values (FlashAttention's dtype for them), so with distances
// below 2^29 every bias is an exact double.
struct Alibi {
  std::vector<double> slopes;  // [B, Hq] when per_batch, else [Hq]
  bool per_batch = false;
  Alignment alignment = Alignment::bottom_right;
  bool operator==(const Alibi&) const = default;
};

// The ALiBi paper's slopes for `heads` heads, as FlashInfer, cuDNN, vLLM,
// BLOOM and ggml compute them (MPT and attention-gym differ when heads is
// not a power of two, SPEC 2.3), rounded to float32: with n the largest
// power of two <= heads, heads 1..n get 2^(-8k/n) and the rest
// 2^(-4(2k - 1)/n), the odd slopes of 2n heads.
std::vector<double> alibi_paper_slopes(int heads);

// Descale factors (spec/SPEC.md section 2.4), FlashAttention 3's
// q_descale, k_descale and v_descale: the kernel's inputs times these are
// the real inputs. One float32 value > 0 per (batch, kv head) each; a query
// head reads its kv head's. Every clause and the reference see the real
// problem (`apply_descales`); only the kernel sees the factors.
struct Descales {
  std::vector<double> q, k, v;  // [B, Hkv] each
  // Set by apply_descales: q, k and v already hold the products; the
  // precision model still counts the kernel's roundings of the factors.
  bool applied = false;
  bool operator==(const Descales&) const = default;
  double q_of(int batch, int kv_head, int kv_heads) const { return q[index(batch, kv_head, kv_heads)]; }
  double k_of(int batch, int kv_head, int kv_heads) const { return k[index(batch, kv_head, kv_heads)]; }
  double v_of(int batch, int kv_head, int kv_heads) const { return v[index(batch, kv_head, kv_heads)]; }

 private:
  static std::size_t index(int batch, int kv_head, int kv_heads) {
    return static_cast<std::size_t>(batch) * static_cast<std::size_t>(kv_heads) + static_cast<std::size_t>(kv_head);
  }
};

struct Problem {
  Dims dims;
  std::optional<double> scale;    // nullopt: 1/sqrt(d_k), exactly
  std::optional<double> softcap;  // nullopt: no cap
  Causal causal = Causal::none;
  std::optional<Window> window;  // intersected with causal masking and the mask
  std::optional<Alibi> alibi;
  // Attention sinks (spec/SPEC.md section 2.3): per query head a logit
  // sigma_h that joins the softmax's denominator, exp(sigma_h) + sum_j
  // exp(x_j), and contributes no value. It is compared with the scaled,
  // capped, masked logits and is never scaled itself. float32 values (the
  // peers' dtype for them), finite or -inf (no sink for that head).
  std::vector<double> sinks;  // [Hq]; empty: no sinks
  std::optional<Descales> descales;
  MaskKind mask_kind = MaskKind::none;
  int mask_batch = 1;  // 1 (broadcast) or batch
  int mask_heads = 1;  // 1 (broadcast) or q_heads
  std::vector<double> q;     // [B, Hq, L, d_k]
  std::vector<double> k;     // [B, Hkv, S, d_k]
  std::vector<double> v;     // [B, Hkv, S, d_v]
  std::vector<double> mask;  // [mask_batch, mask_heads, L, S]; bool: 1 attend, 0 block
  // The loss's gradient with respect to the output (spec/SPEC.md section
  // 2.6), for the backward pass; empty: a forward-only problem.
  std::vector<double> dout;  // [B, Hq, L, d_v]

  // The kv head that query head h reads: h / (Hq / Hkv).
  int kv_head_of(int q_head) const { return q_head / (dims.q_heads / dims.kv_heads); }

  std::span<const double> query_row(RowIndex r) const;
  std::span<const double> key_row(int batch, int kv_head, int key) const;
  std::span<const double> value_row(int batch, int kv_head, int key) const;

  bool visible(RowIndex r, int key) const;
  // No mask, causal masking or window: every key visible to every query.
  bool every_key_visible() const { return mask_kind == MaskKind::none && causal == Causal::none && !window; }
  // The window's part of visibility alone (true without a window).
  bool in_window(RowIndex r, int key) const;
  // The mask's part of visibility alone (causal masking not applied).
  bool mask_allows(RowIndex r, int key) const;
  // The additive mask value (0 without an additive mask).
  double mask_value(RowIndex r, int key) const;
  // The ALiBi bias -slope |i + off - j|, exactly (0 without ALiBi).
  double alibi_bias(RowIndex r, int key) const;
  // What a kernel adds to the capped logit: mask value plus ALiBi bias,
  // summed in double (the reference keeps the two apart, exactly).
  double logit_offset(RowIndex r, int key) const { return mask_value(r, key) + alibi_bias(r, key); }
  // The row's sink logit, or nullopt when there is none (no sinks, or -inf
  // for its head: exp(-inf) = 0 adds nothing).
  std::optional<double> sink(RowIndex r) const {
    if (sinks.empty() || sinks[static_cast<std::size_t>(r.head)] == -INFINITY) return std::nullopt;
    return sinks[static_cast<std::size_t>(r.head)];
  }

  std::size_t rows() const;  // B * Hq * L
  std::size_t out_size() const { return rows() * static_cast<std::size_t>(dims.d_v); }
  std::size_t weights_size() const { return rows() * static_cast<std::size_t>(dims.kv_len); }
  RowIndex row_index(std::size_t flat) const;
  std::size_t row_flat(RowIndex r) const;
};

// The real problem of one with descales: q, k and v times their factors
// (exact in double: a float32 factor times a value of at most 29 bits;
// std::invalid_argument for a product that is not, as float64 inputs may
// give), the factors kept with `applied` set. A problem without descales,
// or with them applied, is returned as it is.
Problem apply_descales(const Problem& p);

// `given` itself when its inputs are the real ones, else apply_descales's
// problem kept in `storage`: no copy for the problems without descales.
const Problem& real_problem(const Problem& given, std::optional<Problem>& storage);

// Throws std::logic_error when p has descales not yet applied: the
// reference and the precision model read values as the real inputs.
void require_real_inputs(const Problem& p, std::string_view who);

// The most elements any one tensor of a problem may hold: q, k, v, the
// mask, the output and the weights (B * Hq * L * S). 2^28 elements are
// 2 GiB as float64. Larger shapes are refused, with this figure named,
// before anything is allocated; it also keeps every size product of the
// code far from overflowing.
inline constexpr std::uint64_t kMaxTensorElements = std::uint64_t{1} << 28;

// Empty when every tensor of a problem with these dimensions (all >= 1)
// holds at most kMaxTensorElements elements; else which one does not, e.g.
// "q [B, Hq, L, d_k] = [1073741824, 1073741824, 1, 1] holds more than
// 2^28 elements, the most a tensor may hold (spec/SPEC.md section 4)".
std::string size_limit_error(const Dims& d);

// Empty when the problem is well-formed; otherwise one message per problem
// found ("q: expected 24 values, got 23").
std::vector<std::string> validate(const Problem& p);

}  // namespace attnspec
