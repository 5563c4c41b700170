// Loading and saving attnspec-case/1 directories. Loading checks, in order:
// case.json's fields, each array's dtype and shape, then the values
// (representable in the case's dtype; mask values legal), so the first
// message a user sees is about the first thing to fix.
#include "cases/io/case_dir.hpp"

#include <stdlib.h>

#include <array>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cases/io/input_error.hpp"
#include "cases/io/input_file.hpp"
#include "cases/io/layout_field.hpp"
#include "reference/merge.hpp"
#include "cases/io/npy.hpp"
#include "cases/io/strict_json.hpp"

namespace attnspec {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kFormatTag = "attnspec-case/1";
constexpr std::uint64_t kMaxCaseJsonBytes = 16u << 20;

const std::set<std::string>& known_fields() {
  static const std::set<std::string> fields = {"format", "dtype",   "batch",   "q_heads", "kv_heads",
                                               "kv_len", "q_len",   "d_k",     "d_v",     "scale",
                                               "softcap", "causal", "window",  "alibi",
                                               "sinks",   "descales", "backward", "mask", "layout", "merge", "provenance"};
  return fields;
}

class JsonFields {
 public:
  JsonFields(const json& object, std::string file) : object_(object), file_(std::move(file)) {}

  const json& required(const std::string& field) const {
    if (!object_.contains(field)) fail(field, "missing (required)");
    return object_.at(field);
  }
  int positive_integer(const std::string& field) const {
    const json& value = required(field);
    if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > (1 << 30))
      fail(field, "expected an integer >= 1, got " + value.dump());
    return value.get<int>();
  }
  std::optional<double> optional_positive(const std::string& field) const {
    const json& value = required(field);
    if (value.is_null()) return std::nullopt;
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0)
      fail(field, "expected null or a finite number > 0, got " + value.dump());
    return value.get<double>();
  }
  std::string choice(const std::string& field, const std::vector<std::string>& allowed, bool nullable) const {
    const json& value = required(field);
    if (nullable && value.is_null()) return "";
    if (value.is_string())
      for (const std::string& option : allowed)
        if (value.get<std::string>() == option) return option;
    std::string expected = nullable ? "null" : "";
    for (const std::string& option : allowed) expected += (expected.empty() ? "\"" : ", \"") + option + "\"";
    fail(field, "expected one of " + expected + ", got " + value.dump());
  }
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw InputError(file_, field, message);
  }

 private:
  const json& object_;
  std::string file_;
};

// "window": absent or null (none), or {"left": L, "right": R, "alignment":
// A} with L and R null (unbounded) or integers >= 0. Optional, unlike the
// older fields, so that cases written before windows existed still load.
std::optional<Window> read_window(const json& object, const std::string& file) {
  if (!object.contains("window") || object["window"].is_null()) return std::nullopt;
  const json& value = object["window"];
  const auto fail = [&](const std::string& field, const std::string& message) {
    throw InputError(file, field, message);
  };
  if (!value.is_object())
    fail("window", "expected null or an object {\"left\": ..., \"right\": ..., \"alignment\": ...}, got " + value.dump());
  for (const auto& [key, item] : value.items())
    if (key != "left" && key != "right" && key != "alignment") fail("window." + key, "unknown field");
  Window window;
  const auto side = [&](const char* name) -> std::optional<int> {
    const std::string field = std::string("window.") + name;
    if (!value.contains(name)) fail(field, "missing (required; null for unbounded)");
    const json& extent = value[name];
    if (extent.is_null()) return std::nullopt;
    if (!extent.is_number_integer() || extent.get<long long>() < 0 || extent.get<long long>() > (1 << 30))
      fail(field, "expected null (unbounded) or an integer >= 0, got " + extent.dump());
    return extent.get<int>();
  };
  window.left = side("left");
  window.right = side("right");
  if (!value.contains("alignment")) fail("window.alignment", "missing (required)");
  const json& alignment = value["alignment"];
  if (alignment == "top_left") window.alignment = Alignment::top_left;
  else if (alignment == "bottom_right") window.alignment = Alignment::bottom_right;
  else fail("window.alignment", "expected one of \"top_left\", \"bottom_right\", got " + alignment.dump());
  return window;
}

