// Reading and writing NumPy .npy arrays (format versions 1, 2 and 3), the
// array container of attnspec-case/1. Only what cases and kernel outputs
// use: little-endian float64, float32, float16 and bool, C order.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace attnspec {

enum class NpyDtype { float64, float32, float16, boolean };

struct NpyArray {
  NpyDtype dtype = NpyDtype::float64;
  std::vector<std::size_t> shape;
  std::vector<double> values;  // bool arrays hold 0.0 and 1.0
};

std::string_view npy_descr(NpyDtype dtype);  // "<f8", "<f4", "<f2", "|b1"

// Throws InputError naming the file on any malformed content.
NpyArray read_npy(const std::filesystem::path& path);

// Encodes a version 1.0 file in memory (values converted to dtype: float32
// and float16 values must be representable, bool values 0 or 1).
std::string encode_npy(const NpyArray& array);

// Writes through a temporary file and a rename, so a reader never sees a
// half-written file.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);
void write_npy(const std::filesystem::path& path, const NpyArray& array);

}  // namespace attnspec
