// The certified reference: attention computed so that every returned value
// is the correctly rounded value, in a chosen format, of the exact result
// (spec/SPEC.md §5). Interval arithmetic plus Ziv's strategy; exact results
// recognised and rounded once.
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <vector>

#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct ReferenceOptions {
  FormatId target = FormatId::float64;
  bool weights = true;              // certify the attention weights too
  int start_precision_bits = 0;     // 0: starting_precision(target)
  int max_precision_bits = 65536;   // refinement gives up (ReferenceError) beyond this
  // Only these output columns (certified_row; the others stay 0); empty:
  // all. The fast reference escalates just the outputs it cannot decide.
  std::vector<int> columns;
  // Called after each row with (rows done, rows in all), for progress output.
  std::function<void(std::size_t, std::size_t)> progress;
};

// Thrown when refinement reaches max_precision_bits without deciding a value.
class ReferenceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RowResult {
  std::vector<double> out;      // d_v values
  std::vector<double> weights;  // S values (empty unless asked for)
  double lse = 0;
  int precision_bits = 0;       // working precision that decided the last value
  int attempts = 0;             // evaluations of the row (1 = no refinement)
  std::size_t exact_values = 0; // values settled through their exact rational form
};

struct ReferenceStats {
  std::size_t rows = 0;
  std::size_t refined_rows = 0;   // rows that needed more than one evaluation
  std::size_t exact_values = 0;
  int start_precision_bits = 0;
  int max_precision_bits = 0;
};

struct ReferenceResult {
  FormatId target = FormatId::float64;
  std::vector<double> out;      // [B, Hq, L, d_v]
  std::vector<double> lse;      // [B, Hq, L]
  std::vector<double> weights;  // [B, Hq, L, S], empty unless asked for
  ReferenceStats stats;
};

// The working precision the first evaluation uses for a target format:
// 40 bits beyond the format's precision (at least 64).
int starting_precision(FormatId target);

RowResult certified_row(const Problem& p, RowIndex r, const ReferenceOptions& options = {});
ReferenceResult certified_attention(const Problem& p, const ReferenceOptions& options = {});

}  // namespace attnspec