// "alibi": absent or null (none), or {"alignment": A}; the slopes are in
// alibi_slopes.npy, whose shape ([Hq] or [B, Hq]) says whether they vary
// with the batch entry. Optional, as "window" is.
std::optional<Alibi> read_alibi_field(const json& object, const std::string& file) {
  if (!object.contains("alibi") || object["alibi"].is_null()) return std::nullopt;
  const json& value = object["alibi"];
  if (!value.is_object()) throw InputError(file, "alibi", "expected null or an object {\"alignment\": ...}, got " + value.dump());
  for (const auto& [key, item] : value.items())
    if (key != "alignment") throw InputError(file, "alibi." + key, "unknown field");
  if (!value.contains("alignment")) throw InputError(file, "alibi.alignment", "missing (required)");
  Alibi alibi;
  const json& alignment = value["alignment"];
  if (alignment == "top_left") alibi.alignment = Alignment::top_left;
  else if (alignment == "bottom_right") alibi.alignment = Alignment::bottom_right;
  else throw InputError(file, "alibi.alignment", "expected one of \"top_left\", \"bottom_right\", got " + alignment.dump());
  return alibi;
}

json window_json(const std::optional<Window>& window) {
  if (!window) return nullptr;
  const auto side = [](const std::optional<int>& extent) { return extent ? json(*extent) : json(nullptr); };
  return {{"left", side(window->left)},
          {"right", side(window->right)},
          {"alignment", std::string(to_string(window->alignment))}};
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::uint64_t product(const std::vector<std::size_t>& shape) {
  std::uint64_t count = 1;
  for (std::size_t extent : shape) count *= extent;  // within kMaxTensorElements: checked by size_limit_error
  return count;
}

NpyArray load_array(const fs::path& path, NpyDtype dtype, const std::vector<std::size_t>& shape) {
  NpyReadOptions options;
  options.max_elements = product(shape);
  options.limit_reason = "case.json's shape gives it " + shape_text(shape);
  options.shape = shape;
  NpyArray array = read_npy(path, options);
  if (array.dtype != dtype)
    throw InputError(path.string(), "dtype",
                     "expected " + std::string(npy_descr(dtype)) + ", got " + std::string(npy_descr(array.dtype)));
  if (array.shape != shape)
    throw InputError(path.string(), "shape", "expected " + shape_text(shape) + ", got " + shape_text(array.shape));
  return array;
}

void check_representable(const fs::path& path, const std::vector<double>& values, FormatId dtype) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!is_representable(values[i], dtype)) {
      std::ostringstream message;
      message << "value " << values[i] << " at flat index " << i << " is not representable in "
              << format_info(dtype).name;
      throw InputError(path.string(), "values", message.str());
    }
  }
}

// The descale files, in the order of Descales' members.
constexpr std::array<const char*, 3> kDescaleFiles = {"q_descale.npy", "k_descale.npy", "v_descale.npy"};

template <typename SomeDescales>  // Descales or const Descales
auto descale_factors(SomeDescales& descales) {
  return std::array{&descales.q, &descales.k, &descales.v};
}

// One factor array, [B, Hkv]: each value a float32 number, finite and > 0
// (a NaN, an infinity or 0 would make every real input of that kv head
// undefined or zero, which no kernel computes with).
std::vector<double> load_descale(const fs::path& path, std::size_t batch, std::size_t kv_heads) {
  NpyArray factors = load_array(path, NpyDtype::float64, {batch, kv_heads});
  for (std::size_t i = 0; i < factors.values.size(); ++i) {
    const double factor = factors.values[i];
    if (!(factor > 0) || !std::isfinite(factor) || !is_representable(factor, FormatId::float32)) {
      std::ostringstream message;
      message << "factor " << factor << " of (batch " << i / kv_heads << ", kv head " << i % kv_heads
              << ") is not a float32 value, finite and > 0";
      throw InputError(path.string(), "values", message.str());
    }
  }
  return std::move(factors.values);
}

}  // namespace

std::vector<std::size_t> out_shape(const Problem& p) {
  const Dims& d = p.dims;
  return {static_cast<std::size_t>(d.batch), static_cast<std::size_t>(d.q_heads), static_cast<std::size_t>(d.q_len),
          static_cast<std::size_t>(d.d_v)};
}

