// Reads the CPU's model name and vector extensions from /proc/cpuinfo. Only
// the first processor's entry is read: the machines this runs on are
// homogeneous, and a kernel's code path is chosen from the same flags.
#include "adapters/cpu.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <string_view>

namespace attnspec {
namespace {

// The extensions that select code paths in oneDNN, XNNPACK, ATen and BLAS.
constexpr std::array<std::string_view, 14> kCpuFeaturesOfInterest = {
    "sse4_2",   "avx",      "avx2",        "fma",         "f16c",        "avx512f",  "avx512bw",
    "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"};

CpuDescription read_cpu() {
  CpuDescription cpu;
  cpu.model = "unknown";
  std::ifstream in("/proc/cpuinfo");
  std::string flags;
  bool have_model = false, have_flags = false;
  for (std::string line; std::getline(in, line) && !(have_model && have_flags);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    if (key == "model name" && !have_model) {
      cpu.model = value;
      have_model = true;
    } else if (key == "flags" && !have_flags) {
      flags.assign(1, ' ');
      flags += value;
      flags += ' ';
      have_flags = true;
    }
  }
  for (std::string_view feature : kCpuFeaturesOfInterest) {
    bool present = false;
    if (have_flags) {
      std::string word(1, ' ');
      word += feature;
      word += ' ';
      present = flags.find(word) != std::string::npos;
    } else {
#if defined(__x86_64__) && defined(__GNUC__)
      // No /proc: the compiler's detection, for the features it knows.
      if (feature == "avx2") present = __builtin_cpu_supports("avx2");
      else if (feature == "fma") present = __builtin_cpu_supports("fma");
      else if (feature == "avx512f") present = __builtin_cpu_supports("avx512f");
      else if (feature == "avx512bw") present = __builtin_cpu_supports("avx512bw");
      else if (feature == "avx512vl") present = __builtin_cpu_supports("avx512vl");
      else if (feature == "avx512dq") present = __builtin_cpu_supports("avx512dq");
      else if (feature == "avx") present = __builtin_cpu_supports("avx");
      else if (feature == "sse4_2") present = __builtin_cpu_supports("sse4.2");
#endif
    }
    if (present) cpu.features.emplace_back(feature);
  }
  if (cpu.has("avx512f") && cpu.has("avx512_bf16")) cpu.kind = "avx512-bf16";
  else if (cpu.has("avx512f")) cpu.kind = "avx512";
  else if (cpu.has("avx2")) cpu.kind = "avx2";
  else cpu.kind = "baseline";
  return cpu;
}

}  // namespace

bool CpuDescription::has(const std::string& feature) const {
  return std::find(features.begin(), features.end(), feature) != features.end();
}

const CpuDescription& this_cpu() {
  static const CpuDescription cpu = read_cpu();
  return cpu;
}

std::string describe(const CpuDescription& cpu) {
  std::ostringstream text;
  text << cpu.model << " (";
  for (std::size_t i = 0; i < cpu.features.size(); ++i) text << (i ? " " : "") << cpu.features[i];
  if (cpu.features.empty()) text << "no vector extensions of interest";
  text << "; kind " << cpu.kind << ")";
  return text.str();
}

}  // namespace attnspec
