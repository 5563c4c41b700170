// Uses the installed library: rounds the seed's two-key example (shared/
// seeds/003) and prints its weights, which the test script checks.
#include <attnspec/attnspec.hpp>
#include <cstdio>

int main() {
  attnspec::Problem p;
  p.dims.kv_len = 2;
  p.dims.d_k = 2;
  p.dims.d_v = 2;
  p.q = {1, 2};
  p.k = {1, 0, 0, 1};
  p.v = {1, 0, 0, 1};
  attnspec::ReferenceOptions options;
  options.target = attnspec::FormatId::bfloat16;
  const auto row = attnspec::certified_row(p, {0, 0, 0}, options);
  std::printf("%.6g %.6g\n", row.weights[0], row.weights[1]);
  return 0;
}