std::vector<std::size_t> lse_shape(const Problem& p) {
  const Dims& d = p.dims;
  return {static_cast<std::size_t>(d.batch), static_cast<std::size_t>(d.q_heads), static_cast<std::size_t>(d.q_len)};
}

Case load_case(const fs::path& directory) {
  if (!fs::is_directory(directory)) throw InputError(directory.string(), "", "not a case directory");
  const fs::path json_path = directory / "case.json";
  const std::string json_file = json_path.string();
  const json object = parse_strict_json(read_input_file(json_path, kMaxCaseJsonBytes, "the most a case.json may hold"), json_file);
  if (!object.is_object()) throw InputError(json_file, "", "expected a JSON object");
  for (const auto& [key, value] : object.items())
    if (!known_fields().count(key)) throw InputError(json_file, key, "unknown field");

  const JsonFields fields(object, json_file);
  fields.choice("format", {kFormatTag}, false);
  Case c;
  c.directory = directory;
  std::vector<std::string> dtype_names;
  for (FormatId id : all_formats()) dtype_names.emplace_back(format_info(id).name);
  c.dtype = *parse_format(fields.choice("dtype", dtype_names, false));

  Problem& p = c.problem;
  p.dims.batch = fields.positive_integer("batch");
  p.dims.q_heads = fields.positive_integer("q_heads");
  p.dims.kv_heads = fields.positive_integer("kv_heads");
  p.dims.q_len = fields.positive_integer("q_len");
  p.dims.kv_len = fields.positive_integer("kv_len");
  p.dims.d_k = fields.positive_integer("d_k");
  p.dims.d_v = fields.positive_integer("d_v");
  if (p.dims.q_heads % p.dims.kv_heads != 0)
    fields.fail("q_heads", "expected a multiple of kv_heads (" + std::to_string(p.dims.kv_heads) + "), got " +
                               std::to_string(p.dims.q_heads));
  if (const std::string error = size_limit_error(p.dims); !error.empty())
    throw InputError(json_file, "", "the shape is too large: " + error);
  p.scale = fields.optional_positive("scale");
  p.softcap = fields.optional_positive("softcap");
  const std::string causal = fields.choice("causal", {"top_left", "bottom_right"}, true);
  p.causal = causal == "top_left" ? Causal::top_left : causal == "bottom_right" ? Causal::bottom_right : Causal::none;
  p.window = read_window(object, json_file);
  p.alibi = read_alibi_field(object, json_file);
  // Optional flags: absent, null or false, or true (their files hold the data).
  const auto flag = [&](const char* name) {
    if (!object.contains(name) || object[name].is_null()) return false;
    if (!object[name].is_boolean()) fields.fail(name, "expected true, false or null, got " + object[name].dump());
    return object[name].get<bool>();
  };
  const bool sinks = flag("sinks");        // sinks.npy
  const bool descales = flag("descales");  // q_descale.npy, k_descale.npy, v_descale.npy
  const bool backward = flag("backward");  // dout.npy
  if (descales && format_info(c.dtype).precision > 29)
      fields.fail("descales", "true with dtype " + std::string(format_info(c.dtype).name) +
                                  ": descales need inputs of at most 29 significant bits (an fp8, 16-bit or float32 "
                                  "dtype), whose products with float32 factors are binary64 numbers (SPEC 2.4)");
  if (backward && descales)
    fields.fail("backward", "true with descales: a backward problem carries no descale factors (SPEC 2.6)");
  const std::string mask = fields.choice("mask", {"bool", "additive"}, true);
  p.mask_kind = mask == "bool" ? MaskKind::boolean : mask == "additive" ? MaskKind::additive : MaskKind::none;
  const json& provenance = fields.required("provenance");
  if (!provenance.is_object()) fields.fail("provenance", "expected an object, got " + provenance.dump());
  c.provenance = provenance;

  const auto B = static_cast<std::size_t>(p.dims.batch), Hq = static_cast<std::size_t>(p.dims.q_heads),
             Hkv = static_cast<std::size_t>(p.dims.kv_heads), L = static_cast<std::size_t>(p.dims.q_len),
             S = static_cast<std::size_t>(p.dims.kv_len), Dk = static_cast<std::size_t>(p.dims.d_k),
             Dv = static_cast<std::size_t>(p.dims.d_v);
  p.q = load_array(directory / "q.npy", NpyDtype::float64, {B, Hq, L, Dk}).values;
  p.k = load_array(directory / "k.npy", NpyDtype::float64, {B, Hkv, S, Dk}).values;
  p.v = load_array(directory / "v.npy", NpyDtype::float64, {B, Hkv, S, Dv}).values;
  check_representable(directory / "q.npy", p.q, c.dtype);
  check_representable(directory / "k.npy", p.k, c.dtype);
  check_representable(directory / "v.npy", p.v, c.dtype);
  const fs::path dout_path = directory / "dout.npy";
  if (!backward) {
    if (fs::exists(dout_path)) throw InputError(dout_path.string(), "", "present, but case.json has no \"backward\": true");
  } else {
    p.dout = load_array(dout_path, NpyDtype::float64, {B, Hq, L, Dv}).values;
    check_representable(dout_path, p.dout, c.dtype);
  }

  const fs::path slopes_path = directory / "alibi_slopes.npy";
  if (!p.alibi) {
    if (fs::exists(slopes_path))
      throw InputError(slopes_path.string(), "", "present, but case.json has no \"alibi\"");
  } else {
    NpyReadOptions options;
    options.max_elements = B * Hq;
    options.limit_reason = "ALiBi slopes are at most [B, Hq] = " + shape_text({B, Hq});
    NpyArray slopes = read_npy(slopes_path, options);
    if (slopes.dtype != NpyDtype::float64)
      throw InputError(slopes_path.string(), "dtype", "expected <f8, got " + std::string(npy_descr(slopes.dtype)));
    const bool per_head = slopes.shape == std::vector<std::size_t>{Hq};
    const bool per_batch = slopes.shape == std::vector<std::size_t>{B, Hq};
    if (!per_head && !per_batch)
      throw InputError(slopes_path.string(), "shape",
                       "expected [" + std::to_string(Hq) + "] or [" + std::to_string(B) + ", " + std::to_string(Hq) +
                           "], got " + shape_text(slopes.shape));
    for (std::size_t i = 0; i < slopes.values.size(); ++i) {
      const double slope = slopes.values[i];
      if (!std::isfinite(slope) || static_cast<double>(static_cast<float>(slope)) != slope) {
        std::ostringstream message;
        message << "slope " << slope << " at flat index " << i << " is not a finite float32 value";
        throw InputError(slopes_path.string(), "values", message.str());
      }
    }
    p.alibi->per_batch = per_batch;
    p.alibi->slopes = std::move(slopes.values);
  }

  const fs::path sinks_path = directory / "sinks.npy";
  if (!sinks) {
    if (fs::exists(sinks_path)) throw InputError(sinks_path.string(), "", "present, but case.json has no \"sinks\": true");
  } else {
    NpyArray sink_logits = load_array(sinks_path, NpyDtype::float64, {Hq});
    for (std::size_t h = 0; h < sink_logits.values.size(); ++h) {
      const double sink = sink_logits.values[h];
      if (sink == -INFINITY) continue;  // no sink for this head
      if (!std::isfinite(sink) || static_cast<double>(static_cast<float>(sink)) != sink) {
        std::ostringstream message;
        message << "sink " << sink << " of head " << h << " is not a float32 value, finite or -inf";
        throw InputError(sinks_path.string(), "values", message.str());
      }
    }
    p.sinks = std::move(sink_logits.values);
  }

  // The kernel's inputs stay as they are: the factors are the kernel's to
  // apply (apply_descales gives the real problem).
  if (!descales) {
    for (const char* name : kDescaleFiles)
      if (fs::exists(directory / name))
        throw InputError((directory / name).string(), "", "present, but case.json has no \"descales\": true");
  } else {
    p.descales.emplace();
    const auto factors = descale_factors(*p.descales);
    for (std::size_t i = 0; i < kDescaleFiles.size(); ++i)
      *factors[i] = load_descale(directory / kDescaleFiles[i], B, Hkv);
  }

  const fs::path mask_path = directory / "mask.npy";
  if (p.mask_kind == MaskKind::none) {
    if (fs::exists(mask_path)) throw InputError(mask_path.string(), "", "present, but case.json says \"mask\": null");
  } else {
    NpyReadOptions options;
    options.max_elements = B * Hq * L * S;
    options.limit_reason = "a mask is at most [B, Hq, L, S] = " + shape_text({B, Hq, L, S});
    NpyArray m = read_npy(mask_path, options);
    const NpyDtype want = p.mask_kind == MaskKind::boolean ? NpyDtype::boolean : NpyDtype::float64;
    if (m.dtype != want)
      throw InputError(mask_path.string(), "dtype", "expected " + std::string(npy_descr(want)) + " for a " + mask +
                                                        " mask, got " + std::string(npy_descr(m.dtype)));
    const bool shape_ok = m.shape.size() == 4 && (m.shape[0] == 1 || m.shape[0] == B) &&
                          (m.shape[1] == 1 || m.shape[1] == Hq) && m.shape[2] == L && m.shape[3] == S;
    if (!shape_ok)
      throw InputError(mask_path.string(), "shape",
                       "expected [" + std::to_string(B) + " or 1, " + std::to_string(Hq) + " or 1, " + std::to_string(L) +
                           ", " + std::to_string(S) + "], got " + shape_text(m.shape));
    p.mask_batch = static_cast<int>(m.shape[0]);
    p.mask_heads = static_cast<int>(m.shape[1]);
    if (p.mask_kind == MaskKind::additive)
      for (std::size_t i = 0; i < m.values.size(); ++i)
        if (!(std::isfinite(m.values[i]) || m.values[i] == -INFINITY))
          throw InputError(mask_path.string(), "values",
                           "additive mask value at flat index " + std::to_string(i) + " is " +
                               (std::isnan(m.values[i]) ? "NaN" : "+inf") + " (expected finite or -inf)");
    p.mask = std::move(m.values);
  }
  if (object.contains("merge") && !object["merge"].is_null()) {
    const json& merge = object["merge"];
    if (!merge.is_boolean()) fields.fail("merge", "expected true, false or null, got " + merge.dump());
    c.merge = merge.get<bool>();
  }
  if (backward && (c.merge || (object.contains("layout") && !object["layout"].is_null())))
    fields.fail("backward", "true in a merge or laid-out case: gradients are defined for dense problems only");
  if (c.merge) {
    if (object.contains("layout") && !object["layout"].is_null())
      fields.fail("merge", "a merge case has no layout");
    try {
      const std::string error = validate(merge_input_of(p));
      if (!error.empty()) fields.fail("merge", error);
    } catch (const std::invalid_argument&) {
      fields.fail("merge",
                  "expected a merge's attention form (spec/SPEC.md section 6.10): q_heads = kv_heads = q_len = d_k = 1, "
                  "scale 1, q all 1, a bool mask of shape [batch, 1, 1, kv_len], no causal, window, alibi, softcap, sinks "
                  "or descales");
    }
  }
  c.layout = read_layout_field(object, json_file);
  if (c.layout)
    if (const std::vector<std::string> errors = validate(*c.layout, p); !errors.empty()) {
      const std::string& error = errors.front();
      const std::size_t colon = error.find(": ");
      throw InputError(json_file, error.substr(0, colon), error.substr(colon + 2));
    }
  return c;
}

