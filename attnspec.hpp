// Everything a downstream project gets from find_package(attnspec) and
// target attnspec::attnspec: number formats, problems, the certified
// reference (forward and gradients) and case files.
#pragma once

#include "cases/io/case_dir.hpp"
#include "cases/io/expected.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"
#include "formats/format.hpp"
#include "formats/round_multiprecision.hpp"
#include "reference/certified.hpp"
#include "reference/gradients.hpp"
#include "reference/problem.hpp"
