// JSON and Markdown reports of an audit, and its worst-case directory; see
// report.hpp.
#include "audit/report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "cases/io/case_dir.hpp"

namespace attnspec {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// JSON has no infinity or NaN: they become null, and each summary says how
// many non-finite values it met.
json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::string short_number(double x) {
  if (std::isnan(x)) return "n/a";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

std::string shape_text(const Dims& d) {
  return std::to_string(d.batch) + "," + std::to_string(d.q_heads) + "," + std::to_string(d.kv_heads) + "," +
         std::to_string(d.q_len) + "," + std::to_string(d.kv_len) + "," + std::to_string(d.d_k) + "," + std::to_string(d.d_v);
}

json shape_json(const Dims& d) {
  return {{"batch", d.batch}, {"q_heads", d.q_heads}, {"kv_heads", d.kv_heads}, {"q_len", d.q_len},
          {"kv_len", d.kv_len}, {"d_k", d.d_k},       {"d_v", d.d_v}};
}

json summary_json(const Summary& s) {
  return {{"count", s.count}, {"nonfinite", s.nonfinite}, {"max", number(s.max)}, {"median", number(s.median)},
          {"rms", number(s.rms)}};
}

json measures_json(const ErrorMeasures& m) {
  return {{"componentwise_u", summary_json(m.componentwise)},
          {"ulps", summary_json(m.ulps)},
          {"normwise_relative", summary_json(m.normwise)},
          {"rmse", number(m.rmse)},
          {"max_abs", number(m.max_abs)},
          {"correctly_rounded_share", m.correctly_rounded_share}};
}

json histogram_json(const Histogram& h) {
  return {{"counts", h.counts}, {"zeros", h.zeros}, {"below", h.below}, {"above", h.above}};
}

std::string sampling_text(const AuditResult& r) {
  const AuditPoint& last = r.points.back();
  if (last.rows_per_head >= last.shape.q_len) return "every query row of every (batch, head) is checked";
  return std::to_string(last.rows_per_head) + " of " + std::to_string(last.shape.q_len) +
         " query rows per (batch, head), drawn uniformly without replacement (seed " + std::to_string(r.seed) +
         "); the kernel ran on every row";
}

json worst_json(const WorstElement& w, const KernelFormats& f) {
  json query = json::array();
  for (double x : w.query) query.push_back(hex_bits(x, f.input));
  json keys = json::array();
  for (const WorstKey& k : w.top_keys)
    keys.push_back({{"key", k.index}, {"weight", number(k.weight)}, {"value", number(k.value)}, {"value_hex", hex_bits(k.value, f.input)}});
  return {{"row", {w.row.batch, w.row.head, w.row.query}},
          {"column", w.column},
          {"got", number(w.got)},
          {"got_hex", std::isfinite(w.got) && is_representable(w.got, f.output) ? hex_bits(w.got, f.output) : ""},
          {"exact", number(w.exact)},
          {"exact_error", number(w.exact_error)},
          {"correctly_rounded", number(w.correctly_rounded)},
          {"correctly_rounded_hex", hex_bits(w.correctly_rounded, f.output)},
          {"abs_scale", number(w.abs_scale)},
          {"bound", number(w.bound)},
          {"componentwise_u", number(w.componentwise)},
          {"ulps", number(w.ulps)},
          {"query_hex", query},
          {"top_keys", keys}};
}

json bound_json(const BoundComparison& b) {
  return {{"max_ratio", number(b.max_ratio)},
          {"error_u_at_max_ratio", number(b.error_u)},
          {"bound_u_at_max_ratio", number(b.bound_u)},
          {"median_bound_u", number(b.median_bound_u)},
          {"min_bound_u", number(b.min_bound_u)},
          {"max_bound_u", number(b.max_bound_u)},
          {"outside", b.outside},
          {"unbounded", b.unbounded}};
}

std::string gradient_name(char tensor) { return tensor == 'S' ? "dsink" : std::string("d") + tensor; }

json gradients_json(const GradientAudit& g) {
  json tensors = json::array();
  for (const GradientTensorAudit& t : g.tensors)
    tensors.push_back({{"tensor", gradient_name(t.tensor)},
                       {"values", t.values},
                       {"kernel", measures_json(t.kernel)},
                       {"textbook", measures_json(t.textbook)},
                       {"yardstick_max_abs", number(t.yardstick_max_abs)},
                       {"floor", number(t.floor)},
                       {"kernel_yardstick_max_abs_ratio", number(t.ratio)},
                       {"gradrel_criterion_met", t.within_gradrel},
                       {"gradrel_not_judged", t.gradrel_not_judged},
                       {"bound", bound_json(t.bound)}});
  return {{"seconds", {{"kernel", g.kernel_seconds}, {"reference", g.reference_seconds}}}, {"tensors", tensors}};
}

json point_json(const AuditPoint& p, const KernelFormats& f) {
  const bool flash_met = p.kernel.max_abs <= 2 * p.naive.max_abs + p.flash_floor;
  return {{"shape", shape_json(p.shape)},
          {"rows_per_head", p.rows_per_head},
          {"checked_rows", p.checked_rows},
          {"checked_elements", p.checked_elements},
          {"escalated_rows", p.escalated_rows},
          {"seconds", {{"kernel", p.kernel_seconds}, {"reference", p.reference_seconds}, {"naive", p.naive_seconds}}},
          {"kernel", measures_json(p.kernel)},
          {"naive", measures_json(p.naive)},
          {"floor", measures_json(p.floor)},
          {"kernel_naive_max_abs_ratio", number(p.kernel_naive_ratio)},
          {"flash_attention_floor", number(p.flash_floor)},
          {"flash_attention_criterion_met", flash_met},
          {"bound", bound_json(p.bound)},
          {"gradients", p.gradients ? gradients_json(*p.gradients) : json(nullptr)},
          {"histogram",
           {{"edges", p.kernel_histogram.edges},
            {"kernel", histogram_json(p.kernel_histogram)},
            {"naive", histogram_json(p.naive_histogram)},
            {"floor", histogram_json(p.floor_histogram)}}},
          {"worst", worst_json(p.worst, f)}};
}

std::string bound_sentence(const AuditPoint& p) {
  const BoundComparison& b = p.bound;
  std::string text;
  if (b.unbounded == p.checked_elements)
    return "no finite a priori bound for these formats and S (spec/SPEC.md 6.4 needs 6 n u < 1 and n^u (1 + gamma) < 2 "
           "for the accumulation format's u)";
  text = "largest error / bound " + short_number(b.max_ratio) + " (error " + short_number(b.error_u) + ", bound " +
         short_number(b.bound_u) + " u_out |P||V| there); " + std::to_string(b.outside) + " of " +
         std::to_string(p.checked_elements - b.unbounded) + " bounded elements outside their bound";
  if (b.unbounded) text += "; " + std::to_string(b.unbounded) + " elements without a finite bound";
  return text;
}

}  // namespace

std::string hex_bits(double value, FormatId format) {
  const FormatInfo& info = format_info(format);
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*llx", info.storage_bits / 4,
                static_cast<unsigned long long>(encode_bits(value, format)));
  return text;
}

