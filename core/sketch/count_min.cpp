#include "core/sketch/count_min.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

#include "core/sketch/primes.hpp"
#include "core/sketch/random.hpp"
#include "core/platform/simd.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace flowsketch::core {
namespace {

// Copies the 16-byte aligned pairs of counters at first, first + stride, ...
// to `to` with stores that bypass the cache; false where the CPU has none.
bool stream_pairs(std::span<const std::uint64_t> counters, std::size_t first, std::size_t stride,
                  std::uint64_t* to) noexcept {
#if defined(__SSE2__)
    auto* pair = reinterpret_cast<__m128i*>(to);
    for (std::size_t cell = first; cell < counters.size(); cell += stride, ++pair) {
        _mm_stream_si128(pair, _mm_load_si128(reinterpret_cast<const __m128i*>(&counters[cell])));
    }
    _mm_sfence();
    return true;
#else
    (void)counters, (void)first, (void)stride, (void)to;
    return false;
#endif
}

constexpr std::uint64_t mersenne61 = (std::uint64_t{1} << 61) - 1;

// x mod (2^61 − 1) for a 122-bit product, without division.
std::uint64_t mod_mersenne61(UInt128 x) noexcept {
    std::uint64_t r = static_cast<std::uint64_t>(x & mersenne61) +
                      static_cast<std::uint64_t>(x >> 61);
    r = (r & mersenne61) + (r >> 61);
    return r >= mersenne61 ? r - mersenne61 : r;
}

void require_probability(double value, const char* name) {
    if (!(value > 0.0 && value < 1.0)) {
        throw std::invalid_argument(std::string(name) + " must be in (0, 1), got " +
                                    std::to_string(value));
    }
}

}  // namespace

std::string_view variant_name(CountMinVariant variant) noexcept {
    return variant == CountMinVariant::standard ? "standard" : "kirsch-mitzenmacher";
}

std::uint32_t next_prime(std::uint32_t n) {
    if (n <= 2) return 2;
    for (std::uint64_t c = n; c <= std::numeric_limits<std::uint32_t>::max(); ++c) {
        if (is_prime(static_cast<std::uint32_t>(c))) return static_cast<std::uint32_t>(c);
    }
    throw std::invalid_argument("no 32-bit prime at or above " + std::to_string(n));
}

namespace {

// The failure bounds below for a real width (the sizing searches over reals).
double delta_at(CountMinVariant variant, double epsilon, double w, std::uint32_t depth) noexcept {
    if (variant == CountMinVariant::standard) {
        return std::pow(std::min(1.0, 1.0 / (epsilon * w)), depth);
    }
    const double per_row = std::min(1.0, 2.0 / (epsilon * w));
    return std::min(1.0, 2.0 / (epsilon * w * w) + std::pow(per_row, depth));
}

constexpr double max_width = static_cast<double>(std::numeric_limits<std::uint32_t>::max() / 2);

// The smallest (real) width meeting δ at ε with `depth` rows; +∞ when it
// would exceed the largest width accepted.
double width_for(CountMinVariant variant, double epsilon, double delta, std::uint32_t depth) {
    const double per_row = std::pow(delta, 1.0 / depth);
    double w = (variant == CountMinVariant::standard ? 1.0 : 2.0) / (epsilon * per_row);
    // KM's full-collision term 2/(εw²) needs a little more width.
    while (delta_at(variant, epsilon, w, depth) > delta && w <= max_width) w *= 1.001;
    return w <= max_width ? w : std::numeric_limits<double>::infinity();
}

}  // namespace

double kirsch_mitzenmacher_delta(double epsilon, std::uint32_t width, std::uint32_t depth) noexcept {
    return delta_at(CountMinVariant::kirsch_mitzenmacher, epsilon, width, depth);
}

double standard_delta(double epsilon, std::uint32_t width, std::uint32_t depth) noexcept {
    return delta_at(CountMinVariant::standard, epsilon, width, depth);
}

