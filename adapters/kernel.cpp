// Matching a problem's features against a kernel's declared capabilities.
#include "adapters/kernel.hpp"

#include <cmath>
#include <sstream>

namespace attnspec {

Capabilities full_capabilities() {
  Capabilities c;
  c.bool_mask = c.additive_mask = c.causal_top_left = c.causal_bottom_right = true;
  c.window_top_left = c.window_bottom_right = true;
  c.alibi_top_left = c.alibi_bottom_right = true;
  c.sinks = true;
  c.descales = true;
  c.gqa = c.explicit_scale = c.softcap = c.dv_ne_dk = c.lse = true;
  c.fully_masked_rows = true;
  return c;
}

std::vector<std::string> missing_capabilities(const Capabilities& c, const Problem& p) {
  std::vector<std::string> missing;
  if (p.mask_kind == MaskKind::boolean && !c.bool_mask) missing.push_back("needs a bool mask");
  if (p.mask_kind == MaskKind::additive && !c.additive_mask) missing.push_back("needs an additive mask");
  if (p.causal == Causal::top_left && !c.causal_top_left) missing.push_back("needs causal top_left");
  if (p.causal == Causal::bottom_right && !c.causal_bottom_right) missing.push_back("needs causal bottom_right");
  if (p.window && p.window->alignment == Alignment::top_left && !c.window_top_left)
    missing.push_back("needs a sliding window, top_left");
  if (p.window && p.window->alignment == Alignment::bottom_right && !c.window_bottom_right)
    missing.push_back("needs a sliding window, bottom_right");
  if (p.alibi && p.alibi->alignment == Alignment::top_left && !c.alibi_top_left)
    missing.push_back("needs ALiBi, top_left");
  if (p.alibi && p.alibi->alignment == Alignment::bottom_right && !c.alibi_bottom_right)
    missing.push_back("needs ALiBi, bottom_right");
  if (!p.sinks.empty() && !c.sinks) missing.push_back("needs attention sinks");
  if (p.descales && !c.descales) missing.push_back("needs descale factors");
  if (p.dims.q_heads != p.dims.kv_heads && !c.gqa) missing.push_back("needs GQA (Hq != Hkv)");
  if (p.scale && !c.explicit_scale) missing.push_back("needs an explicit scale");
  if (p.softcap && !c.softcap) missing.push_back("needs softcap");
  if (p.dims.d_v != p.dims.d_k && !c.dv_ne_dk) missing.push_back("needs d_v != d_k");
  if (p.dims.kv_len < p.dims.q_len && c.kv_len_at_least_q_len) missing.push_back("needs kv_len < q_len");
  if (p.window && c.causal_windows_only && p.window->right != 0)
    missing.push_back("needs a window whose right side is not 0");
  if (c.causal_only && p.causal == Causal::none) missing.push_back("needs attention without causal masking");
  if (!p.dout.empty() && !c.backward) missing.push_back("needs a backward pass");
  const std::size_t elements = p.rows() * static_cast<std::size_t>(p.dims.kv_len);
  if (elements > c.max_elements)
    missing.push_back("problem has " + std::to_string(elements) + " logits, kernel takes at most " +
                      std::to_string(c.max_elements));
  return missing;
}

std::string describe(const Capabilities& c) {
  std::string text;
  const auto add = [&](bool present, const std::string& name) {
    if (!present) return;
    if (!text.empty()) text += ' ';
    text += name;
  };
  add(c.bool_mask, "bool-mask");
  add(c.additive_mask, "additive-mask");
  if (c.causal_top_left || c.causal_bottom_right) {
    std::string causal = "causal:";
    if (c.causal_top_left) causal += "top_left";
    if (c.causal_bottom_right) causal += c.causal_top_left ? ",bottom_right" : "bottom_right";
    add(true, causal);
  }
  if (c.window_top_left || c.window_bottom_right) {
    std::string window = "window:";
    if (c.window_top_left) window += "top_left";
    if (c.window_bottom_right) window += c.window_top_left ? ",bottom_right" : "bottom_right";
    add(true, window);
  }
  if (c.alibi_top_left || c.alibi_bottom_right) {
    std::string alibi = "alibi:";
    if (c.alibi_top_left) alibi += "top_left";
    if (c.alibi_bottom_right) alibi += c.alibi_top_left ? ",bottom_right" : "bottom_right";
    add(true, alibi);
  }
  add(c.sinks, "sinks");
  add(c.descales, "descales");
  add(c.gqa, "gqa");
  add(c.explicit_scale, "scale");
  add(c.softcap, "softcap");
  add(c.dv_ne_dk, "dv!=dk");
  add(c.lse, "lse");
  add(c.fully_masked_rows, "fully-masked-rows");
  add(c.kv_len_at_least_q_len, "only:kv_len>=q_len");
  add(c.causal_windows_only, "only:causal-windows");
  add(c.causal_only, "only:causal");
  add(c.alibi_paper_slopes_only, "only:alibi-paper-slopes");
  add(c.varlen, "varlen");
  add(c.kv_cache, "kv-cache");
  add(c.paged_kv_cache, "paged-kv-cache");
  if (!c.page_sizes.empty()) {
    std::string sizes = "page-sizes:";
    for (std::size_t i = 0; i < c.page_sizes.size(); ++i) {
      if (i > 0) sizes += ',';
      sizes += std::to_string(c.page_sizes[i]);
    }
    add(true, sizes);
  }
  add(c.backward, "backward");
  if (c.merge_partials) add(true, "merge:" + std::string(format_info(*c.merge_partials).name));
  if (c.max_elements != std::numeric_limits<std::size_t>::max())
    add(true, "max-elements:" + std::to_string(c.max_elements));
  return text;
}

std::string describe_weights(const KernelFormats& formats) {
  if (!formats.weights) return "";
  std::ostringstream text;
  text << ", weights " << format_info(*formats.weights).name << " x " << formats.weights_scale;
  return text.str();
}

std::string formats_error(const KernelFormats& formats) {
  if (!formats.weights) return formats.weights_scale == 1 ? "" : "a weights scale without a weights format";
  const FormatInfo& info = format_info(*formats.weights);
  if (!(formats.weights_scale >= 1 && formats.weights_scale <= info.max_finite))
    return "weights scale " + std::to_string(formats.weights_scale) + " outside [1, " + std::to_string(info.max_finite) +
           "] (" + std::string(info.name) + "'s largest value: a weight of 1 times it must stay finite)";
  return "";
}

}  // namespace attnspec
