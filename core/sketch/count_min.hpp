// Count-Min sketch (Cormode–Muthukrishnan) in two index schemes:
//  - standard: d rows, each with its own pairwise-independent hash of h1
//    (a_j·x + b_j mod 2^61−1, then mod w), w = ⌈e/ε⌉, d = ⌈ln 1/δ⌉;
//  - Kirsch–Mitzenmacher (seed 000, §9): w prime, row j uses
//    g_j(x) = h1 + j·h2 mod w, so one 128-bit hash serves every row.
//
// A cell holds `lanes` 64-bit counters updated together (e.g. packets and
// bytes, or interval and running totals): all lanes of a cell share one cache
// line, so a multi-weight update costs one memory access per row.
//
// Guarantee per lane, with N the lane's total weight: estimate ≥ truth always
// (non-negative weights), and estimate ≤ truth + ε·N with probability ≥ 1 − δ,
// where (ε, δ) are params().epsilon() / params().delta() for the chosen width
// and depth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/platform/cache_aligned.hpp"
#include "core/key/hash.hpp"
#include "core/sketch/random.hpp"  // UInt128

namespace flowsketch::core {

enum class CountMinVariant : std::uint8_t { standard = 0, kirsch_mitzenmacher = 1 };

std::string_view variant_name(CountMinVariant variant) noexcept;

/// Largest depth a sketch accepts (callers size per-key column arrays by it).
inline constexpr std::uint32_t max_count_min_depth = 64;
/// Most 64-bit counters a cell holds (one per lane).
inline constexpr std::uint32_t max_count_min_lanes = 8;

struct CountMinParams {
    CountMinVariant variant = CountMinVariant::kirsch_mitzenmacher;
    std::uint32_t width = 0;
    std::uint32_t depth = 0;
    std::uint32_t lanes = 1;
    std::uint64_t seed = 0;
    bool conservative_update = false;
    /// The ε the guarantee is stated at (for_error sets the one asked for);
    /// 0: the width's own, e/w (standard) or 2e/w (Kirsch–Mitzenmacher).
    double stated_epsilon = 0;

    /// A sketch meeting (epsilon, delta) for the variant, sized for update
    /// speed: the fewest rows whose sketch has at most 25% more cells than
    /// classic_for_error's. Every row is a memory access per update and the
    /// width costs none, so for ε = δ = 0.001 (KM) 4 rows of 11,299 columns
    /// (45k cells) replace 7 rows of 5,437 (38k cells).
    /// Throws std::invalid_argument unless 0 < epsilon < 1 and 0 < delta < 1.
    static CountMinParams for_error(double epsilon, double delta, CountMinVariant variant);
    /// The textbook sizing, near the fewest cells: w = ⌈e/ε⌉, d = ⌈ln 1/δ⌉
    /// (standard); the KM width 2e/ε (widened until 2/(εw²) ≤ δ/2) and the
    /// depth meeting δ there.
    static CountMinParams classic_for_error(double epsilon, double delta, CountMinVariant variant);

    /// The additive error factor of the guarantee: stated_epsilon, or the
    /// width's own (see stated_epsilon).
    double epsilon() const noexcept;
    /// Failure probability achieved by (width, depth) at epsilon():
    /// standard (1/(ε·w))^d (e^{−d} at ε = e/w); Kirsch–Mitzenmacher
    /// 2/(ε·w²) + (2/(ε·w))^d.
    double delta() const noexcept;
    /// The counters' memory, width·depth·lanes 64-bit words (no overflow:
    /// at most 2^32·64·8 words).
    std::uint64_t counter_bytes() const noexcept {
        return std::uint64_t{width} * depth * lanes * sizeof(std::uint64_t);
    }

