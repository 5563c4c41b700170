// The whole conformance suite, through the GoogleTest integration, for
// every built-in kernel: test names are Kernel.CLAUSE.
#include "adapters/naive/naive_kernel.hpp"
#include "adapters/online/online_kernel.hpp"
#include "properties/gtest_suite.hpp"

ATTNSPEC_CONFORMANCE_SUITE(naive_f64, attnspec::make_naive_f64);
ATTNSPEC_CONFORMANCE_SUITE(naive_f32, attnspec::make_naive_f32);
ATTNSPEC_CONFORMANCE_SUITE(online_f32, attnspec::make_online_f32);
ATTNSPEC_CONFORMANCE_SUITE(online_f32_splitkv, attnspec::make_online_f32_splitkv);
ATTNSPEC_CONFORMANCE_SUITE(online_bf16, attnspec::make_online_bf16);
ATTNSPEC_CONFORMANCE_SUITE(online_f16, attnspec::make_online_f16);
ATTNSPEC_CONFORMANCE_SUITE(online_fp8, attnspec::make_online_fp8);