CountMinParams CountMinParams::for_error(double epsilon, double delta, CountMinVariant variant) {
    require_probability(epsilon, "epsilon");
    require_probability(delta, "delta");
    const CountMinParams classic = classic_for_error(epsilon, delta, variant);
    const double budget = 1.25 * static_cast<double>(classic.width) * classic.depth;
    CountMinParams p = classic;
    for (std::uint32_t depth = 1; depth < classic.depth; ++depth) {
        const double real_width = std::ceil(width_for(variant, epsilon, delta, depth));
        if (!(real_width * depth <= budget)) continue;
        auto width = static_cast<std::uint32_t>(real_width);
        if (variant == CountMinVariant::kirsch_mitzenmacher) {
            width = next_prime(width);
            while (kirsch_mitzenmacher_delta(epsilon, width, depth) > delta) width = next_prime(width + 1);
        } else {
            while (standard_delta(epsilon, width, depth) > delta) ++width;
        }
        if (static_cast<double>(width) * depth > budget) continue;  // rounding up overshot
        p.depth = depth;
        p.width = width;
        break;
    }
    p.stated_epsilon = epsilon;
    return p;
}

CountMinParams CountMinParams::classic_for_error(double epsilon, double delta,
                                                  CountMinVariant variant) {
    require_probability(epsilon, "epsilon");
    require_probability(delta, "delta");
    CountMinParams p;
    p.variant = variant;
    p.stated_epsilon = epsilon;
    if (variant == CountMinVariant::standard) {
        p.width = static_cast<std::uint32_t>(std::ceil(std::numbers::e / epsilon));
        p.depth = static_cast<std::uint32_t>(std::ceil(std::log(1.0 / delta)));
        p.depth = std::max<std::uint32_t>(p.depth, 1);
        // Rounding: e/⌈e/ε⌉ ≤ ε, so ⌈ln 1/δ⌉ rows meet δ at ε.
        while (standard_delta(epsilon, p.width, p.depth) > delta && p.depth < max_count_min_depth) {
            ++p.depth;
        }
        return p;
    }
    // w ≥ 2e/ε makes each row's Markov term ≤ 1/e; widen further if the
    // full-collision term 2/(εw²) alone would eat more than half of δ.
    double w = std::ceil(2.0 * std::numbers::e / epsilon);
    while (2.0 / (epsilon * w * w) > delta / 2.0) w *= 1.5;
    if (w > static_cast<double>(std::numeric_limits<std::uint32_t>::max() / 2)) {
        throw std::invalid_argument("epsilon/delta need a sketch wider than 2^31 columns");
    }
    p.width = next_prime(static_cast<std::uint32_t>(w));
    // The depth meets δ at the requested ε (stated_epsilon), not at 2e/w.
    p.depth = 1;
    while (kirsch_mitzenmacher_delta(epsilon, p.width, p.depth) > delta && p.depth < max_count_min_depth) {
        ++p.depth;
    }
    return p;
}

double CountMinParams::epsilon() const noexcept {
    if (stated_epsilon > 0.0) return stated_epsilon;
    if (width == 0) return 1.0;
    const double factor = variant == CountMinVariant::standard ? 1.0 : 2.0;
    return factor * std::numbers::e / width;
}

double CountMinParams::delta() const noexcept {
    if (width == 0) return 1.0;
    if (variant == CountMinVariant::standard) return standard_delta(epsilon(), width, depth);
    return kirsch_mitzenmacher_delta(epsilon(), width, depth);
}

