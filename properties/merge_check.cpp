// The merge check (properties/merge_check.hpp).
#include "properties/merge_check.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "reference/certified.hpp"
#include "reference/merge.hpp"
#include "spec/merge_bound.hpp"

namespace attnspec {
namespace {

// "lse (3.5, -inf), outputs (0.25, 0) in column 1": the row's parts, for
// a message that reproduces the failure by hand.
std::string parts_of(const MergeInput& in, int row, int column) {
  std::ostringstream text;
  text.precision(17);
  text << "parts' lse (";
  for (int part = 0; part < in.parts; ++part) text << (part ? ", " : "") << in.lse[in.lse_index(part, row)];
  text << "), outputs (";
  for (int part = 0; part < in.parts; ++part) text << (part ? ", " : "") << in.out[in.out_index(part, row, column)];
  text << ") in column " << column;
  return text.str();
}


}  // namespace

std::string check_merge_against_reference(Kernel& kernel, const Problem& merge_problem, ErrorStats& stats) {
  const MergeInput in = merge_input_of(merge_problem);
  const KernelResult got = kernel.merge(in);
  const auto rows = static_cast<std::size_t>(in.rows), dv = static_cast<std::size_t>(in.d_v);
  if (got.out.size() != rows * dv || got.lse.size() != rows)
    throw std::runtime_error(kernel.name() + "'s merge returned " + std::to_string(got.out.size()) + " outputs and " +
                             std::to_string(got.lse.size()) + " lse, expected " + std::to_string(rows * dv) + " and " +
                             std::to_string(rows));
  const KernelFormats formats = kernel.formats();
  const double u_out = format_info(formats.output).unit_roundoff;
  ReferenceOptions options;
  options.weights = false;
  for (int row = 0; row < in.rows; ++row) {
    const MergeRowBound bound = merge_row_bound(in, row, formats.accumulate, formats.output);
    // Correctly rounded to float64: within 2^-53 |value| of the exact one,
    // which the comparison allows for.
    const RowResult exact = certified_row(merge_problem, RowIndex{row, 0, 0}, options);
    const std::string where = "row " + std::to_string(row);
    for (std::size_t t = 0; t < dv; ++t) {
      const double value = got.out[static_cast<std::size_t>(row) * dv + t], want = exact.out[t];
      const double tolerance = bound.out[t] + 0x1p-53 * std::fabs(want), difference = std::fabs(value - want);
      stats.add(difference, tolerance, bound.scale[t], u_out);
      if (!(difference <= tolerance))
        return where + ": merged output " + number_text(value) + ", the exact merge " + number_text(want) + " (" +
               parts_of(in, row, static_cast<int>(t)) + "); they differ by " + number_text(difference) +
               ", more than M = " + number_text(tolerance);
    }
    const double lse = got.lse[static_cast<std::size_t>(row)];
    const bool agree = exact.lse == -INFINITY
                           ? lse == -INFINITY
                           : std::fabs(lse - exact.lse) <= bound.lse + 0x1p-53 * std::fabs(exact.lse);
    if (!agree)
      return where + ": merged lse " + number_text(lse) + ", the exact " + number_text(exact.lse) + " (" + parts_of(in, row, 0) +
             "), more than E_L = " + number_text(bound.lse) + " apart";
  }
  return "";
}

}  // namespace attnspec
