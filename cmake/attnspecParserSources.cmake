# The sources of attnspec's parsers of untrusted input (case files, expected
# files, .npy, the process protocol) and what they call. One list, used by
# the library (CMakeLists.txt) and by the instrumented fuzz build
# (fuzz/CMakeLists.txt), so that a parser gaining a dependency cannot
# break the fuzz build without breaking the main one first.
set(ATTNSPEC_PARSER_SOURCES
  formats/format.cpp
  formats/round_multiprecision.cpp
  reference/problem.cpp
  reference/layouts.cpp
  reference/merge.cpp
  cases/io/input_error.cpp
  cases/io/input_file.cpp
  cases/io/printable.cpp
  cases/io/strict_json.cpp
  cases/io/npy.cpp
  cases/io/case_dir.cpp
  cases/io/layout_field.cpp
  cases/io/expected.cpp
  adapters/kernel.cpp
  adapters/process/protocol.cpp)