CountMinSketch::CountMinSketch(const CountMinParams& params) : params_(params) {
    if (params.width < 2) throw std::invalid_argument("Count-Min width must be at least 2");
    if (params.depth < 1 || params.depth > max_count_min_depth) {
        throw std::invalid_argument("Count-Min depth must be in 1.." + std::to_string(max_count_min_depth));
    }
    if (params.lanes < 1 || params.lanes > max_count_min_lanes) {
        throw std::invalid_argument("Count-Min lanes must be in 1.." + std::to_string(max_count_min_lanes));
    }
    if (params.variant == CountMinVariant::kirsch_mitzenmacher && !is_prime(params.width)) {
        throw std::invalid_argument("Kirsch-Mitzenmacher Count-Min needs a prime width, got " +
                                    std::to_string(params.width));
    }
    const std::uint64_t cells = std::uint64_t{params.width} * params.depth * params.lanes;
    if (cells > (std::uint64_t{1} << 34)) {
        throw std::invalid_argument("Count-Min sketch too large: " + std::to_string(cells) +
                                    " counters");
    }
    width_reciprocal_ = std::numeric_limits<std::uint64_t>::max() / params.width;
    counters_.assign(static_cast<std::size_t>(cells), 0);
    totals_.assign(params.lanes, 0);
    vector_add4_ = params.lanes == 4 && !params.conservative_update &&
                   simd::level() == simd::Level::avx512;
    vector_columns_ = params.variant == CountMinVariant::kirsch_mitzenmacher && params.depth == 4 &&
                      simd::level() == simd::Level::avx512;
    if (params.variant == CountMinVariant::standard) {
        SplitMix64 rng(params.seed ^ 0x636d732d726f7773ULL);  // "cms-rows"
        for (std::uint32_t row = 0; row < params.depth; ++row) {
            row_a_.push_back(1 + rng.next() % (mersenne61 - 1));
            row_b_.push_back(rng.next() % mersenne61);
        }
    }
}

std::uint32_t CountMinSketch::column(const Hash128& hash, std::uint32_t row) const noexcept {
    const std::uint64_t w = params_.width;
    if (params_.variant == CountMinVariant::standard) {
        const std::uint64_t x = hash.h1 % mersenne61;
        const auto product = static_cast<UInt128>(row_a_[row]) * x + row_b_[row];
        return static_cast<std::uint32_t>(mod_width(mod_mersenne61(product)));
    }
    const std::uint64_t a = mod_width(hash.h1);
    const std::uint64_t b = mod_width(hash.h2);
    return static_cast<std::uint32_t>((a + row * b) % w);
}

void CountMinSketch::columns(const Hash128& hash, std::uint32_t* out) const noexcept {
    const std::uint32_t depth = params_.depth;
    if (params_.variant == CountMinVariant::standard) {
        for (std::uint32_t row = 0; row < depth; ++row) out[row] = column(hash, row);
        return;
    }
    // g_j = h1 + j·h2 mod w, stepped by addition: two divisions per key in all.
    // In 64 bits: the constructor accepts any 32-bit prime width, and for
    // w ≥ 2^31 the sum g + step would wrap in 32 bits.
    const std::uint64_t w = params_.width;
    const std::uint64_t step = mod_width(hash.h2);
    std::uint64_t g = mod_width(hash.h1);
    for (std::uint32_t row = 0; row < depth; ++row) {
        out[row] = static_cast<std::uint32_t>(g);
        g += step;  // both < w < 2^32: no overflow in 64 bits
        if (g >= w) g -= w;
    }
}

void CountMinSketch::columns_of(const std::byte* first, std::size_t stride, std::size_t count,
                                std::uint32_t* out) const noexcept {
    std::size_t done = 0;
    if (vector_columns_) {
        done = count - count % 8;
        simd::count_min_columns4_avx512(first, stride, done, params_.width, width_reciprocal_, out);
    }
    const std::uint32_t depth = params_.depth;
    for (std::size_t i = done; i < count; ++i) {
        // The caller's records hold Hash128 objects at these addresses.
        columns(*reinterpret_cast<const Hash128*>(first + i * stride), out + i * depth);
    }
}

void CountMinSketch::update(const Hash128& hash, std::span<const std::uint64_t> weights) noexcept {
    std::uint32_t cols[max_count_min_depth];
    columns(hash, cols);
    update_at(cols, weights);
}

