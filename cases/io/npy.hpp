// Reading and writing NumPy .npy arrays (format versions 1, 2 and 3), the
// array container of attnspec-case/1. Only what cases and kernel outputs
// use: little-endian float64, float32, float16 and bool, C order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cases/io/input_file.hpp"
#include "reference/problem.hpp"

namespace attnspec {

enum class NpyDtype { float64, float32, float16, boolean };

struct NpyArray {
  NpyDtype dtype = NpyDtype::float64;
  std::vector<std::size_t> shape;
  std::vector<double> values;  // bool arrays hold 0.0 and 1.0
};

std::string_view npy_descr(NpyDtype dtype);  // "<f8", "<f4", "<f2", "|b1"

inline constexpr std::size_t kMaxNpyHeaderBytes = 1 << 20;
inline constexpr std::size_t kMaxNpyDimensions = 32;

struct NpyReadOptions {
  // The most elements the array may hold (its shape's product); the file
  // must then hold exactly the bytes its header promises, so nothing is
  // read or allocated past that. The default is the problem tensors' limit.
  std::uint64_t max_elements = kMaxTensorElements;
  std::string limit_reason = "2^28 elements, spec/SPEC.md section 4";
  // Where the caller knows the shape: a different one is an error named
  // field 'shape', found before the data is read.
  std::optional<std::vector<std::size_t>> shape;
  Deadline deadline;  // for an adapter's outputs: read within the case timeout
};

// Reads a regular file only (cases/io/input_file.hpp). Throws InputError
// naming the file on any malformed content.
NpyArray read_npy(const std::filesystem::path& path, const NpyReadOptions& options = {});

// Encodes a version 1.0 file in memory (values converted to dtype: float32
// and float16 values must be representable, bool values 0 or 1).
std::string encode_npy(const NpyArray& array);

// Writes through a temporary file and a rename, so a reader never sees a
// half-written file.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);
void write_npy(const std::filesystem::path& path, const NpyArray& array);

}  // namespace attnspec