nlohmann::json option_fields(const Problem& p) {
  const auto optional_number = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  json object = {
      {"batch", p.dims.batch},
      {"q_heads", p.dims.q_heads},
      {"kv_heads", p.dims.kv_heads},
      {"d_k", p.dims.d_k},
      {"d_v", p.dims.d_v},
      {"scale", optional_number(p.scale)},
      {"softcap", optional_number(p.softcap)},
      {"causal", p.causal == Causal::none ? json(nullptr) : json(std::string(to_string(p.causal)))},
  };
  // Written only when there is one: a case without a window stays readable
  // by attnspec versions from before windows.
  if (p.window) object["window"] = window_json(p.window);
  if (p.alibi) object["alibi"] = {{"alignment", std::string(to_string(p.alibi->alignment))}};
  if (!p.sinks.empty()) object["sinks"] = true;
  return object;
}

void save_case(const Case& c, const fs::path& directory) {
  const Problem& p = c.problem;
  // A case holds the kernel's inputs; applied factors would be applied twice
  // by whoever reads it.
  if (p.descales && p.descales->applied)
    throw std::logic_error("save_case: " + directory.string() +
                           ": the problem's descales are applied (it holds the real inputs, not the kernel's)");
  const auto errors = validate(p);
  if (!errors.empty()) throw InputError(directory.string(), "", "invalid problem: " + errors.front());
  json object = option_fields(p);
  object["format"] = kFormatTag;
  object["dtype"] = std::string(format_info(c.dtype).name);
  object["q_len"] = p.dims.q_len;
  object["kv_len"] = p.dims.kv_len;
  object["mask"] = p.mask_kind == MaskKind::none ? json(nullptr) : json(std::string(to_string(p.mask_kind)));
  object["provenance"] = c.provenance;
  if (p.descales) object["descales"] = true;
  if (!p.dout.empty()) object["backward"] = true;
  if (c.merge) {
    const MergeInput input = merge_input_of(p);  // std::invalid_argument for a problem of another form
    if (const std::string error = validate(input); !error.empty()) throw InputError(directory.string(), "merge", error);
    object["merge"] = true;
  }
  if (c.layout) {
    if (const std::vector<std::string> layout_errors = validate(*c.layout, p); !layout_errors.empty())
      throw InputError(directory.string(), "", "invalid layout: " + layout_errors.front());
    object["layout"] = layout_json(*c.layout);
  }
  // Provenance can carry a kernel's messages: bytes that are not UTF-8 are
  // replaced rather than failing the save.
  const std::string case_json = object.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  const auto B = static_cast<std::size_t>(p.dims.batch), Hq = static_cast<std::size_t>(p.dims.q_heads),
             Hkv = static_cast<std::size_t>(p.dims.kv_heads), L = static_cast<std::size_t>(p.dims.q_len),
             S = static_cast<std::size_t>(p.dims.kv_len);

  // Written into a fresh sibling directory, which then replaces the target:
  // a reader sees the old case or the whole new one, never a mixture, and
  // a failure part way leaves no half-written case behind.
  fs::path parent = directory.parent_path();
  if (parent.empty()) parent = ".";
  fs::create_directories(parent);
  std::string pattern = (parent / ("." + directory.filename().string() + ".partial-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) throw InputError(directory.string(), "", "cannot create a directory next to it to write into");
  const fs::path staging = pattern;
  try {
    write_npy(staging / "q.npy", {NpyDtype::float64, {B, Hq, L, static_cast<std::size_t>(p.dims.d_k)}, p.q});
    write_npy(staging / "k.npy", {NpyDtype::float64, {B, Hkv, S, static_cast<std::size_t>(p.dims.d_k)}, p.k});
    write_npy(staging / "v.npy", {NpyDtype::float64, {B, Hkv, S, static_cast<std::size_t>(p.dims.d_v)}, p.v});
    if (p.alibi)
      write_npy(staging / "alibi_slopes.npy",
                {NpyDtype::float64,
                 p.alibi->per_batch ? std::vector<std::size_t>{B, Hq} : std::vector<std::size_t>{Hq},
                 p.alibi->slopes});
    if (!p.sinks.empty()) write_npy(staging / "sinks.npy", {NpyDtype::float64, {Hq}, p.sinks});
    if (!p.dout.empty())
      write_npy(staging / "dout.npy", {NpyDtype::float64, {B, Hq, L, static_cast<std::size_t>(p.dims.d_v)}, p.dout});
    if (p.descales) {
      const auto arrays = descale_factors(*p.descales);
      for (std::size_t i = 0; i < kDescaleFiles.size(); ++i)
        write_npy(staging / kDescaleFiles[i], {NpyDtype::float64, {B, Hkv}, *arrays[i]});
    }
    if (p.mask_kind != MaskKind::none)
      write_npy(staging / "mask.npy",
                {p.mask_kind == MaskKind::boolean ? NpyDtype::boolean : NpyDtype::float64,
                 {static_cast<std::size_t>(p.mask_batch), static_cast<std::size_t>(p.mask_heads), L, S},
                 p.mask});
    write_file_atomically(staging / "case.json", case_json);
    fs::remove_all(directory);
    fs::rename(staging, directory);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
}

}  // namespace attnspec
