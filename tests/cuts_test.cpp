// Cuts (properties/cuts.hpp): a cut problem holds exactly the kept part of
// every tensor, mask, slope table and sink list, at the positions the kept indices
// map to; smaller cuts are smaller and end at the one-element problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "properties/cuts.hpp"

namespace attnspec {
namespace {

// Every value distinct, so that a value read from the wrong place shows.
Problem numbered_problem() {
  Problem p;
  p.dims = Dims{2, 4, 2, 5, 6, 3, 2};
  const auto fill = [](std::vector<double>& v, std::size_t n, double base) {
    for (std::size_t i = 0; i < n; ++i) v.push_back(base + static_cast<double>(i));
  };
  fill(p.q, 2 * 4 * 5 * 3, 1000);
  fill(p.k, 2 * 2 * 6 * 3, 2000);
  fill(p.v, 2 * 2 * 6 * 2, 3000);
  p.mask_kind = MaskKind::additive;
  p.mask_batch = 2;
  p.mask_heads = 4;
  for (int i = 0; i < 2 * 4 * 5 * 6; ++i) p.mask.push_back(-i / 4.0);
  Alibi alibi;
  alibi.per_batch = true;
  for (int i = 0; i < 2 * 4; ++i) alibi.slopes.push_back(i / 16.0);
  p.alibi = alibi;
  p.sinks = {0.5, -INFINITY, 1.5, 2.5};
  p.descales = Descales{{1, 2, 4, 8}, {0.5, 0.25, 0.125, 0.0625}, {3, 5, 7, 9}, false};  // [B, Hkv]
  p.causal = Causal::bottom_right;
  p.softcap = 5;
  p.scale = 0.5;
  return p;
}

TEST(Cuts, KeepTheChosenPartOfEveryTensorInPlace) {
  const Problem p = numbered_problem();
  Cut cut;
  cut.batch = {1, 2};
  cut.kv_heads = {1, 2};
  cut.group = {1, 2};  // of query heads 2, 3 (kv head 1), head 3
  cut.rows = {2, 4};
  cut.keys = {1, 5};
  cut.key_dims = {1, 3};
  cut.value_dims = {1, 2};
  const Problem c = cut_problem(p, cut);
  EXPECT_TRUE(validate(c).empty());
  EXPECT_EQ(c.dims, (Dims{1, 1, 1, 2, 4, 2, 1}));
  EXPECT_EQ(c.mask_batch, 1);
  EXPECT_EQ(c.mask_heads, 1);
  EXPECT_EQ(c.causal, p.causal);
  EXPECT_EQ(c.softcap, p.softcap);
  EXPECT_EQ(c.scale, p.scale);
  for (int i = 0; i < 2; ++i) {
    const RowIndex here{0, 0, i}, there{1, 3, i + 2};
    for (int t = 0; t < 2; ++t) EXPECT_EQ(c.query_row(here)[t], p.query_row(there)[t + 1]);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(c.mask_value(here, j), p.mask_value(there, j + 1));
      for (int t = 0; t < 2; ++t) EXPECT_EQ(c.key_row(0, 0, j)[t], p.key_row(1, 1, j + 1)[t + 1]);
      EXPECT_EQ(c.value_row(0, 0, j)[0], p.value_row(1, 1, j + 1)[1]);
    }
  }
  ASSERT_TRUE(c.alibi.has_value());
  EXPECT_EQ(c.alibi->slopes, std::vector<double>{p.alibi->slopes[4 + 3]});
  EXPECT_EQ(c.sinks, std::vector<double>{2.5});  // query head 3's
  ASSERT_TRUE(c.descales.has_value());  // (b, g) = (1, 1)'s
  EXPECT_EQ(c.descales->q, std::vector<double>{8});
  EXPECT_EQ(c.descales->k, std::vector<double>{0.0625});
  EXPECT_EQ(c.descales->v, std::vector<double>{9});
}

TEST(Cuts, DropOptionsOneByOne) {
  const Problem p = numbered_problem();
  Cut cut;
  cut.mask = cut.alibi = cut.sinks = cut.descales = cut.causal = cut.softcap = cut.scale = false;
  const Problem c = cut_problem(p, cut);
  EXPECT_TRUE(validate(c).empty());
  EXPECT_EQ(c.mask_kind, MaskKind::none);
  EXPECT_TRUE(c.mask.empty());
  EXPECT_TRUE(c.sinks.empty());
  EXPECT_FALSE(c.alibi || c.descales || c.softcap || c.scale);
  EXPECT_EQ(c.causal, Causal::none);
  EXPECT_EQ(c.q, p.q);
  EXPECT_EQ(c.k, p.k);
  EXPECT_EQ(c.v, p.v);
}

// The number of elements and options a cut keeps.
long weight(const Cut& cut, const Problem& p) {
  const Dims d = cut_dims(cut, p.dims);
  const Problem c = cut_problem(p, cut);
  const int options = (c.mask_kind != MaskKind::none) + (c.causal != Causal::none) + c.window.has_value() +
                      c.alibi.has_value() + !c.sinks.empty() + c.descales.has_value() + c.softcap.has_value() +
                      c.scale.has_value();
  return static_cast<long>(d.batch) * d.q_heads * d.kv_heads * d.q_len * d.kv_len * d.d_k * d.d_v * 64 + options;
}

TEST(Cuts, SmallerCutsAreSmallerAndEndAtOneElement) {
  const Problem p = numbered_problem();
  Cut cut;
  int steps = 0;
  for (std::vector<Cut> next = smaller_cuts(cut, p); !next.empty(); next = smaller_cuts(cut, p)) {
    for (const Cut& smaller : next) {
      EXPECT_LT(weight(smaller, p), weight(cut, p));
      EXPECT_EQ(std::count(next.begin(), next.end(), smaller), 1);
      EXPECT_TRUE(validate(cut_problem(p, smaller)).empty());
    }
    cut = next.back();  // the slowest path down: one element or option at a time
    ++steps;
  }
  EXPECT_EQ(cut_dims(cut, p.dims), (Dims{1, 1, 1, 1, 1, 1, 1}));
  const Problem last = cut_problem(p, cut);
  EXPECT_FALSE(last.alibi || !last.sinks.empty() || last.descales || last.softcap || last.scale || last.mask_kind != MaskKind::none ||
               last.causal != Causal::none);
  EXPECT_GT(steps, 6);
}

// A head dimension is first tried at one component: most bugs need none
// in particular, and halving a long problem's 256 components took its
// whole shrink budget.
TEST(Cuts, HeadDimensionsAreFirstTriedAtOneComponent) {
  const Problem p = numbered_problem();  // d_k = 3, d_v = 2
  const std::vector<Cut> cuts = smaller_cuts(Cut{}, p);
  ASSERT_FALSE(cuts.empty());
  EXPECT_EQ(cut_dims(cuts.front(), p.dims), (Dims{2, 4, 2, 5, 6, 1, 2}));
  EXPECT_EQ(fit_cut(cuts.front(), p.dims).key_dims, (AxisRange{0, 1}));
  // d_v = 2 has no such cut of its own: its halves are one column each.
  EXPECT_EQ(cut_dims(cuts[1], p.dims).d_v, 2);
}

// For a kernel that needs d_v = d_k, the head dimensions are cut as one.
TEST(Cuts, HeadDimensionsCutTogetherStayEqual) {
  Problem p = numbered_problem();
  p.dims.d_v = p.dims.d_k;
  p.v.assign(2 * 2 * 6 * 3, 1.0);
  bool cut_head_dims = false;
  for (const Cut& smaller : smaller_cuts(Cut{}, p, HeadDims::together)) {
    const Dims d = cut_dims(smaller, p.dims);
    EXPECT_EQ(d.d_k, d.d_v);
    cut_head_dims |= d.d_k < p.dims.d_k;
  }
  EXPECT_TRUE(cut_head_dims);
}

}  // namespace
}  // namespace attnspec
