// What this machine's CPU offers, as far as attention kernels care: the
// model name and the x86-64 vector extensions that decide which code path a
// library takes (AVX2, AVX-512 and its bf16 and fp16 parts, AMX). Reports
// record it, because a third-party kernel's verdict holds for the code path
// it was measured on, not for every CPU.
#pragma once

#include <string>
#include <vector>

namespace attnspec {

struct CpuDescription {
  std::string model;                  // "AMD EPYC 9554 64-Core Processor"
  std::vector<std::string> features;  // of kCpuFeaturesOfInterest, as /proc/cpuinfo names them
  // "avx512-bf16", "avx512", "avx2" or "baseline": the coarse kind the
  // Findings are stated per.
  std::string kind;
  bool has(const std::string& feature) const;
};

// Read once per process from /proc/cpuinfo (Linux; elsewhere the compiler's
// CPU detection, with model "unknown").
const CpuDescription& this_cpu();

// "AMD EPYC (avx2 fma f16c; kind avx2)".
std::string describe(const CpuDescription& cpu);

}  // namespace attnspec