    friend bool operator==(const CountMinParams&, const CountMinParams&) = default;
};

/// Kirsch–Mitzenmacher failure bound for explicit (epsilon, w, d).
/// Derivation (the seed prints it without ε): keys whose (h1, h2) mod w equal
/// the query's collide in every row, expected weight ≤ N/w², Markov at εN/2
/// gives 2/(εw²); the rest collide in at most one row each, expected ≤ N/w per
/// row, Markov at εN/2 per row and all d rows gives (2/(εw))^d.
double kirsch_mitzenmacher_delta(double epsilon, std::uint32_t width, std::uint32_t depth) noexcept;

/// Standard (pairwise-independent rows) failure bound for explicit (epsilon, w, d):
/// a row's collision weight has expectation ≤ N/w, Markov at εN gives
/// 1/(εw) per row, independent rows (1/(εw))^d.
double standard_delta(double epsilon, std::uint32_t width, std::uint32_t depth) noexcept;

/// x mod w for w ≥ 1 without a division, given reciprocal = ⌊(2^64 − 1)/w⌋.
/// Exact: x·reciprocal/2^64 is the quotient or up to 2 less, so at most two
/// subtractions finish it: a 64-bit division per key is among the slowest
/// instructions on the per-packet path. The two steps are branch-free: a
/// loop's exit would depend on the hash, and so mispredict.
inline std::uint64_t mod_by_reciprocal(std::uint64_t x, std::uint64_t w,
                                       std::uint64_t reciprocal) noexcept {
    const auto q = static_cast<std::uint64_t>((static_cast<UInt128>(x) * reciprocal) >> 64);
    std::uint64_t r = x - q * w;
    r -= w & (std::uint64_t{0} - static_cast<std::uint64_t>(r >= w));
    r -= w & (std::uint64_t{0} - static_cast<std::uint64_t>(r >= w));
    return r;
}

/// Smallest prime ≥ n (n ≥ 2).
std::uint32_t next_prime(std::uint32_t n);

class CountMinSketch {
public:
    /// Throws std::invalid_argument on width < 2, depth < 1, lanes outside 1..8,
    /// a non-prime width for the Kirsch–Mitzenmacher variant, or a size whose
    /// counters would not fit in memory addressing.
    explicit CountMinSketch(const CountMinParams& params);

    const CountMinParams& params() const noexcept { return params_; }

    /// Adds weights[l] to lane l for every lane (weights.size() == lanes).
    void update(const Hash128& hash, std::span<const std::uint64_t> weights) noexcept;
    /// update() that also writes each lane's new point estimate to `estimates`
    /// (same as estimate() after the update, read in the same pass).
    void update_and_estimate(const Hash128& hash, std::span<const std::uint64_t> weights,
                             std::span<std::uint64_t> estimates) noexcept;
    /// Asks the CPU to start loading the cells `hash` maps to (no effect on
    /// results). Issued a few keys ahead in a batch, it hides the cache misses
    /// that dominate the update cost of a sketch larger than the cache.
    void prefetch(const Hash128& hash) const noexcept;

    /// The column of `hash` in every row (depth() entries): what a batch
    /// computes once per key and hands to the *_at() forms below.
    void columns(const Hash128& hash, std::uint32_t* out) const noexcept;
    /// columns() of `count` hashes, the i-th a Hash128 at `first + i·stride`
    /// bytes (hashes inside larger records), to out[i·depth .. (i + 1)·depth).
    /// The Kirsch–Mitzenmacher sketch of depth 4 (the default sizing) does
    /// eight hashes at a time where simd::level() was avx512 when it was built.
    void columns_of(const std::byte* first, std::size_t stride, std::size_t count,
                    std::uint32_t* out) const noexcept;
    void prefetch_at(const std::uint32_t* columns) const noexcept;
    /// update_and_estimate() at precomputed columns.
    void update_and_estimate_at(const std::uint32_t* columns, std::span<const std::uint64_t> weights,
                                std::span<std::uint64_t> estimates) noexcept;
    /// Single-lane convenience (lanes must be 1).
    void update(const Hash128& hash, std::uint64_t weight) noexcept;

