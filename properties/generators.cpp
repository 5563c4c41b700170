// Problem generators. Every roll is drawn at RapidCheck's nominal size, so
// the whole range is reached from the first case (RapidCheck's size would
// otherwise scale every range down for most of a run), and every roll
// shrinks towards its first value: the smallest shape, the feature off.
// Shape classes (spec/SPEC.md section 7.1): small problems; tile-sized ones
// whose lengths sit just below, at and above the 64-, 128- and 256-row and
// key tiles real kernels use, or are odd, with head dimensions from those
// kernels' specialisations; and, where the profile asks for it, long rows
// of keys with few queries. A drawn problem is one RapidCheck draw that
// shrinks by cuts first (properties/cuts.hpp), so that its shape keeps
// shrinking after its values have.
#include "properties/generators.hpp"

#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>

#include "properties/cuts.hpp"

namespace attnspec {

int draw_in(int low, int high) {
  const auto uniform = [](int a, int b) {
    return static_cast<int>(*rc::gen::resize(rc::kNominalSize, rc::gen::inRange<std::int64_t>(a, std::int64_t{b} + 1)));
  };
  if (low >= 0) return uniform(low, high);
  const int magnitude = uniform(0, std::max(-low, high));
  const bool negative = high <= 0 || uniform(0, 1) == 1;
  return std::clamp(negative ? -magnitude : magnitude, low, high);
}

namespace {

// One of `choices`, shrinking towards the first.
template <std::size_t N>
int pick(const std::array<int, N>& choices) {
  return choices[static_cast<std::size_t>(draw_in(0, static_cast<int>(N) - 1))];
}

// Lengths around the tiles of real kernels (64 and 128 query rows, 64 to
// 176 keys; FlashAttention's tests add 113 and 203), smallest first.
constexpr std::array kTileLengths = {63, 64, 65, 113, 127, 128, 129, 203, 255, 256, 257};
// Head dimensions real kernels specialise for (FlashAttention: 32 to 256;
// its tests add 59 and 111), smallest first.
constexpr std::array kHeadDims = {32, 59, 64, 80, 96, 111, 128, 160, 192, 256};
constexpr std::array kSmallHeadDims = {1, 2, 3, 4, 5, 8, 16};
constexpr std::array kSmallValueDims = {1, 2, 3, 4, 7, 8};

// A tile-class length: small (1 in 4), any of 9-257 (1 in 4), or at a tile
// boundary (1 in 2). Shrinks from the boundaries to any length (towards 9),
// then to a small one; all three are drawn, for the reason given at
// draw_dims.
int draw_tile_length() {
  const int kind = draw_in(0, 3);
  const int small = draw_in(1, 8), any = draw_in(9, 257), boundary = pick(kTileLengths);
  return kind == 0 ? small : kind == 1 ? any : boundary;
}

double draw_value(IntegerSource& source, FormatId format, Distribution distribution) {
  const auto in = [&](int low, int high) { return source.in(low, high); };
  double x = 0;
  switch (distribution) {
    case Distribution::small_integers:
      x = std::ldexp(in(-8, 8), in(-2, 1));
      break;
    case Distribution::uniform:
      x = in(-128, 128) / 64.0;
      break;
    case Distribution::normal:
    case Distribution::near_ties:
      x = (in(-64, 64) + in(-64, 64) + in(-64, 64)) / 64.0;
      break;
    case Distribution::large:
      x = std::ldexp(in(-8, 8), in(0, 3));
      break;
    case Distribution::full_precision:
      // 62 random bits in [-2, 2): every significand bit of the input
      // format is used once rounded (float64 included).
      x = std::ldexp(in(-(1 << 30), (1 << 30) - 1), -29) + std::ldexp(in(0, (1 << 30) - 1), -59);
      break;
    case Distribution::outliers:
      x = (in(-64, 64) + in(-64, 64) + in(-64, 64)) / 64.0;
      if (in(0, 1000) == 1000) x += (in(-64, 64) + in(-64, 64) + in(-64, 64)) / 6.4;
      break;
  }
  return round_to_format(x, format);
}

}  // namespace

IntegerSource::IntegerSource(std::size_t draws) : seeded_(draws > kShrinkableDraws) {
  if (seeded_) state_ = static_cast<std::uint64_t>(draw_in(0, std::numeric_limits<int>::max()));
}

int IntegerSource::in(int low, int high) {
  if (!seeded_) return draw_in(low, high);
  const auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(high) - low + 1);
  return static_cast<int>(low + static_cast<std::int64_t>(next() % span));
}