void CountMinSketch::update_at(const std::uint32_t* cols,
                               std::span<const std::uint64_t> weights) noexcept {
    const std::uint32_t lanes = params_.lanes;
    const std::size_t row_stride = std::size_t{params_.width} * lanes;
    std::uint64_t* base = counters_.data();
    for (std::uint32_t lane = 0; lane < lanes; ++lane) totals_[lane] += weights[lane];

    if (!params_.conservative_update) {
        for (std::uint32_t row = 0; row < params_.depth; ++row) {
            std::uint64_t* cell = base + row * row_stride + std::size_t{cols[row]} * lanes;
            for (std::uint32_t lane = 0; lane < lanes; ++lane) cell[lane] += weights[lane];
        }
        return;
    }
    // Conservative update: raise each counter only as far as the new minimum
    // estimate requires. Keeps estimate ≥ truth and never adds error.
    for (std::uint32_t lane = 0; lane < lanes; ++lane) {
        std::uint64_t minimum = std::numeric_limits<std::uint64_t>::max();
        for (std::uint32_t row = 0; row < params_.depth; ++row) {
            minimum = std::min(minimum,
                               base[row * row_stride + std::size_t{cols[row]} * lanes + lane]);
        }
        const std::uint64_t target = minimum + weights[lane];
        for (std::uint32_t row = 0; row < params_.depth; ++row) {
            std::uint64_t& c = base[row * row_stride + std::size_t{cols[row]} * lanes + lane];
            c = std::max(c, target);
        }
    }
}

void CountMinSketch::update_and_estimate(const Hash128& hash,
                                         std::span<const std::uint64_t> weights,
                                         std::span<std::uint64_t> estimates) noexcept {
    std::uint32_t cols[max_count_min_depth];
    columns(hash, cols);
    update_and_estimate_at(cols, weights, estimates);
}

namespace {

// The plain update with the lane count known at compile time: weights and
// running minima stay in registers (with a run-time lane count they
// round-trip through memory on every row, which made this loop the hottest of
// the per-packet path).
template <std::uint32_t Lanes>
void add_and_minimum(std::uint64_t* counters, std::size_t row_stride, std::uint32_t depth,
                     const std::uint32_t* cols, const std::uint64_t* weights,
                     std::uint64_t* totals, std::uint64_t* estimates) noexcept {
    std::array<std::uint64_t, Lanes> w;
    std::array<std::uint64_t, Lanes> minimum;
#pragma GCC unroll 8
    for (std::uint32_t lane = 0; lane < Lanes; ++lane) {
        w[lane] = weights[lane];
        minimum[lane] = std::numeric_limits<std::uint64_t>::max();
    }
    // The totals from the weights already loaded one by one: a separate loop
    // over `weights` was vectorised into 16-byte loads of the 8-byte stores
    // the caller had just made, and such a load waits for those stores to
    // retire, behind the sketch's cache-missing writes.
#pragma GCC unroll 8
    for (std::uint32_t lane = 0; lane < Lanes; ++lane) totals[lane] += w[lane];
    for (std::uint32_t row = 0; row < depth; ++row) {
        std::uint64_t* cell = counters + row * row_stride + std::size_t{cols[row]} * Lanes;
        // Unrolled (gcc -O2 does not, for 4 lanes): without it the minima
        // round-trip through the stack on every row.
#pragma GCC unroll 8
        for (std::uint32_t lane = 0; lane < Lanes; ++lane) {
            const std::uint64_t value = cell[lane] + w[lane];
            cell[lane] = value;
            minimum[lane] = std::min(minimum[lane], value);
        }
    }
#pragma GCC unroll 8
    for (std::uint32_t lane = 0; lane < Lanes; ++lane) estimates[lane] = minimum[lane];
}

}  // namespace

