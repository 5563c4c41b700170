// Checks of command-line values that CLI11 runs at parse time, before any
// work starts: a seed that is really a 64-bit unsigned integer (CLI11 alone
// turns "-1" and 2^70 into 18446744073709551615), and output paths whose
// directory exists, so a long run cannot end in "cannot write file".
#pragma once

#include <CLI/CLI.hpp>

namespace attnspec::cli {

// Decimal digits only, at most 18446744073709551615.
CLI::Validator unsigned_64();

// A file to be written: its directory exists and is writable, and the path
// itself is not a directory.
CLI::Validator writable_file();

// A directory to be created if missing: the nearest existing ancestor is a
// writable directory, and the path is not an existing file.
CLI::Validator creatable_directory();

}  // namespace attnspec::cli