std::uint64_t IntegerSource::next() {  // splitmix64
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Features no_features() {
  Features f;
  f.bool_mask = f.additive_mask = f.causal = f.window = f.alibi = f.sinks = f.descales = f.softcap = f.explicit_scale =
      false;
  f.gqa = f.dv_ne_dk = f.fully_masked_rows = false;
  return f;
}

Dims draw_dims(const Capabilities& caps, const Profile& profile, const Features& features) {
  // Every alternative is drawn and one is chosen, so the draws keep their
  // positions whichever way a roll shrinks: RapidCheck replays a shrunk
  // case's draws by position, and a branch that draws fewer would hand the
  // later draws (and the values) other numbers, losing the failure.
  Dims d;
  // 0-3 small, 4-8 tile-sized, 9 long rows where the profile has them.
  const int roll = draw_in(0, 9);
  const bool long_allowed = profile.long_sequences && features.long_sequences;
  const ShapeClass shape = roll < 4 ? ShapeClass::small : roll < 9 || !long_allowed ? ShapeClass::tile : ShapeClass::long_rows;
  const int group = std::array{1, 2, 3, 4, 8}[static_cast<std::size_t>(draw_in(0, 4))];
  d.kv_heads = draw_in(1, 2);
  d.q_heads = d.kv_heads * (features.gqa && caps.gqa ? group : 1);
  const int small_batch = draw_in(1, 2), small_rows = draw_in(1, 8), small_keys = draw_in(1, 8);
  const int tile_rows = draw_tile_length(), tile_keys = draw_tile_length();
  const int long_rows = draw_in(1, 3), long_keys = draw_in(4096, 4200);
  switch (shape) {
    case ShapeClass::small:
      d.batch = small_batch;
      d.q_len = small_rows;
      d.kv_len = small_keys;
      break;
    case ShapeClass::tile:
      d.batch = 1;  // the tile dimensions make it large enough
      d.q_len = tile_rows;
      d.kv_len = tile_keys;
      break;
    case ShapeClass::long_rows:
      d.batch = 1;
      d.q_len = long_rows;
      d.kv_len = long_keys;
      break;
  }
  const bool wide_keys = draw_in(0, 1) == 1 && shape != ShapeClass::small;
  const int wide_key_dim = pick(kHeadDims), small_key_dim = pick(kSmallHeadDims);
  d.d_k = wide_keys ? wide_key_dim : small_key_dim;
  const bool own_value_dim = draw_in(0, 1) == 1 && features.dv_ne_dk && caps.dv_ne_dk;
  const bool wide_values = draw_in(0, 1) == 1 && shape != ShapeClass::small;
  const int wide_value_dim = pick(kHeadDims), small_value_dim = pick(kSmallValueDims);
  d.d_v = !own_value_dim ? d.d_k : wide_values ? wide_value_dim : small_value_dim;
  // A tile-sized or long case keeps its lengths and head dimensions (they
  // are what it is for) but not every head: past kCaseWork multiply-adds
  // (B Hq L S (d_k + d_v)) query heads go, then kv heads. Few kernels
  // specialise on the head count, and the cost of a case would otherwise
  // grow a hundredfold between a typical and the largest draw.
  constexpr double kCaseWork = 1 << 23;
  const auto work = [&] { return static_cast<double>(d.batch) * d.q_heads * d.q_len * d.kv_len * (d.d_k + d.d_v); };
  while (work() > kCaseWork && d.q_heads > 1) {
    if (d.q_heads > d.kv_heads) d.q_heads -= d.kv_heads;  // a smaller group
    else d.q_heads = d.kv_heads = d.kv_heads - 1;
  }
  // A kernel that takes S >= L only: the two lengths swapped, so both
  // classes' lengths are still reached.
  if (caps.kv_len_at_least_q_len && d.kv_len < d.q_len) std::swap(d.kv_len, d.q_len);
  fit_to_limit(d, caps.max_elements);
  if (caps.kv_len_at_least_q_len) d.q_len = std::min(d.q_len, d.kv_len);  // fit_to_limit halves keys first
  return d;
}

void fit_to_limit(Dims& d, std::size_t max_elements) {
  // Within the kernel's declared size (B Hq L S logits): fewer keys, then
  // fewer rows, batch entries and heads.
  const auto logits = [&] { return static_cast<std::size_t>(d.batch) * d.q_heads * d.q_len * d.kv_len; };
  while (logits() > max_elements && d.kv_len > 1) d.kv_len = std::max(1, d.kv_len / 2);
  while (logits() > max_elements && d.q_len > 1) d.q_len = std::max(1, d.q_len / 2);
  while (logits() > max_elements && d.batch > 1) --d.batch;
  while (logits() > max_elements && d.q_heads > 1) {
    d.q_heads = d.q_heads > d.kv_heads ? d.q_heads - d.kv_heads : d.q_heads - 1;
    d.kv_heads = std::min(d.kv_heads, d.q_heads);
    while (d.q_heads % d.kv_heads != 0) --d.kv_heads;
  }
}

Distribution draw_distribution() {
  // Full-precision values twice as often as each other law: they are what
  // tells a kernel that narrows its inputs from one that does not.
  constexpr std::array kLaws = {Distribution::small_integers, Distribution::full_precision, Distribution::uniform,
                                Distribution::normal,         Distribution::full_precision, Distribution::large,
                                Distribution::outliers,       Distribution::near_ties};
  return kLaws[static_cast<std::size_t>(draw_in(0, static_cast<int>(kLaws.size()) - 1))];
}

std::vector<double> draw_values(std::size_t count, FormatId format, Distribution distribution) {
  IntegerSource source(count);
  std::vector<double> values(count);
  for (double& x : values) x = draw_value(source, format, distribution);
  return values;
}

namespace {

// The mask's rolls, drawn before the tensors so that a shrink of the shape
// (which changes how many values the tensors draw) leaves them in place.
struct MaskPlan {
  int kind = 0;  // none, bool, additive
  bool full_shape = false;
  bool padding = false;
  int padded = 0;  // first padded key, when padding
};

MaskPlan draw_mask_plan(const Dims& d, const Capabilities& caps, const Features& features) {
  MaskPlan plan;
  const bool can_bool = features.bool_mask && caps.bool_mask;
  const bool can_additive = features.additive_mask && caps.additive_mask;
  plan.kind = draw_in(0, 2);
  if ((plan.kind == 1 && !can_bool) || (plan.kind == 2 && !can_additive)) plan.kind = 0;
  if (plan.kind == 0) return plan;
  plan.full_shape = draw_in(0, 1) == 1;
  plan.padding = draw_in(0, 1) == 1;
  plan.padded = plan.padding ? draw_in(0, d.kv_len - 1) : d.kv_len;
  return plan;
}

void fill_mask(Problem& p, const MaskPlan& plan, const Features& features) {
  if (plan.kind == 0) return;
  p.mask_kind = plan.kind == 1 ? MaskKind::boolean : MaskKind::additive;
  p.mask_batch = plan.full_shape ? p.dims.batch : 1;
  p.mask_heads = plan.full_shape ? p.dims.q_heads : 1;
  const std::size_t rows = static_cast<std::size_t>(p.mask_batch) * p.mask_heads * p.dims.q_len;
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  p.mask.assign(rows * S, plan.kind == 1 ? 1.0 : 0.0);
  const auto padded = static_cast<std::size_t>(plan.padded);
  IntegerSource source(rows * S);
  for (std::size_t row = 0; row < rows; ++row) {
    const bool fully_masked = features.fully_masked_rows && source.in(0, 7) == 7;
    for (std::size_t j = 0; j < S; ++j) {
      const bool blocked = fully_masked || j >= padded || (!plan.padding && source.in(0, 3) == 3);
      double& m = p.mask[row * S + j];
      if (plan.kind == 1) m = blocked ? 0.0 : 1.0;
      else m = blocked ? -INFINITY : std::ldexp(source.in(-8, 8), source.in(-3, 0));
    }
  }
}

}  // namespace

std::optional<Window> draw_window(const Dims& d, const Capabilities& caps) {
  if (!caps.window_top_left && !caps.window_bottom_right) return std::nullopt;
  Window window;
  const bool top_left = caps.window_top_left && (!caps.window_bottom_right || draw_in(0, 1) == 1);
  window.alignment = top_left ? Alignment::top_left : Alignment::bottom_right;
  // Both sides draw every alternative, as draw_dims does, so the draws
  // keep their positions when a roll shrinks. Up to S + 1: past S - 1 a
  // bounded side blocks nothing more, and S + 1 checks that it blocks
  // nothing.
  const auto side = [&]() -> std::optional<int> {
    const int kind = draw_in(0, 2);
    const int small = draw_in(0, 8), any = draw_in(0, d.kv_len + 1);
    if (kind == 0) return std::nullopt;
    return kind == 1 ? small : any;
  };
  window.left = side();
  window.right = side();
  if (caps.causal_windows_only) window.right = 0;  // drawn all the same, so later draws keep their places
  return window;
}

std::optional<Alibi> draw_alibi(const Dims& d, const Capabilities& caps) {
  if (!caps.alibi_top_left && !caps.alibi_bottom_right) return std::nullopt;
  Alibi alibi;
  const bool top_left = caps.alibi_top_left && (!caps.alibi_bottom_right || draw_in(0, 1) == 1);
  alibi.alignment = top_left ? Alignment::top_left : Alignment::bottom_right;
  alibi.per_batch = draw_in(0, 1) == 1;
  const bool paper = draw_in(0, 1) == 1 || caps.alibi_paper_slopes_only;  // drawn all the same
  const std::vector<double> paper_slopes = alibi_paper_slopes(d.q_heads);
  // One draw whatever the shape (a draw per head would move every later
  // draw when shrinking takes a head away): k/16 for the first slope, the
  // next ones k + 1, k + 2, ... (mod 17) sixteenths.
  const int small = draw_in(0, 16);
  const int count = (alibi.per_batch ? d.batch : 1) * d.q_heads;
  for (int i = 0; i < count; ++i) {
    alibi.slopes.push_back(paper ? paper_slopes[static_cast<std::size_t>(i % d.q_heads)] : ((small + i) % 17) / 16.0);
  }
  return alibi;
}

std::vector<double> draw_sinks(const Dims& d) {
  // A fixed number of draws whatever the shape (as draw_alibi): the kind,
  // then a base and a step per head in quarters, a large exponent and
  // full-precision bits.
  const int kind = draw_in(0, 3);
  const int base = draw_in(-16, 16), step = draw_in(-4, 4), large = draw_in(5, 12);
  const int bits = draw_in(0, (1 << 24) - 1);
  std::vector<double> sinks;
  for (int h = 0; h < d.q_heads; ++h) {
    const double quarter = (base + step * h) / 4.0;
    switch (kind) {
      case 0: sinks.push_back(quarter); break;
      case 1: sinks.push_back(h % 2 == 0 ? -INFINITY : quarter); break;  // -inf: no sink for that head
      case 2: sinks.push_back(std::ldexp(1.0, large) + h); break;       // outweighs every key
      default:  // 24 bits in [-4, 4), a different rotation per head
        sinks.push_back(std::ldexp(static_cast<double>((bits + h * 0x9e3779) % (1 << 24)), -21) - 4);
        break;
    }
    sinks.back() = round_to_format(sinks.back(), FormatId::float32);
  }
  return sinks;
}

Descales draw_descales(const Dims& d) {
  // A fixed number of draws whatever the shape: the kind, an exponent, a
  // step, and full-precision bits.
  const int kind = draw_in(0, 2);
  const int exponent = draw_in(-4, 4), step = draw_in(-2, 2);
  const int bits = draw_in(0, (1 << 24) - 1);
  Descales descales;
  int entry = 0;  // over (tensor, b, g): every factor its own
  const auto factor = [&] {
    const int e = exponent + step * (entry % 5) - 2 * step;
    // 24 bits, a different rotation per entry.
    const double fraction = static_cast<double>((bits + entry * 0x9e3779) % (1 << 24)) / (1 << 24);
    ++entry;
    switch (kind) {
      case 0: return std::ldexp(1.0, std::clamp(e, -4, 4));
      case 1: return round_to_format(std::ldexp(1 + fraction, -9 + (e + 8) % 7), FormatId::float32);
      default: return round_to_format(std::ldexp(1 + fraction, -1 + (e + 8) % 2), FormatId::float32);
    }
  };
  for (std::vector<double>* tensor : {&descales.q, &descales.k, &descales.v})
    for (int i = 0; i < d.batch * d.kv_heads; ++i) tensor->push_back(factor());
  return descales;
}

void draw_mask(Problem& p, const Capabilities& caps, const Features& features) {
  fill_mask(p, draw_mask_plan(p.dims, caps, features), features);
}

namespace {

// The whole problem, drawn roll by roll (the recipe problem_generator
// shrinks).
Problem draw_whole_problem(const Capabilities& caps, FormatId format, const Profile& profile,
                           const Features& features, const std::function<void(Dims&)>& adjust) {
  Problem p;
  p.dims = draw_dims(caps, profile, features);
  if (adjust) adjust(p.dims);
  // Every roll before the tensors: shrinking the shape changes how many
  // draws the tensors take, and rolls drawn after them would move.
  const Distribution distribution = draw_distribution();
  const MaskPlan mask = draw_mask_plan(p.dims, caps, features);
  // A causal_only kernel's problems are all causal; the roll is drawn all
  // the same, so later draws keep their places.
  if (features.causal && (caps.causal_top_left || caps.causal_bottom_right) &&
      (draw_in(0, 2) == 2 || caps.causal_only))
    p.causal = caps.causal_top_left && (!caps.causal_bottom_right || draw_in(0, 1) == 1) ? Causal::top_left
                                                                                          : Causal::bottom_right;
  if (features.window && (caps.window_top_left || caps.window_bottom_right) &&
      (features.always_window || draw_in(0, 3) == 3))
    p.window = draw_window(p.dims, caps);
  if (features.alibi && (caps.alibi_top_left || caps.alibi_bottom_right) && (features.always_alibi || draw_in(0, 3) == 3))
    p.alibi = draw_alibi(p.dims, caps);
  if (features.explicit_scale && caps.explicit_scale && draw_in(0, 2) == 2)
    p.scale = std::ldexp(draw_in(1, 8), draw_in(-4, 0));
  if (features.softcap && caps.softcap && draw_in(0, 3) == 3) p.softcap = draw_in(1, 30);
  if (features.sinks && caps.sinks && (features.always_sinks || draw_in(0, 3) == 3)) p.sinks = draw_sinks(p.dims);
  // Not for float64 inputs: their products with float32 factors are not
  // binary64 numbers (SPEC 2.4).
  if (features.descales && !features.backward && caps.descales && format_info(format).precision <= 29 &&
      (features.always_descales || draw_in(0, 3) == 3))
    p.descales = draw_descales(p.dims);
  const Dims& d = p.dims;
  const auto B = static_cast<std::size_t>(d.batch), S = static_cast<std::size_t>(d.kv_len);
  p.q = draw_values(p.rows() * d.d_k, format, distribution);
  if (distribution == Distribution::near_ties) {
    // Few distinct keys, each repeated and nudged: logits that nearly tie.
    const std::vector<double> base = draw_values(2 * static_cast<std::size_t>(d.d_k), format, Distribution::small_integers);
    p.k.resize(B * d.kv_heads * S * d.d_k);
    IntegerSource source(p.k.size());
    for (std::size_t i = 0; i < p.k.size(); ++i) {
      const std::size_t key = i / d.d_k, t = i % d.d_k;
      p.k[i] = round_to_format(base[(key % 2) * d.d_k + t] + std::ldexp(source.in(-1, 1), -10), format);
    }
  } else {
    p.k = draw_values(B * d.kv_heads * S * d.d_k, format, distribution);
  }
  p.v = draw_values(B * d.kv_heads * S * d.d_v, format, distribution);
  if (features.backward) p.dout = draw_values(p.rows() * d.d_v, format, distribution);
  fill_mask(p, mask, features);
  return p;
}

// Which cuts a property's problem may take: those whose problem it could
// have drawn, with d_k and d_v cut together where the kernel needs them
// equal.
struct CutRules {
  HeadDims head_dims = HeadDims::apart;
  std::function<bool(const Cut& cut, const Dims& whole)> admissible;
};

// A drawn problem seen through a cut. Its shrinks: smaller cuts of the
// same drawn problem first (they keep its values, so they work however far
// the values have shrunk, and they make every later candidate cheaper),
// then the recipe's own shrinks seen through the same cut (simpler values,
// other shapes).
rc::Shrinkable<Problem> through_cut(const rc::Shrinkable<Problem>& drawn, const Cut& cut,
                                    const std::shared_ptr<const CutRules>& rules) {
  return rc::shrinkable::shrink(
      [drawn, cut] { return cut_problem(drawn.value(), cut); },
      [drawn, cut, rules](Problem&&) {
        const Problem whole = drawn.value();
        std::vector<Cut> cuts;
        for (const Cut& smaller : smaller_cuts(cut, whole, rules->head_dims))
          if (rules->admissible(smaller, whole.dims)) cuts.push_back(smaller);
        return rc::seq::concat(
            rc::seq::map(rc::seq::fromContainer(std::move(cuts)),
                         [drawn, rules](const Cut& smaller) { return through_cut(drawn, smaller, rules); }),
            rc::seq::map(drawn.shrinks(),
                         [cut, rules](rc::Shrinkable<Problem>&& s) { return through_cut(s, cut, rules); }));
      });
}

rc::Gen<Problem> problem_generator(const Capabilities& caps, FormatId format, const Profile& profile,
                                   const Features& features, const std::function<void(Dims&)>& adjust) {
  const auto draw = rc::gen::exec([=] { return draw_whole_problem(caps, format, profile, features, adjust); });
  auto rules = std::make_shared<CutRules>();
  rules->head_dims = features.dv_ne_dk && caps.dv_ne_dk ? HeadDims::apart : HeadDims::together;
  // A cut is one the property could have drawn when `adjust` leaves its
  // shape as it is (BATCH's B >= 2, LINV's d_v = S, ...; `adjust` must not
  // draw, since cuts are judged outside any generation) and it keeps the
  // features every problem of the property has.
  rules->admissible = [adjust, features, keys_cover_rows = caps.kv_len_at_least_q_len](const Cut& cut, const Dims& whole) {
    const Dims d = cut_dims(cut, whole);
    Dims adjusted = d;
    if (adjust) adjust(adjusted);
    return adjusted == d && (!keys_cover_rows || d.kv_len >= d.q_len) && (cut.window || !features.always_window) && (cut.alibi || !features.always_alibi) &&
           (cut.sinks || !features.always_sinks) && (cut.descales || !features.always_descales);
  };
  return rc::Gen<Problem>([draw, rules = std::shared_ptr<const CutRules>(rules)](const rc::Random& random, int size) {
    return through_cut(draw(random, size), Cut{}, rules);
  });
}

}  // namespace

Problem draw_problem(const Kernel& kernel, const Profile& profile, const Features& features,
                     const std::function<void(Dims&)>& adjust) {
  return *problem_generator(kernel.capabilities(), kernel.formats().input, profile, features, adjust);
}

std::vector<int> draw_permutation(int n) {
  const auto keys = *rc::gen::container<std::vector<int>>(static_cast<std::size_t>(n), rc::gen::inRange(0, 4 * n));
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[static_cast<std::size_t>(a)] < keys[static_cast<std::size_t>(b)]; });
  return order;
}

std::vector<double> permute_blocks(const std::vector<double>& from, std::size_t count, std::size_t width,
                                   const std::vector<int>& order) {
  std::vector<double> to(from.size());
  for (std::size_t group = 0; group < from.size() / (count * width); ++group)
    for (std::size_t i = 0; i < count; ++i)
      std::copy_n(from.begin() + static_cast<std::ptrdiff_t>((group * count + static_cast<std::size_t>(order[i])) * width),
                  width, to.begin() + static_cast<std::ptrdiff_t>((group * count + i) * width));
  return to;
}

}  // namespace attnspec