void CountMinSketch::update_and_estimate_at(const std::uint32_t* cols,
                                            std::span<const std::uint64_t> weights,
                                            std::span<std::uint64_t> estimates) noexcept {
    const std::uint32_t lanes = params_.lanes;
    if (vector_add4_) {  // 4 lanes, plain update: a cell is one 256-bit register
        simd::count_min_add4_avx512(counters_.data(), std::uint64_t{params_.width} * 4,
                                    params_.depth, cols, weights.data(), totals_.data(),
                                    estimates.data());
        return;
    }
    if (params_.conservative_update) {
        update_at(cols, weights);
        for (std::uint32_t lane = 0; lane < lanes; ++lane) estimates[lane] = estimate_at(cols, lane);
        return;
    }
    const std::size_t row_stride = std::size_t{params_.width} * lanes;
    auto add = [&]<std::uint32_t Lanes>() {
        add_and_minimum<Lanes>(counters_.data(), row_stride, params_.depth, cols, weights.data(),
                               totals_.data(), estimates.data());
    };
    static_assert(max_count_min_lanes == 8, "one case per lane count");
    switch (lanes) {  // 1..max_count_min_lanes, checked by the constructor
        case 1: add.template operator()<1>(); break;
        case 2: add.template operator()<2>(); break;
        case 3: add.template operator()<3>(); break;
        case 4: add.template operator()<4>(); break;
        case 5: add.template operator()<5>(); break;
        case 6: add.template operator()<6>(); break;
        case 7: add.template operator()<7>(); break;
        default: add.template operator()<8>(); break;
    }
}

void CountMinSketch::prefetch(const Hash128& hash) const noexcept {
    std::uint32_t cols[max_count_min_depth];
    columns(hash, cols);
    prefetch_at(cols);
}

void CountMinSketch::prefetch_at(const std::uint32_t* cols) const noexcept {
    const std::size_t row_stride = std::size_t{params_.width} * params_.lanes;
    const std::uint64_t* base = counters_.data();
    for (std::uint32_t row = 0; row < params_.depth; ++row) {
        __builtin_prefetch(base + row * row_stride + std::size_t{cols[row]} * params_.lanes, 1, 3);
    }
}

void CountMinSketch::update(const Hash128& hash, std::uint64_t weight) noexcept {
    update(hash, std::span<const std::uint64_t>(&weight, 1));
}

std::uint64_t CountMinSketch::estimate(const Hash128& hash, std::uint32_t lane) const noexcept {
    std::uint32_t cols[max_count_min_depth];
    columns(hash, cols);
    return estimate_at(cols, lane);
}

std::uint64_t CountMinSketch::estimate_at(const std::uint32_t* cols,
                                          std::uint32_t lane) const noexcept {
    const std::uint32_t lanes = params_.lanes;
    const std::size_t row_stride = std::size_t{params_.width} * lanes;
    std::uint64_t minimum = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t row = 0; row < params_.depth; ++row) {
        minimum = std::min(minimum,
                           counters_[row * row_stride + std::size_t{cols[row]} * lanes + lane]);
    }
    return minimum;
}

std::uint64_t CountMinSketch::lower_bound(std::uint64_t estimate, std::uint32_t lane) const noexcept {
    const double slack = params_.epsilon() * static_cast<double>(totals_[lane]);
    const double lower = std::ceil(static_cast<double>(estimate) - slack);
    if (!(lower > 0.0)) return 0;
    // Near 2^64 the double rounds up past every uint64 (converting would be
    // undefined: found by fuzzing deserialised sketches); a lower bound is
    // never above the estimate anyway.
    if (lower >= 0x1p64) return estimate;
    return std::min(estimate, static_cast<std::uint64_t>(lower));
}

void CountMinSketch::merge(const CountMinSketch& other) {
    if (&other == this) throw std::invalid_argument("cannot merge a Count-Min sketch with itself");
    // The stated ε is how the guarantee is worded, not how cells are laid out:
    // a snapshot of format 1 (ε = 0) merges with a sketch built for an ε.
    CountMinParams other_layout = other.params_;
    other_layout.stated_epsilon = params_.stated_epsilon;
    if (!(other_layout == params_)) {
        throw std::invalid_argument(
            "cannot merge Count-Min sketches with different variant, width, depth, lanes, "
            "seed or update rule");
    }
    for (std::size_t i = 0; i < counters_.size(); ++i) counters_[i] += other.counters_[i];
    for (std::size_t i = 0; i < totals_.size(); ++i) totals_[i] += other.totals_[i];
}

