// The messages of attnspec-process/1 (spec/SPEC.md section 8; JSON Schema:
// adapters/process/attnspec-process-1.schema.json): building attnspec's
// requests and checking an adapter's replies strictly, so a typo in an
// adapter ("softCap") is an error with the field named instead of a
// capability silently switched off.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "adapters/kernel.hpp"

namespace attnspec {

inline constexpr int kProcessProtocolVersion = 1;

// A reply that breaks the protocol; the message names the field.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AdapterInfo {
  std::string name;
  KernelFormats formats;
  Capabilities capabilities;
  bool operator==(const AdapterInfo& other) const;
};

struct RunReply {
  std::uint64_t id = 0;
  bool ok = false;
  bool unsupported = false;
  std::string error;  // the adapter's message when !ok
};

std::string hello_request();
// kind: "dense" (an attnspec-case/1 directory) or a PackedKind's name (an
// attnspec-packed/1 directory, adapters/process/packed_case.hpp).
// The request kind of the backward pass: a dense case with dout.npy, whose
// gradients the adapter writes (spec/SPEC.md section 8).
inline constexpr std::string_view kBackwardKind = "backward";

std::string run_request(std::uint64_t id, const std::filesystem::path& case_directory, std::string_view kind = "dense");
std::string bye_request();

// Throw ProtocolError on anything but a well-formed reply.
AdapterInfo parse_hello_reply(std::string_view line);
RunReply parse_run_reply(std::string_view line);

// The keys of the hello reply's "capabilities" object, the values its
// "masks" and "causal" lists may hold, and the format names: what the JSON
// Schema must list too (tests/process_protocol_test.cpp compares them).
std::span<const std::string_view> capability_keys();
std::span<const std::string_view> mask_names();
std::span<const std::string_view> causal_names();

}  // namespace attnspec