const AuditPoint& worst_point(const AuditResult& result) {
  const AuditPoint* worst = &result.points.back();
  for (const AuditPoint& point : result.points)
    if (point.worst.componentwise > worst->worst.componentwise) worst = &point;
  return *worst;
}

json audit_json(const AuditResult& r, const std::string& worst_case_dir) {
  json points = json::array();
  for (const AuditPoint& p : r.points) points.push_back(point_json(p, r.formats));
  json fits = json::array();
  for (const NamedFit& f : r.fits)
    fits.push_back({{"series", f.series},
                    {"exponent", number(f.fit.exponent)},
                    {"coefficient", number(f.fit.coefficient)},
                    {"r_squared", number(f.fit.r_squared)},
                    {"points", f.fit.points}});
  return {{"format", "attnspec-audit/1"},
          {"kernel", r.kernel},
          {"naive", r.naive},
          {"formats",
           {{"input", format_info(r.formats.input).name},
            {"accumulate", format_info(r.formats.accumulate).name},
            {"output", format_info(r.formats.output).name},
            {"weights", r.formats.weights ? json(format_info(*r.formats.weights).name) : json(nullptr)},
            {"weights_scale", r.formats.weights_scale}}},
          {"distribution", to_string(r.distribution)},
          {"distribution_description", describe(r.distribution)},
          {"seed", r.seed},
          {"positions", r.positions},
          {"shape", shape_json(r.shape)},
          {"sweep", to_string(r.sweep)},
          {"sampling", sampling_text(r)},
          {"reference_threads", r.threads},
          {"points", points},
          {"fits", fits},
          {"worst_case_dir", worst_case_dir}};
}

