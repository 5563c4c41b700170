// The kernel interface: what attnspec tests. A kernel declares its name, its
// number formats (input, accumulation, output) and its capabilities, and
// computes attention for a Problem. A clause whose needs a kernel lacks is
// skipped with the reason, never passed silently.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "formats/format.hpp"
#include "reference/layouts.hpp"
#include "reference/merge.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct KernelFormats {
  KernelFormats() = default;
  KernelFormats(FormatId input_format, FormatId accumulate_format, FormatId output_format)
      : input(input_format), accumulate(accumulate_format), output(output_format) {}

  FormatId input = FormatId::float32;       // every input value is representable here
  FormatId accumulate = FormatId::float32;  // arithmetic of dot products, softmax and P.V
  FormatId output = FormatId::float32;      // the output is rounded to this
  // Where P V takes its weights narrower than `accumulate` (spec/SPEC.md
  // 6.4): each unnormalised weight (at most 1 after the running maximum)
  // times `weights_scale` is rounded to this format for that product, the
  // denominator summed from the weights before the rounding. FlashAttention
  // 3's fp8 path: e4m3, scale 256. nullopt: no such rounding.
  std::optional<FormatId> weights;
  double weights_scale = 1;  // finite, >= 1, at most the weights format's largest value
  // The backward's storage format F_s (spec/SPEC.md 6.11): P and dS rounded
  // to it before their products (FlashAttention 2 converts them to the
  // input type for its tensor cores). nullopt: kept in the accumulator.
  std::optional<FormatId> gradient_storage;
};

// ", weights float8_e4m3fn x 256" for a kernel that declares a weights
// format, else "": what a format line adds.
std::string describe_weights(const KernelFormats& formats);

// "" when the declaration is consistent (a weights scale that keeps a
// weight of 1 finite in the weights format), else what is wrong.
std::string formats_error(const KernelFormats& formats);

struct Capabilities {
  bool bool_mask = false;
  bool additive_mask = false;
  bool causal_top_left = false;
  bool causal_bottom_right = false;
  bool window_top_left = false;      // sliding windows of either alignment
  bool window_bottom_right = false;
  bool alibi_top_left = false;       // ALiBi biases of either alignment
  bool alibi_bottom_right = false;
  bool sinks = false;           // attention sinks: a per-head logit in the denominator
  bool descales = false;        // q, k, v descale factors per (batch, kv head), FlashAttention 3's
  bool gqa = false;             // Hq != Hkv
  bool explicit_scale = false;  // a scale other than 1/sqrt(d_k)
  bool softcap = false;
  bool dv_ne_dk = false;
  bool lse = false;             // returns the log-sum-exp
  // Outputs the spec's 0 for a row with no visible key. A kernel that
  // declares it cannot (libtorch 1.13 and oneDNN 2.6 give NaN) still has
  // FULLMASK judge those rows; every other clause ignores them, so one known
  // deviation does not hide the rest of the verdicts.
  bool fully_masked_rows = false;
  // Restrictions (false: none). A kernel that reads its keys from a KV
  // cache holding at least the new queries' own keys (ONNX Runtime's
  // GroupQueryAttention) takes S >= L only; one whose sliding windows are
  // causal (a left side and right side 0: GroupQueryAttention's
  // local_window_size, Hugging Face's sliding_window) takes no other window.
  // Generators draw within them; a problem outside them is one the kernel
  // cannot run (missing_capabilities). In a KV cache (run_kv_cache) the
  // first also means one new key per query: new_len = L. A kernel that
  // always masks causally (OpenVINO's PagedAttentionExtension) is
  // causal_only: every problem drawn for it is causal, and a clause whose
  // law needs problems without causal masking is declined by it.
  bool kv_len_at_least_q_len = false;
  bool causal_windows_only = false;
  bool causal_only = false;
  // A kernel that computes its ALiBi slopes from the head count rather
  // than taking them (ggml's max_bias) is alibi_paper_slopes_only: the
  // generators draw the ALiBi paper's slopes for it; a problem derived
  // from one (a head run alone) keeps its slopes, which the kernel takes
  // or declines.
  bool alibi_paper_slopes_only = false;
  // The layouts of spec/SPEC.md section 2.5 (Kernel::run_varlen,
  // Kernel::run_kv_cache): packed variable-length batches, KV caches with
  // appended keys, and paged KV caches.
  bool varlen = false;
  bool kv_cache = false;
  bool paged_kv_cache = false;
  // The page sizes a paged kernel takes (OpenVINO's CPU plugin: 32 only);
  // empty: every size PAGED draws, 1 to 256.
  std::vector<int> page_sizes;
  // A merge operator (Kernel::merge, spec/SPEC.md section 6.10), and the
  // format of the partial outputs it takes (FlashAttention's combine:
  // float32; vLLM's merge_attn_states: the output dtype); nullopt: none.
  // Partial lse are float32 values or -inf whatever this is.
  std::optional<FormatId> merge_partials;
  // The backward pass (Kernel::run_backward, spec/SPEC.md section 2.6).
  bool backward = false;
  std::size_t max_elements = std::numeric_limits<std::size_t>::max();  // of B*Hq*L*S
};

