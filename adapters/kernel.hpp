// The kernel interface: what attnspec tests. A kernel declares its name, its
// number formats (input, accumulation, output) and its capabilities, and
// computes attention for a Problem. A clause whose needs a kernel lacks is
// skipped with the reason, never passed silently.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct KernelFormats {
  FormatId input = FormatId::float32;       // every input value is representable here
  FormatId accumulate = FormatId::float32;  // arithmetic of dot products, softmax and P.V
  FormatId output = FormatId::float32;      // the output is rounded to this
};

struct Capabilities {
  bool bool_mask = false;
  bool additive_mask = false;
  bool causal_top_left = false;
  bool causal_bottom_right = false;
  bool gqa = false;             // Hq != Hkv
  bool explicit_scale = false;  // a scale other than 1/sqrt(d_k)
  bool softcap = false;
  bool dv_ne_dk = false;
  bool lse = false;             // returns the log-sum-exp
  std::size_t max_elements = std::numeric_limits<std::size_t>::max();  // of B*Hq*L*S
};

struct KernelResult {
  std::vector<double> out;  // [B, Hq, L, d_v], values of formats().output
  std::vector<double> lse;  // [B, Hq, L], empty unless capabilities().lse
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string name() const = 0;
  virtual KernelFormats formats() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual KernelResult run(const Problem& problem) = 0;
};

// Every feature of spec/SPEC.md section 2, no size limit: what a complete
// kernel (the built-in ones) declares.
Capabilities full_capabilities();

// Why the kernel cannot run the problem ("needs an additive mask"), one
// reason per missing capability; empty when it can.
std::vector<std::string> missing_capabilities(const Capabilities& capabilities, const Problem& problem);

// One line, e.g. "bool-mask additive-mask causal:top_left,bottom_right gqa ...".
std::string describe(const Capabilities& capabilities);

}  // namespace attnspec