std::string audit_markdown(const AuditResult& r, const std::string& worst_case_dir) {
  const AuditPoint& p = r.points.back();
  std::ostringstream md;
  md << "## attnspec audit: " << r.kernel << "\n\n";
  md << "- formats: input " << format_info(r.formats.input).name << ", accumulate " << format_info(r.formats.accumulate).name
     << ", output " << format_info(r.formats.output).name << describe_weights(r.formats) << "\n";
  md << "- inputs: `" << to_string(r.distribution) << "`, " << describe(r.distribution) << ", rounded to "
     << format_info(r.formats.input).name << "; seed " << r.seed << "; no mask, default scale; positions: " << r.positions
     << "\n";
  md << "- shape B,Hq,Hkv,L,S,d_k,d_v = " << shape_text(p.shape) << "; " << sampling_text(r) << " (" << p.checked_rows
     << " rows, " << p.checked_elements << " elements)\n";
  md << "- reference: fast certified reference, " << p.escalated_rows << " of " << p.checked_rows
     << " rows escalated to multiprecision; times: kernel " << short_number(p.kernel_seconds) << " s, reference "
     << short_number(p.reference_seconds) << " s (" << r.threads << " threads), naive " << short_number(p.naive_seconds)
     << " s\n\n";
  md << "| measure | kernel | naive, same formats | output-rounding floor |\n|---|---|---|---|\n";
  const auto row = [&](const std::string& name, auto get) {
    md << "| " << name << " | " << short_number(get(p.kernel)) << " | " << short_number(get(p.naive)) << " | "
       << short_number(get(p.floor)) << " |\n";
  };
  row("componentwise max (u_out \\|P\\|\\|V\\|)", [](const ErrorMeasures& m) { return m.componentwise.max; });
  row("componentwise median", [](const ErrorMeasures& m) { return m.componentwise.median; });
  row("componentwise RMS", [](const ErrorMeasures& m) { return m.componentwise.rms; });
  row("correctly rounded (share of elements)", [](const ErrorMeasures& m) { return m.correctly_rounded_share; });
  row("ulps max", [](const ErrorMeasures& m) { return m.ulps.max; });
  row("ulps RMS", [](const ErrorMeasures& m) { return m.ulps.rms; });
  row("normwise relative, max over rows", [](const ErrorMeasures& m) { return m.normwise.max; });
  row("normwise relative, median", [](const ErrorMeasures& m) { return m.normwise.median; });
  row("RMSE", [](const ErrorMeasures& m) { return m.rmse; });
  row("max absolute error", [](const ErrorMeasures& m) { return m.max_abs; });
  md << "\n- a priori bound (spec/SPEC.md 6.5): " << bound_sentence(p) << "\n";
  md << "- naive yardstick (" << r.naive << ", same rows): kernel / naive max abs error " << short_number(p.kernel_naive_ratio)
     << " (FlashAttention criterion, max error <= 2 x naive + floor " << short_number(p.flash_floor) << ": "
     << (p.kernel.max_abs <= 2 * p.naive.max_abs + p.flash_floor ? "met" : "NOT met") << ")\n";
  const AuditPoint& wp = worst_point(r);
  const WorstElement& w = wp.worst;
  md << "- worst element: row (" << w.row.batch << ", " << w.row.head << ", " << w.row.query << ") column " << w.column;
  if (r.points.size() > 1) md << " at S=" << wp.shape.kv_len << ", d_k=" << wp.shape.d_k;
  md << ": got " << short_number(w.got) << ", exact " << short_number(w.exact) << ", |P||V| " << short_number(w.abs_scale)
     << ", " << short_number(w.componentwise) << " u_out |P||V|, " << short_number(w.ulps) << " ulps";
  if (w.ulps == 0) md << " (correctly rounded: the error is the output rounding itself)";
  if (!worst_case_dir.empty())
    md << "; its row is the case `" << worst_case_dir << "` (`attnspec check " << worst_case_dir << " --kernel "
       << r.kernel << "`)";
  md << "\n";
  if (p.gradients) {
    const GradientAudit& g = *p.gradients;
    md << "\nBackward (the whole problem, dO drawn from the inputs' law; errors against the certified gradients in "
          "u_out times each value's terms' magnitudes, spec/SPEC.md 6.11; kernel "
       << short_number(g.kernel_seconds) << " s, reference and yardstick " << short_number(g.reference_seconds)
       << " s):\n\n";
    md << "| gradient | values | kernel componentwise max | RMS | ulps max | max abs | textbook max abs | "
          "GRADREL yardstick max abs | kernel / yardstick | 3x + floor | bound: largest error / bound | outside | "
          "no bound |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const GradientTensorAudit& t : g.tensors)
      md << "| " << gradient_name(t.tensor) << " | " << t.values << " | " << short_number(t.kernel.componentwise.max)
         << " | " << short_number(t.kernel.componentwise.rms) << " | " << short_number(t.kernel.ulps.max) << " | "
         << short_number(t.kernel.max_abs) << " | " << short_number(t.textbook.max_abs) << " | "
         << short_number(t.yardstick_max_abs) << " | " << short_number(t.ratio) << " | "
         << (t.within_gradrel ? "met" : "NOT met") << " | " << short_number(t.bound.max_ratio) << " | "
         << t.bound.outside << " | " << t.bound.unbounded << " |\n";
    md << "\nThe textbook backward is the kernel's formats' (P from the softmax, D from P dP); GRADREL's "
          "yardstick is the worst of its four ways (spec/SPEC.md, GRADREL), here on one problem.\n";
    for (const GradientTensorAudit& t : g.tensors)
      if (t.gradrel_not_judged > 0)
        md << "\n" << gradient_name(t.tensor) << ": " << t.gradrel_not_judged
           << " values not judged by GRADREL (the yardstick overflows there).\n";
  }
  if (r.points.size() > 1) {
    const std::string axis = r.sweep == SweepAxis::kv_len ? "S" : "d_k";
    md << "\nSweep over " << axis << " (componentwise errors in u_out |P||V|):\n\n";
    md << "| " << axis
       << " | kernel max | kernel RMS | naive max | floor max | bound median | kernel RMSE | naive RMSE | floor RMSE | kernel / naive |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const AuditPoint& q : r.points)
      md << "| " << (r.sweep == SweepAxis::kv_len ? q.shape.kv_len : q.shape.d_k) << " | "
         << short_number(q.kernel.componentwise.max) << " | " << short_number(q.kernel.componentwise.rms) << " | "
         << short_number(q.naive.componentwise.max) << " | " << short_number(q.floor.componentwise.max) << " | "
         << short_number(q.bound.median_bound_u) << " | " << short_number(q.kernel.rmse) << " | "
         << short_number(q.naive.rmse) << " | " << short_number(q.floor.rmse) << " | "
         << short_number(q.kernel_naive_ratio) << " |\n";
    md << "\nGrowth exponents (least squares of log y on log " << axis << "):";
    for (const NamedFit& f : r.fits) md << " " << f.series << " " << short_number(f.fit.exponent) << ";";
    md << "\n";
  }
  return md.str();
}

void save_worst_case(const AuditResult& result, const fs::path& directory) {
  const AuditPoint& point = worst_point(result);
  const WorstElement& w = point.worst;
  Case c;
  c.directory = directory;
  c.dtype = result.formats.input;
  c.problem = w.case_problem;
  c.provenance = {{"generator", "attnspec audit"},
                  {"kernel", result.kernel},
                  {"distribution", to_string(result.distribution)},
                  {"seed", result.seed},
                  {"shape", shape_text(point.shape)},
                  {"row", {w.row.batch, w.row.head, w.row.query}},
                  {"column", w.column},
                  {"componentwise_error_u", number(w.componentwise)},
                  {"note", "the audited problem's row with the largest componentwise error, alone"}};
  fs::path partial = directory;
  partial += ".partial";
  fs::remove_all(partial);
  save_case(c, partial);
  fs::remove_all(directory);
  fs::rename(partial, directory);
}

}  // namespace attnspec