    /// Point estimate of one lane: min over rows. Never below the truth.
    std::uint64_t estimate(const Hash128& hash, std::uint32_t lane = 0) const noexcept;

    /// Lower end of the (1 − δ) interval: max(0, estimate − ε·N_lane).
    std::uint64_t lower_bound(std::uint64_t estimate, std::uint32_t lane = 0) const noexcept;

    /// Total weight added to a lane (N in the bounds).
    std::uint64_t total(std::uint32_t lane = 0) const noexcept { return totals_[lane]; }

    /// Adds another sketch's counters cell by cell. Throws std::invalid_argument
    /// when the parameters differ (dimensions, variant, seed, lanes, update
    /// rule; not the stated ε, and this sketch keeps its own) or when merging
    /// a sketch with itself.
    void merge(const CountMinSketch& other);

    /// Adds lane `from` of every cell into lane `to` (e.g. an interval's
    /// counters into running totals) — exact, like merge.
    void accumulate_lane(std::uint32_t from, std::uint32_t to) noexcept;

    /// A sketch of lanes first .. first + count − 1 alone (same dimensions,
    /// scheme and seed): every estimate and bound of those lanes is the same.
    CountMinSketch lanes_of(std::uint32_t first, std::uint32_t count) const;
    /// lanes_of() written into `storage` when it has those lanes' parameters
    /// (a sketch of an earlier window, recycled: no allocation, no page
    /// faults), into a new sketch otherwise.
    CountMinSketch lanes_of(std::uint32_t first, std::uint32_t count, CountMinSketch&& storage) const;
    /// lanes_of() into `out`, which has those lanes' parameters already (its
    /// storage is reused: no allocation). Throws std::invalid_argument otherwise.
    void copy_lanes_to(std::uint32_t first, std::uint32_t count, CountMinSketch& out) const;

    /// Zeroes lanes first .. first + count − 1 (counters and totals), in one
    /// pass over the counters.
    void clear_lanes(std::uint32_t first, std::uint32_t count) noexcept;
    void clear() noexcept;

    /// Counter storage, row-major, lanes innermost: [row][column][lane].
    std::span<const std::uint64_t> counters() const noexcept { return counters_; }
    std::span<std::uint64_t> mutable_counters() noexcept { return counters_; }
    std::span<const std::uint64_t> totals() const noexcept { return totals_; }
    std::span<std::uint64_t> mutable_totals() noexcept { return totals_; }

    std::size_t memory_bytes() const noexcept;

    /// Column of `hash` in `row` (exposed for tests of the index formula).
    std::uint32_t column(const Hash128& hash, std::uint32_t row) const noexcept;

private:
    enum class Stores : std::uint8_t { cached, bypass_cache };
    /// `out` has the parameters and storage of `count` lanes of this sketch.
    bool holds_lanes(const CountMinSketch& out, std::uint32_t count) const noexcept;
    void copy_lanes(std::uint32_t first, std::uint32_t count, CountMinSketch& out, Stores stores) const noexcept;
    std::uint64_t mod_width(std::uint64_t x) const noexcept {
        return mod_by_reciprocal(x, params_.width, width_reciprocal_);
    }
    void update_at(const std::uint32_t* columns, std::span<const std::uint64_t> weights) noexcept;
    std::uint64_t estimate_at(const std::uint32_t* columns, std::uint32_t lane) const noexcept;

    CountMinParams params_;
    std::uint64_t width_reciprocal_ = 0;  // ⌊(2^64 − 1)/width⌋
    bool vector_add4_ = false;  // 4 lanes, plain update, simd::level() avx512 at construction
    bool vector_columns_ = false;  // Kirsch–Mitzenmacher, depth 4, simd::level() avx512
    CacheAlignedVector<std::uint64_t> counters_;
    std::vector<std::uint64_t> totals_;
    // Standard variant: per-row coefficients of the pairwise-independent family.
    std::vector<std::uint64_t> row_a_;
    std::vector<std::uint64_t> row_b_;
};

}  // namespace flowsketch::core
