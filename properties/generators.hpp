// RapidCheck generators of attention problems: shapes first (so shrinking
// reduces shapes before values), then tensors, masks and options, limited
// to what the kernel declares it supports. Values are built from integers
// (k * 2^e and friends) so that failures shrink to simple numbers. These
// functions draw with `*gen` and so must be called inside a property body.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "adapters/kernel.hpp"
#include "properties/property.hpp"
#include "reference/problem.hpp"

namespace attnspec {

enum class Distribution {
  small_integers,  // k * 2^e, k in [-8, 8], e in [-2, 1]
  uniform,         // k / 64, k in [-128, 128]
  normal,          // a sum of three uniforms: about N(0, 1)
  large,           // k * 2^e with e up to 3: logits in the hundreds
  outliers,        // FlashAttention-3: normal plus, rarely, N(0, 100)
  near_ties,       // few distinct keys, perturbed by 2^-10
  full_precision,  // 62 random bits in [-2, 2), rounded to the input format: all its significand bits used
};

// An integer in [low, high], uniform whatever RapidCheck's size (every
// range is reached from the first case), shrinking towards 0 (towards
// `low` when low > 0). Every optional feature is switched on by a roll's
// largest value, so shrinking the roll switches it off.
int draw_in(int low, int high);

// Where the integers behind a tensor (or a mask, or a rewrite of blocked
// keys) come from. Up to kShrinkableDraws of them are RapidCheck draws, so
// a small counterexample shrinks value by value to simple numbers; more
// come from one drawn seed through a fast generator, because a RapidCheck
// draw costs about a microsecond and a tile-sized case holds hundreds of
// thousands of values (once shrinking makes the shape small, its values
// are RapidCheck's again).
inline constexpr std::size_t kShrinkableDraws = 4096;

class IntegerSource {
 public:
  // `draws`: how many integers the caller will take (or their order of
  // magnitude): it decides between the two sources.
  explicit IntegerSource(std::size_t draws);
  // As draw_in: uniform in [low, high].
  int in(int low, int high);

 private:
  std::uint64_t next();
  bool seeded_;
  std::uint64_t state_ = 0;
};

// Which features a generated problem may use; each is further limited to
// what the kernel's capabilities allow.
struct Features {
  bool bool_mask = true;
  bool additive_mask = true;
  bool causal = true;
  bool window = true;  // sliding windows
  bool alibi = true;   // ALiBi biases
  bool sinks = true;   // attention sinks
  bool descales = true;  // descale factors (fp8 kernels' q, k, v scales)
  // Every problem gets one (WINDOW, ALIBI, SINK): drawn in its place among
  // the options, before the tensors, so that shrinking keeps it.
  bool always_window = false;
  bool always_alibi = false;
  bool always_sinks = false;
  bool always_descales = false;
  bool softcap = true;
  bool explicit_scale = true;
  bool gqa = true;
  bool dv_ne_dk = true;
  bool fully_masked_rows = true;
  bool long_sequences = true;  // the long-rows class in profiles that allow it
  // dO for the backward pass (the gradient clauses), drawn after the other
  // tensors with their law; such problems have no descale factors, which
  // the backward does not take (SPEC 2.6).
  bool backward = false;
};

Features no_features();  // everything off: plain unmasked attention

Dims draw_dims(const Capabilities& caps, const Profile& profile, const Features& features);
// Shrinks d until B Hq L S <= max_elements: keys, then rows, batch, heads.
void fit_to_limit(Dims& d, std::size_t max_elements);
Distribution draw_distribution();
std::vector<double> draw_values(std::size_t count, FormatId format, Distribution distribution);
// A complete problem: shape, tensors, then mask, causal, window, ALiBi,
// scale, softcap and sinks. It is one RapidCheck draw, which shrinks by cutting
// (properties/cuts.hpp: fewer entries, heads, rows, keys, components,
// the values kept) before its rolls shrink, and whose shape keeps
// shrinking after its values have.
// `adjust` may change the shape before the tensors are drawn; it must not
// draw, and cut shapes it would change are not tried.
Problem draw_problem(const Kernel& kernel, const Profile& profile, const Features& features,
                     const std::function<void(Dims&)>& adjust = {});
// Adds a mask (bool or additive, as allowed), possibly with fully masked rows.
void draw_mask(Problem& p, const Capabilities& caps, const Features& features);
// A sliding window of an alignment the kernel has, for a problem of shape
// d: each side unbounded (1 in 3), small (0-8), or anywhere up to S + 1;
// nullopt when the kernel has no windows.
std::optional<Window> draw_window(const Dims& d, const Capabilities& caps);
// ALiBi of an alignment the kernel has: per head, or per batch entry and
// head; the slopes of the ALiBi paper (rounded to float32), or
// consecutive sixteenths. nullopt when the kernel has none.
std::optional<Alibi> draw_alibi(const Dims& d, const Capabilities& caps);
// Sink logits for the Hq heads of d (float32 values): quarters near the
// logits, some heads without a sink (-inf), large ones (32 to 4096 and a few more) that
// outweigh every key, or full-precision float32 values.
std::vector<double> draw_sinks(const Dims& d);
// Descale factors per (batch, kv head) for q, k and v (float32 values > 0):
// powers of two, a dequantisation scale amax / 448 of an fp8 tensor
// (full-precision values in [2^-9, 2^-2)), or full-precision values in
// [1/2, 2); q's, k's and v's differ, and so do those of every (b, g).
Descales draw_descales(const Dims& d);
// A random permutation of 0..n-1 that shrinks towards the identity.
std::vector<int> draw_permutation(int n);
// Copies `count` consecutive blocks of `width` values, block i taken from
// block order[i] of each group of `count` in `from` (PERMQ, PERMKV,
// GRADPERM).
std::vector<double> permute_blocks(const std::vector<double>& from, std::size_t count, std::size_t width,
                                   const std::vector<int>& order);

}  // namespace attnspec