void CountMinSketch::accumulate_lane(std::uint32_t from, std::uint32_t to) noexcept {
    const std::uint32_t lanes = params_.lanes;
    for (std::size_t i = 0; i < counters_.size(); i += lanes) counters_[i + to] += counters_[i + from];
    totals_[to] += totals_[from];
}

CountMinSketch CountMinSketch::lanes_of(std::uint32_t first, std::uint32_t count) const {
    if (count == 0 || first + count > params_.lanes) throw std::invalid_argument("Count-Min lanes out of range");
    CountMinParams params = params_;
    params.lanes = count;
    CountMinSketch part(params);
    copy_lanes_to(first, count, part);
    return part;
}

CountMinSketch CountMinSketch::lanes_of(std::uint32_t first, std::uint32_t count, CountMinSketch&& storage) const {
    if (first + count > params_.lanes || !holds_lanes(storage, count)) return lanes_of(first, count);
    // The copy is read by another thread: stores that bypass the cache take no
    // lines from it (nor from that thread's cache, where the storage was last
    // written) and leave this thread's tables in ours.
    copy_lanes(first, count, storage, Stores::bypass_cache);
    return std::move(storage);
}

void CountMinSketch::copy_lanes_to(std::uint32_t first, std::uint32_t count, CountMinSketch& out) const {
    if (first + count > params_.lanes || !holds_lanes(out, count)) {
        throw std::invalid_argument("Count-Min lanes copied into a sketch of other parameters");
    }
    copy_lanes(first, count, out, Stores::cached);
}

// A moved-from sketch keeps its parameters but not its counters.
bool CountMinSketch::holds_lanes(const CountMinSketch& out, std::uint32_t count) const noexcept {
    CountMinParams expected = params_;
    expected.lanes = count;
    return out.params_ == expected && out.counters_.size() == expected.counter_bytes() / sizeof(std::uint64_t) &&
           out.totals_.size() == count;
}

void CountMinSketch::copy_lanes(std::uint32_t first, std::uint32_t count, CountMinSketch& out,
                                Stores stores) const noexcept {
    const std::uint32_t lanes = params_.lanes;
    std::uint64_t* to = out.counters_.data();
    if (count == 2) {  // a window's packets and bytes: one 16-byte move per cell
        const bool aligned = first % 2 == 0 && lanes % 2 == 0;  // 16-byte aligned pairs
        if (!(stores == Stores::bypass_cache && aligned && stream_pairs(counters_, first, lanes, to))) {
            for (std::size_t cell = first; cell < counters_.size(); cell += lanes, to += 2) {
                std::memcpy(to, &counters_[cell], 2 * sizeof(std::uint64_t));
            }
        }
    } else {
        for (std::size_t cell = 0; cell < counters_.size(); cell += lanes) {
            for (std::uint32_t lane = first; lane < first + count; ++lane) *to++ = counters_[cell + lane];
        }
    }
    for (std::uint32_t lane = 0; lane < count; ++lane) out.totals_[lane] = totals_[first + lane];
}

// One pass over the counters however many lanes: a report interval clears two
// of the four, which share every cache line.
void CountMinSketch::clear_lanes(std::uint32_t first, std::uint32_t count) noexcept {
    const std::uint32_t lanes = params_.lanes;
    for (std::size_t cell = 0; cell < counters_.size(); cell += lanes) {
        for (std::uint32_t lane = first; lane < first + count; ++lane) counters_[cell + lane] = 0;
    }
    for (std::uint32_t lane = first; lane < first + count; ++lane) totals_[lane] = 0;
}

void CountMinSketch::clear() noexcept {
    std::fill(counters_.begin(), counters_.end(), 0);
    std::fill(totals_.begin(), totals_.end(), 0);
}

std::size_t CountMinSketch::memory_bytes() const noexcept {
    return sizeof(*this) + counters_.capacity() * sizeof(std::uint64_t) +
           (totals_.capacity() + row_a_.capacity() + row_b_.capacity()) * sizeof(std::uint64_t);
}

}  // namespace flowsketch::core