struct KernelResult {
  std::vector<double> out;  // [B, Hq, L, d_v], values of formats().output
  std::vector<double> lse;  // [B, Hq, L], empty unless capabilities().lse
};

// The backward pass's results (spec/SPEC.md section 2.6), values of
// formats().output: dq [B, Hq, L, d_k], dk [B, Hkv, S, d_k], dv [B, Hkv, S,
// d_v], dsink [Hq] (empty without sinks).
struct GradientOutputs {
  std::vector<double> dq, dk, dv, dsink;
};

// Thrown by Kernel::run when the kernel declines this one problem (a limit
// it only learns when it sees the problem, or a process adapter's
// "unsupported" answer): the case is counted as declined, neither passed
// nor failed. Any other exception from run fails the case.
struct KernelUnsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown by Kernel::run when the kernel's machinery failed rather than the
// kernel answering: a process adapter crashed, hung past the case timeout
// or broke the protocol, and was restarted. The case is lost, not judged:
// the clause counts it, fails because of it, and goes on with its other
// cases, so one crash does not cost every other verdict.
struct KernelFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string name() const = 0;
  virtual KernelFormats formats() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual KernelResult run(const Problem& problem) = 0;
  // The same function on the layouts of SPEC 2.5, for kernels that declare
  // them: outputs and lse in the layout's arrangement (reference/
  // layouts.hpp). The defaults decline.
  virtual KernelResult run_varlen(const VarlenBatch& /*batch*/) {
    throw KernelUnsupported(name() + " takes no variable-length batches");
  }
  virtual KernelResult run_kv_cache(const KvCacheBatch& /*batch*/) {
    throw KernelUnsupported(name() + " takes no KV caches");
  }
  // The kernel's merge operator, for kernels that declare merge_partials:
  // out [rows, d_v] in formats().output, lse [rows], computed in
  // formats().accumulate. The default declines.
  virtual KernelResult merge(const MergeInput& /*input*/) {
    throw KernelUnsupported(name() + " has no merge operator");
  }
  // The gradients of a problem that carries dout, for kernels that declare
  // backward. The default declines.
  virtual GradientOutputs run_backward(const Problem& /*problem*/) {
    throw KernelUnsupported(name() + " has no backward pass");
  }
  // Where the kernel's own diagnostics go (a process adapter's stderr), for
  // the report; nullopt for in-process kernels.
  virtual std::optional<std::filesystem::path> log_file() const { return std::nullopt; }
  // The run is over. A kernel that keeps diagnostics files (a process
  // adapter's stderr log) removes them unless the run failed.
  virtual void end_run(bool /*failed*/) {}
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
