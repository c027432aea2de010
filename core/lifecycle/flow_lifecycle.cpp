#include "core/lifecycle/flow_lifecycle.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <string>

#include "core/sketch/bloom_filter.hpp"
#include "core/sketch/random.hpp"
#include "core/sketch/two_choice_bloom_filter.hpp"

namespace flowsketch::core {
namespace {

constexpr std::uint64_t max_cells = std::uint64_t{1} << 36;  // 32 GiB of cells: far past any use
constexpr std::uint64_t nibble_ones = 0x1111111111111111ULL;
constexpr std::uint64_t group_salt1 = 0x6c6966652d677231ULL;  // "life-gr1"
constexpr std::uint64_t group_salt2 = 0x6c6966652d677232ULL;  // "life-gr2"
constexpr std::uint64_t block_salt = 0x6c6966652d626c6bULL;   // "life-blk"
constexpr std::uint32_t stamp_cycle = 15;                      // non-zero values of a 4-bit cell
constexpr std::uint64_t byte_low_nibbles = 0x0f0f0f0f0f0f0f0fULL;
constexpr std::uint64_t byte_ones = 0x0101010101010101ULL;
constexpr std::uint32_t block_words = lifecycle_block_cells / 16;  // 8 words of 16 cells
constexpr std::uint32_t offsets_per_word = 64 / 7;                 // 7-bit offsets in the block

std::uint64_t mix64(std::uint64_t z) noexcept {  // SplitMix64 finaliser (a bijection)
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

bool is_prime(std::uint64_t n) noexcept {
    if (n < 2) return false;
    if (n % 2 == 0) return n == 2;
    for (std::uint64_t d = 3; d * d <= n; d += 2) {
        if (n % d == 0) return false;
    }
    return true;
}

/// The blocked filter's k offsets in the block, from Probes::step: consecutive
/// 7-bit fields (9 per word), further words by remixing the last.
template <class Visit>
void for_each_block_offset(std::uint64_t word, std::uint32_t k, Visit visit) noexcept {
    for (std::uint32_t i = 0;;) {
        const std::uint32_t end = std::min(k, i + offsets_per_word);
        for (std::uint64_t bits = word; i < end; ++i, bits >>= 7) {
            visit(static_cast<std::uint32_t>(bits & (lifecycle_block_cells - 1)));
        }
        if (i == k) return;
        word = mix64(word + block_salt);
    }
}

/// The low bit of each non-zero nibble of x.
std::uint64_t nonzero_nibbles(std::uint64_t x) noexcept {
    return (x | x >> 1 | x >> 2 | x >> 3) & nibble_ones;
}

/// Sum of the nibbles of x when each is at most 8 (a sum of up to 8 nibble
/// masks). By bytes: std::popcount without the POPCNT instruction (not in the
/// x86-64 baseline) is a library call.
std::uint32_t sum_of_nibbles(std::uint64_t x) noexcept {
    const std::uint64_t per_byte = (x & byte_low_nibbles) + (x >> 4 & byte_low_nibbles);
    return static_cast<std::uint32_t>((per_byte * byte_ones) >> 56);
}

/// (j/128)^k for j = 0..128: the chance that k probes of a fresh key all hit
/// non-zero cells of a block with j of them.
std::array<double, lifecycle_block_cells + 1> block_fill_powers(std::uint32_t k) {
    std::array<double, lifecycle_block_cells + 1> powers{};
    for (std::uint32_t j = 0; j <= lifecycle_block_cells; ++j) {
        powers[j] = std::pow(static_cast<double>(j) / lifecycle_block_cells, k);
    }
    return powers;
}

/// q = 1 − (1 − 1/128)^k: the chance that a flow probes a given cell of its block.
double block_hit_probability(std::uint32_t k) {
    return -std::expm1(k * std::log1p(-1.0 / lifecycle_block_cells));
}

/// E[(j/128)^k | L flows in a block], j the block's non-zero cells after the
/// k·L uniform probes of L flows, for L = 0, 1, ...: the occupancy
/// distribution of the probes, advanced one probe at a time and extended on demand.
class BlockFillPowers {
public:
    explicit BlockFillPowers(std::uint32_t k) : k_(k), powers_(block_fill_powers(k)) {
        occupancy_[0][0] = 1.0;
        // A probe hits one of the j non-zero cells with probability j/128.
        // Divided once here, not per probe: the sizing search advances these
        // thousands of times, and the divisions were most of a process's start.
        constexpr double b = lifecycle_block_cells;
        for (std::uint32_t j = 0; j <= lifecycle_block_cells; ++j) {
            stay_[j] = j / b;
            arrive_[j] = (b - (static_cast<double>(j) - 1)) / b;
        }
    }

    double at(std::uint64_t flows) {
        while (by_flows_.size() <= flows) {
            const std::uint64_t target = std::uint64_t{k_} * by_flows_.size();
            for (; probes_ < target; ++probes_) {
                // From one array into the other, so the loop vectorises without shuffles.
                const auto& from = occupancy_[probes_ % 2];
                auto& to = occupancy_[(probes_ + 1) % 2];
                to[0] = 0.0;
                for (std::uint32_t j = 1; j <= lifecycle_block_cells; ++j) {
                    to[j] = from[j] * stay_[j] + from[j - 1] * arrive_[j];
                }
            }
            const auto& occupancy = occupancy_[probes_ % 2];
            double sum = 0.0;
            for (std::uint32_t j = 0; j <= lifecycle_block_cells; ++j) sum += occupancy[j] * powers_[j];
            by_flows_.push_back(sum);
        }
        return by_flows_[flows];
    }

private:
    std::uint32_t k_;
    std::uint64_t probes_ = 0;
    std::array<double, lifecycle_block_cells + 1> powers_;
    std::array<std::array<double, lifecycle_block_cells + 1>, 2> occupancy_{};  // after even, odd probes
    std::array<double, lifecycle_block_cells + 1> stay_{};    // j/128: the probe hits a set cell
    std::array<double, lifecycle_block_cells + 1> arrive_{};  // (128 − (j − 1))/128: one from j − 1
    std::vector<double> by_flows_;
};

/// Σ_L Poisson(L; λ)·powers.at(L), over L within λ ± (12√λ + 30) (the rest of
/// the mass is below 10⁻³⁰). The probabilities are walked from the mode so
/// that neither e^−λ nor λ^L under- or overflows.
double blocked_rate(BlockFillPowers& powers, double lambda) {
    if (lambda <= 0.0) return 0.0;
    const double spread = 12.0 * std::sqrt(lambda) + 30.0;
    const auto mode = static_cast<std::uint64_t>(lambda);
    const auto last = static_cast<std::uint64_t>(lambda + spread);
    const double at_mode = std::exp(-lambda + static_cast<double>(mode) * std::log(lambda) -
                                    std::lgamma(static_cast<double>(mode) + 1.0));
    double sum = at_mode * powers.at(mode);
    double p = at_mode;
    for (std::uint64_t l = mode + 1; l <= last; ++l) {
        p *= lambda / static_cast<double>(l);
        sum += p * powers.at(l);
    }
    p = at_mode;
    for (std::uint64_t l = mode; l > 0 && static_cast<double>(mode - l) < spread; --l) {
        p *= static_cast<double>(l) / lambda;
        sum += p * powers.at(l - 1);
    }
    return sum;
}

struct BlockedSizing {
    std::uint64_t max_flows = 0;
    double target_fpr = 0;
    std::uint32_t k = 0;
    std::uint64_t blocks = 0;  // 0: no k meets δ within max_cells
    double design_fpr = 0;
};

// The search behind FlowLifecycleConfig::sizing() for the blocked filter (see
// there). It costs a few milliseconds (tens under the sanitizers), and a
// process builds filters of the same configuration again and again (the
// fuzz targets once per input, tests per case): the last results are kept.
BlockedSizing blocked_sizing(std::uint64_t max_flows, double target_fpr, std::uint32_t k_std) {
    static std::mutex mutex;
    static std::vector<BlockedSizing> known;
    const std::lock_guard<std::mutex> lock(mutex);
    for (const BlockedSizing& b : known) {
        if (b.max_flows == max_flows && b.target_fpr == target_fpr) return b;
    }
    if (known.size() == 64) known.clear();  // bounded
    BlockedSizing result;
    result.max_flows = max_flows;
    result.target_fpr = target_fpr;
    const double n = static_cast<double>(max_flows);
    const std::uint32_t k_min = k_std > 6 ? k_std - 6 : 1;
    const std::uint32_t k_max = std::min<std::uint32_t>(max_probes, k_std + 2);
    for (std::uint32_t k = k_min; k <= k_max; ++k) {
        BlockFillPowers powers(k);
        double lo = 0.0;
        double hi = 2.0 * lifecycle_block_cells * std::numbers::ln2 / k;
        while (blocked_rate(powers, hi) <= target_fpr && hi < 1e7) hi *= 2.0;
        for (int i = 0; i < 48; ++i) {
            const double mid = 0.5 * (lo + hi);
            (blocked_rate(powers, mid) <= target_fpr ? lo : hi) = mid;
        }
        if (!(lo > 0.0)) continue;  // no load meets δ with this k
        const double blocks = std::max(1.0, std::ceil(n / lo));
        if (blocks * lifecycle_block_cells > static_cast<double>(max_cells)) continue;
        const auto b = static_cast<std::uint64_t>(blocks);
        if (result.blocks == 0 || b < result.blocks) {
            result.blocks = b;
            result.k = k;
            result.design_fpr = blocked_rate(powers, n / blocks);
        }
    }
    known.push_back(result);
    return result;
}

/// Deviation t with P(X ≥ μ + t) ≤ 10⁻³ for a sum of (martingale) Bernoulli
/// indicators with mean and variance at most μ (Freedman/Bernstein):
/// exp(−t²/(2(μ + t/3))) = 10⁻³  ⇔  t = L/3 + √((L/3)² + 2μL), L = ln 1000.
double bernstein_deviation(double mu) noexcept {
    const double l = std::log(1000.0);
    return l / 3.0 + std::sqrt((l / 3.0) * (l / 3.0) + 2.0 * mu * l);
}

/// f/(1 − f): expected misses per detection when each lookup misses with
/// probability f (truth = detected + missed, missed ≈ f·truth). ∞ at f = 1.
double miss_ratio(double f) noexcept {
    if (f >= 1.0) return std::numeric_limits<double>::infinity();
    return f / (1.0 - f);
}

/// Bound (probability ≈ 0.999) on the new flows missed behind detections
/// whose expected misses total μ, when no lookup had a false-positive rate
/// above f. Freedman over the arrivals, each missed with probability ≤ f,
/// bounds the misses by f·arrivals plus the deviation; arrivals are
/// detections plus misses, so the deviation grows by 1/(1 − f) = 1 + f/(1 − f)
/// (negligible at the planned fpr, 3.6× for an overfilled filter at f = 0.72).
double miss_bound(double mu, double max_fpr) noexcept {
    return mu + (1.0 + miss_ratio(max_fpr)) * bernstein_deviation(mu);
}

}  // namespace

std::string_view seen_filter_kind_name(SeenFilterKind kind) noexcept {
    switch (kind) {
        case SeenFilterKind::standard: return "standard";
        case SeenFilterKind::two_choice: return "two-choice";
        case SeenFilterKind::blocked: return "blocked";
    }
    return "unknown";
}

double blocked_false_positive_rate(double flows_per_block, std::uint32_t k) {
    BlockFillPowers powers(k);
    return blocked_rate(powers, flows_per_block);
}

std::uint32_t FlowLifecycleConfig::probes_for(double target_fpr) {
    // BloomParams::for_rate is the DESIGN.md formula k = ⌈log2(1/δ)⌉ (it validates δ).
    return BloomParams::for_rate(1, target_fpr).k;
}

std::uint64_t FlowLifecycleConfig::cells_for(std::uint64_t max_flows, double target_fpr) {
    if (max_flows < 1) throw std::invalid_argument("max-flows must be at least 1");
    const std::uint32_t k = probes_for(target_fpr);
    const double m = std::ceil(static_cast<double>(max_flows) * k / std::numbers::ln2);
    if (!(m <= static_cast<double>(max_cells))) {
        throw std::invalid_argument("max-flows " + std::to_string(max_flows) +
                                    " at this flow-fpr needs more than 2^36 filter cells");
    }
    std::uint64_t cells = std::max<std::uint64_t>(static_cast<std::uint64_t>(m), 2);
    while (!is_prime(cells)) ++cells;  // prime gaps near 2^36 are < 1000: quick
    return cells;
}

std::int64_t FlowLifecycleConfig::generation_period_ns() const noexcept {
    if (generations == 0 || idle_timeout_ns <= 0) return 0;
    const std::int64_t g = generations;
    return idle_timeout_ns / g + (idle_timeout_ns % g != 0 ? 1 : 0);
}

FlowLifecycleSizing FlowLifecycleConfig::sizing() const {
    if (generations < 1 || generations > max_lifecycle_generations) {
        throw std::invalid_argument("generations must be in 1.." +
                                    std::to_string(max_lifecycle_generations) + ", got " +
                                    std::to_string(generations));
    }
    if (idle_timeout_ns < static_cast<std::int64_t>(generations)) {
        throw std::invalid_argument("idle timeout must be positive (at least 1 ns per generation)");
    }
    if (kind != SeenFilterKind::standard && kind != SeenFilterKind::two_choice &&
        kind != SeenFilterKind::blocked) {
        throw std::invalid_argument("unknown seen-filter kind");
    }
    if (!(overfill_factor >= 1.0)) throw std::invalid_argument("overfill factor must be >= 1");
    FlowLifecycleSizing s;
    s.cells = cells_for(max_flows, target_fpr);
    s.k = probes_for(target_fpr);
    const double n = static_cast<double>(max_flows);
    const double m = static_cast<double>(s.cells);
    if (kind == SeenFilterKind::standard) {
        s.design_fill = -std::expm1(n * std::log1p(-static_cast<double>(s.k) / m));
        s.design_fpr = std::pow(s.design_fill, static_cast<double>(s.k));
    } else if (kind == SeenFilterKind::blocked) {
        // For each k near the standard one, the most flows per block λ_k with
        // f(λ_k) ≤ δ (f grows with λ: bisection); keep the k needing the fewest
        // blocks ⌈n/λ_k⌉ (ties: fewer probes). The optimum sits below the
        // standard k (8 instead of 10 at δ = 10⁻³): a block's cells fill unevenly.
        const BlockedSizing b = blocked_sizing(max_flows, target_fpr, s.k);
        const std::uint64_t best_blocks = b.blocks;
        s.k = b.k;
        s.design_fpr = b.design_fpr;
        if (best_blocks == 0) {
            throw std::invalid_argument("max-flows " + std::to_string(max_flows) +
                                        " at this flow-fpr needs more than 2^36 filter cells");
        }
        s.cells = best_blocks * lifecycle_block_cells;
        s.design_fill =
            -std::expm1(-n / static_cast<double>(best_blocks) * block_hit_probability(s.k));
    } else {
        // Same memory; the k that minimises the online-greedy prediction. The
        // optimum lies a little above the standard k (Lumetta–Mitzenmacher
        // Table 2); 100 Runge–Kutta steps are accurate to ~10⁻⁸ here.
        const std::uint32_t k_min = std::max<std::uint32_t>(1, s.k - std::min(s.k - 1, 2u));
        const std::uint32_t k_max = std::min<std::uint32_t>(max_probes, 2 * s.k + 2);
        s.design_fpr = 2.0;
        for (std::uint32_t k = k_min; k <= k_max; ++k) {
            const double z = two_choice_fill_prediction(m / n, k, 2, 100);
            const double f = two_choice_false_positive_rate(z, k, 2);
            if (f < s.design_fpr) {
                s.design_fpr = f;
                s.design_fill = z;
                s.k = k;
            }
        }
    }
    s.table_bytes = static_cast<std::size_t>((s.cells + 15) / 16) * sizeof(std::uint64_t) +
                    DirtyTrackedWords::planned_bytes(static_cast<std::size_t>((s.cells + 63) / 64));
    if (kind == SeenFilterKind::blocked) s.table_bytes += s.cells / lifecycle_block_cells;
    return s;
}

FlowLifecycle::FlowLifecycle(const FlowLifecycleConfig& config)
    : config_(config), sizing_(config.sizing()), ended_bits_((sizing_.cells + 63) / 64) {
    m_ = sizing_.cells;
    k_ = sizing_.k;
    live_ = config.generations + 1;
    period_ns_ = config.generation_period_ns();
    seed1_ = config.seed == 0 ? 0 : mix64(config.seed ^ group_salt1);
    seed2_ = config.seed == 0 ? 0 : mix64(config.seed ^ group_salt2);
    blocked_ = config.kind == SeenFilterKind::blocked;
    vector_kernels_ = blocked_ && simd::level() == simd::Level::avx512;
    if (blocked_) {
        constexpr double b = lifecycle_block_cells;
        blocks_ = m_ / lifecycle_block_cells;
        block_hit_ = block_hit_probability(k_);
        pair_exponent_ = 2.0 + std::expm1(k_ * std::log1p(-2.0 / b)) / block_hit_;
        log_spared_ = std::log1p(-block_hit_ / static_cast<double>(blocks_));
        fill_power_ = block_fill_powers(k_);
        fill_blocks_[0] = blocks_;
        ended_fill_blocks_[0] = blocks_;
    } else {
        log_spared_ = std::log1p(-static_cast<double>(k_) / static_cast<double>(m_));
    }
    // Blocked: m/16 words, a multiple of 8, in a cache-line-aligned array: a block is a line.
    cells_.assign(static_cast<std::size_t>((m_ + 15) / 16), 0);
    block_nonzero_.assign(static_cast<std::size_t>(blocks_), 0);
    recent_.assign(config_.recent_flow_table ? recent_slots : 2, Recent{});
    recent_mask_ = recent_.size() - 1;
    clear_recent();
    for (std::uint32_t age = 0; age < 16; ++age) {
        // stamp(age) = cur − age on the cycle 1..15.
        stamp_at_age_[age] = static_cast<std::uint8_t>(
            (cur_stamp_ - 1 + stamp_cycle - age % stamp_cycle) % stamp_cycle + 1);
    }
    age_of_.fill(dead);
    for (std::uint32_t age = 0; age < live_; ++age) {
        age_of_[stamp_at_age_[age]] = static_cast<std::uint8_t>(age);
    }
}

std::size_t FlowLifecycle::planned_bytes(const FlowLifecycleConfig& config) {
    return sizeof(FlowLifecycle) + config.sizing().table_bytes +
           (config.recent_flow_table ? recent_slots : 2) * sizeof(Recent);
}

std::size_t FlowLifecycle::memory_bytes() const noexcept {
    return sizeof(*this) + cells_.capacity() * sizeof(std::uint64_t) + ended_bits_.memory_bytes() +
           block_nonzero_.capacity() + recent_.capacity() * sizeof(Recent);
}

void FlowLifecycle::generate(const Probes& probes, std::uint64_t* out) const noexcept {
    if (blocked_) {
        std::uint32_t i = 0;
        for_each_block_offset(probes.step, k_, [&](std::uint32_t offset) {
            out[i++] = probes.first + offset;
        });
        return;
    }
    std::uint64_t g = probes.first;
    for (std::uint32_t i = 0; i < k_; ++i) {
        out[i] = g;
        g += probes.step;  // < 2m ≤ 2^37: no overflow
        if (g >= m_) g -= m_;
    }
}

void FlowLifecycle::generate(const Hash128& hash, std::uint64_t* out) const noexcept {
    generate(locate(hash), out);
}

// The second group's (h1, h2): both words remixed by a bijection with salts,
// so its probes are independent of the first group's for all practical purposes.
Hash128 FlowLifecycle::second_group(const Hash128& hash) const noexcept {
    return Hash128{mix64(hash.h1 + group_salt1), mix64(hash.h2 + group_salt2)};
}

FlowLifecycle::Scan FlowLifecycle::scan(const std::uint64_t* pos) const noexcept {
    Scan s;
    for (std::uint32_t i = 0; i < k_; ++i) {
        const std::uint32_t c = cell(pos[i]);
        s.zeros += c == 0 ? 1u : 0u;
        s.max_age = std::max<std::uint32_t>(s.max_age, age_of_[c]);
    }
    return s;
}

std::uint32_t FlowLifecycle::ended_block_fill(std::uint64_t block) const noexcept {
    return static_cast<std::uint32_t>(std::popcount(ended_bits_[2 * block]) +
                                      std::popcount(ended_bits_[2 * block + 1]));
}

void FlowLifecycle::touch(const std::uint64_t* pos, const Scan& s) noexcept {
    if (s.max_age == 0) return;  // every cell already carries the current stamp
    if (s.max_age == dead) {  // not covered: a new flow
        ++new_flows_;
        ++seg_new_;
    } else {  // covered: its token moves from its oldest cell's generation to now
        ++seg_moves_;
        --tokens_[stamp_at_age_[s.max_age]];
    }
    ++tokens_[cur_stamp_];
    const std::uint64_t stamp = cur_stamp_;
    for (std::uint32_t i = 0; i < k_; ++i) {
        const std::uint32_t shift = static_cast<std::uint32_t>((pos[i] & 15) << 2);
        std::uint64_t& word = cells_[pos[i] >> 4];
        word = (word & ~(std::uint64_t{15} << shift)) | (stamp << shift);
    }
    nonzero_ += s.zeros;  // distinct probes (the blocked filter has refresh_block)
    if (seg_new_ >= segment_flows) close_segment();
}

// The blocked filter's observe, on the whole block at once (the words, or one
// AVX-512 register): same result as generate, scan and touch, without the
// chain of loads and stores through the same words. Tokens are two-choice's
// bookkeeping: not kept here.
FlowLifecycle::BlockResult FlowLifecycle::refresh_block(const Probes& probes) noexcept {
    std::uint64_t* cells = &cells_[probes.first >> 4];
    const simd::BlockRefresh refresh =
        vector_kernels_ ? refresh_block_vector(cells, probes.step) : refresh_block_words(cells, probes.step);
    BlockResult result;
    if (refresh.current) {
        result.current = true;
        return result;
    }
    const std::uint32_t fresh = refresh.fresh;
    result.is_new = fresh != 0;
    if (!result.is_new) {
        ++seg_moves_;
        return result;
    }
    ++new_flows_;
    ++seg_new_;
    nonzero_ += fresh;
    std::uint8_t& fill = block_nonzero_[probes.first / lifecycle_block_cells];
    --fill_blocks_[fill];
    fill = static_cast<std::uint8_t>(fill + fresh);
    ++fill_blocks_[fill];
    if (seg_new_ >= segment_flows) close_segment();
    return result;
}

// Portable: a nibble mask of the probed cells, then one test of every word
// for a probed zero (new flow) and for a probed cell not holding the current
// stamp, and one masked write.
simd::BlockRefresh FlowLifecycle::refresh_block_words(std::uint64_t* cells,
                                                      std::uint64_t offsets) const noexcept {
    std::uint64_t mask[block_words] = {};
    for_each_block_offset(offsets, k_, [&](std::uint32_t offset) {
        mask[offset >> 4] |= std::uint64_t{15} << ((offset & 15) << 2);
    });
    const std::uint64_t stamp = nibble_ones * cur_stamp_;
    std::uint64_t stale = 0;
    std::uint64_t zeros = 0;  // per nibble: in how many words a probed cell is zero
    for (std::uint32_t w = 0; w < block_words; ++w) {
        stale |= (cells[w] ^ stamp) & mask[w];
        zeros += ~nonzero_nibbles(cells[w]) & mask[w] & nibble_ones;
    }
    simd::BlockRefresh result;
    if (stale == 0) {
        result.current = true;
        return result;
    }
    for (std::uint32_t w = 0; w < block_words; ++w) cells[w] = (cells[w] & ~mask[w]) | (stamp & mask[w]);
    result.fresh = sum_of_nibbles(zeros);
    return result;
}

// AVX-512: the probed cells as two 64-bit sets, even and odd cells (a byte of
// the block holds cell 2j in its low nibble, 2j + 1 in its high one), built in
// registers without the mask's stores; the kernel does the rest in one
// register. Up to 8 probes (the default sizing's k) the kernel builds the sets
// itself from the offsets word, eight lanes at once; more take the loop here.
// Same cells and result as refresh_block_words.
simd::BlockRefresh FlowLifecycle::refresh_block_vector(std::uint64_t* cells,
                                                       std::uint64_t offsets) const noexcept {
    if (k_ <= 8) return simd::refresh_block_offsets_avx512(cells, offsets, k_, cur_stamp_);
    std::uint64_t even = 0;
    std::uint64_t odd = 0;
    for_each_block_offset(offsets, k_, [&](std::uint32_t offset) {
        const std::uint64_t bit = std::uint64_t{1} << (offset >> 1);
        const std::uint64_t is_odd = std::uint64_t{0} - (offset & 1);
        odd |= bit & is_odd;
        even |= bit & ~is_odd;
    });
    return simd::refresh_block_avx512(cells, even, odd, cur_stamp_);
}

void FlowLifecycle::note_end(const std::uint64_t* pos) noexcept {
    std::uint32_t fresh = 0;
    for (std::uint32_t i = 0; i < k_; ++i) {
        const std::uint64_t bit = std::uint64_t{1} << (pos[i] & 63);
        std::uint64_t& word = ended_bits_.for_write(pos[i] >> 6);
        fresh += (word & bit) == 0 ? 1u : 0u;
        word |= bit;
    }
    ended_ones_ += fresh;
    if (fresh == 0) return;
    ++ended_;
    if (blocked_) {  // FIN/RST packets only: popcount's library call is fine here
        const std::uint32_t now = ended_block_fill(pos[0] / lifecycle_block_cells);
        --ended_fill_blocks_[now - fresh];
        ++ended_fill_blocks_[now];
    }
    if (++ended_seg_ >= segment_flows) close_ended_segment();
}

// f/(1 − f) per end: at the segment's close (or now, for the open one) an
// upper bound on the rate every end in it met, since bits are only set until
// the interval ends. None yet: 0 (also when f = 1, where the ratio is ∞).
double FlowLifecycle::ended_segment_misses(double f) const noexcept {
    return ended_seg_ == 0 ? 0.0 : static_cast<double>(ended_seg_) * miss_ratio(f);
}

void FlowLifecycle::close_ended_segment() noexcept {
    ended_mu_ += ended_segment_misses(ended_fpr());
    ended_seg_ = 0;
}

bool FlowLifecycle::observe_slow(const Hash128& hash, std::int64_t timestamp_ns,
                                 std::uint8_t tcp_flags) noexcept {
    // observe() found the flow not recent, or the packet ends it or passes a
    // boundary (which empties the recent table): no need to look again.
    if (timestamp_ns >= next_boundary_ns_) advance_slow(timestamp_ns);
    ++packets_;
    written_stamps_ |= 1u << cur_stamp_;  // what follows may write the current stamp
    const bool ends = (tcp_flags & (tcp_fin | tcp_rst)) != 0;
    const Probes probes = locate(hash);
    std::uint64_t pos[max_probes];
    if (blocked_) {
        const BlockResult r = refresh_block(probes);
        if (ends) {
            generate(probes, pos);
            note_end(pos);
        }
        if (r.current && config_.recent_flow_table) {
            recent_[hash.h1 & recent_mask_] = Recent{hash.h1, hash.h2};
        }
        return r.is_new;
    }
    generate(probes, pos);
    const Scan first = scan(pos);
    bool is_new = false;
    bool current = first.max_age == 0;  // refreshed in this generation already: nothing to write
    if (!current) {
        if (config_.kind != SeenFilterKind::two_choice) {
            is_new = first.max_age == dead;
            touch(pos, first);
        } else {
            std::uint64_t pos2[max_probes];
            generate(second_group(hash), pos2);
            const Scan second = scan(pos2);
            const bool covered1 = first.max_age != dead;
            const bool covered2 = second.max_age != dead;
            bool use_second = false;
            if (covered1 || covered2) {
                // Refresh the covering group whose oldest cell is newest: the
                // flow's own group has every cell at least as new as its last packet.
                use_second = covered2 && (!covered1 || second.max_age < first.max_age);
            } else {
                // Online greedy (Lumetta–Mitzenmacher §3.1): fewer new cells;
                // ties by a hash bit not used by the probes' reduction.
                is_new = true;
                use_second = second.zeros < first.zeros ||
                             (second.zeros == first.zeros && (hash.h2 & 1) != 0);
            }
            current = use_second && second.max_age == 0;
            touch(use_second ? pos2 : pos, use_second ? second : first);
        }
    }
    if (ends) note_end(pos);
    // A flow enters the table at its second packet in a generation, the first
    // that finds its cells current: the single packets of a flood (or of any
    // short flow) do not push the busy flows out.
    if (current && config_.recent_flow_table) {
        recent_[hash.h1 & recent_mask_] = Recent{hash.h1, hash.h2};
    }
    return is_new;
}

// The standard and two-choice filters' k lines (the first group's).
void FlowLifecycle::prefetch_probes(const Probes& probes) const noexcept {
    std::uint64_t g = probes.first;
    for (std::uint32_t i = 0; i < k_; ++i) {
        __builtin_prefetch(&cells_[g >> 4], 1, 3);
        g += probes.step;
        if (g >= m_) g -= m_;
    }
}

// An empty slot i holds h1 = i ^ 1: a flow in slot i has h1 & mask = i, so
// it never matches (the mask has at least one bit: two slots at least).
void FlowLifecycle::clear_recent() noexcept {
    for (std::size_t i = 0; i < recent_.size(); ++i) recent_[i] = Recent{i ^ 1, 0};
}

bool FlowLifecycle::contains(const Hash128& hash) const noexcept {
    std::uint64_t pos[max_probes];
    generate(hash, pos);
    if (scan(pos).max_age != dead) return true;
    if (config_.kind != SeenFilterKind::two_choice) return false;
    generate(second_group(hash), pos);
    return scan(pos).max_age != dead;
}

void FlowLifecycle::advance_to(std::int64_t timestamp_ns) noexcept {
    if (timestamp_ns >= next_boundary_ns_) advance_slow(timestamp_ns);
}

// Blocked: a fresh key's probes are uniform in a uniform block, so it is a
// false positive with probability (1/β)·Σ_blocks (fill of the block)^k.
double FlowLifecycle::current_fpr() const noexcept {
    if (blocked_) return blocked_fpr(fill_blocks_);
    const double fill = static_cast<double>(nonzero_) / static_cast<double>(m_);
    if (config_.kind == SeenFilterKind::standard) return std::pow(fill, static_cast<double>(k_));
    return two_choice_false_positive_rate(fill, k_, 2);
}

double FlowLifecycle::blocked_fpr(const FillHistogram& blocks_by_fill) const noexcept {
    double sum = 0.0;
    for (std::uint32_t j = 1; j <= lifecycle_block_cells; ++j) {
        sum += static_cast<double>(blocks_by_fill[j]) * fill_power_[j];
    }
    return sum / static_cast<double>(blocks_);
}

double FlowLifecycle::ended_fpr() const noexcept {
    if (blocked_) return blocked_fpr(ended_fill_blocks_);
    const double fill = static_cast<double>(ended_ones_) / static_cast<double>(m_);
    return std::pow(fill, static_cast<double>(k_));
}

// n̂ = ln(Z/m) / ln(1 − p): each flow spares a given cell with probability
// 1 − p (k distinct probes: p = k/m; blocked: p = q/β, q = 1 − (1 − 1/128)^k).
// Z = 0 is read as Z = 1/2 (a finite "at least").
double FlowLifecycle::estimate(double zeros) const noexcept {
    const double z = std::max(zeros, 0.5);
    return std::log(z / static_cast<double>(m_)) / log_spared_;
}

// Var(n̂) by the delta method from Var(Z) with the number of flows fixed,
// t = ln(m/Z) (docs/flow-lifecycle.md derives both):
//  - k distinct probes (linear counting of n·k probes): (m/k²)·(e^t − 1 − t);
//  - blocked, B = 128 cells per block, c = pair_exponent_:
//    β/(B·q²)·(e^t − 1 + (B − 1)(e^{c·t} − 1) − t·B·q); the middle term is
//    the covariance of cells that share a block's load.
double FlowLifecycle::estimate_variance(double zeros) const noexcept {
    const double m = static_cast<double>(m_);
    const double t = std::log(m / std::max(zeros, 0.5));
    if (blocked_) {
        constexpr double b = lifecycle_block_cells;
        const double scale = static_cast<double>(blocks_) / (b * block_hit_ * block_hit_);
        return std::max(0.0, scale * (std::expm1(t) + (b - 1.0) * std::expm1(pair_exponent_ * t) -
                                      t * b * block_hit_));
    }
    const double k = static_cast<double>(k_);
    return std::max(0.0, m / (k * k) * (std::expm1(t) - t));
}

FlowLifecycle::MissedFlows FlowLifecycle::segment_misses(double end_fpr) const noexcept {
    MissedFlows missed;
    if (seg_new_ == 0) return missed;
    const double seg_new = static_cast<double>(seg_new_);
    // Within a segment the fill only grows: its end has the highest fpr, which
    // the bounds use. The point estimate takes the mean of the ratio at both
    // ends (trapezoid rule): the end alone overcounts by half the ratio's rise,
    // which is large while a flood overfills the filter.
    const double r_end = miss_ratio(end_fpr);
    const double r_mean = 0.5 * (miss_ratio(seg_start_fpr_) + r_end);
    missed.bound_mean = seg_new * r_end;
    missed.mean = seg_new * r_mean;
    // Misses before each detection: geometric, variance f/(1 − f)² = r(1 + r).
    missed.variance = seg_new * r_mean * (1.0 + r_mean);
    return missed;
}

void FlowLifecycle::close_segment() noexcept {
    const double f = current_fpr();
    const MissedFlows missed = segment_misses(f);
    undercount_mu_ += missed.bound_mean;
    // Token errors (two-choice): a missed new flow takes another flow's token
    // (expected seg_new·f/(1 − f)); a refresh whose cells were all renewed by
    // other flows after its last packet (probability well below f) moves a
    // token from the wrong generation. Each shifts one token until the
    // generation it came from leaves the window.
    token_errors_[cur_stamp_] += TokenErrors{missed, f, static_cast<double>(seg_moves_) * f};
    max_fpr_ = std::max(max_fpr_, f);
    seg_new_ = 0;
    seg_moves_ = 0;
    seg_start_fpr_ = f;
}

void FlowLifecycle::advance_slow(std::int64_t timestamp_ns) noexcept {
    if (!started_) {
        started_ = true;
        gen_start_ns_ = timestamp_ns;
        next_boundary_ns_ = timestamp_ns > std::numeric_limits<std::int64_t>::max() - period_ns_
                                ? std::numeric_limits<std::int64_t>::max()
                                : timestamp_ns + period_ns_;
        return;
    }
    if (timestamp_ns < next_boundary_ns_) return;
    clear_recent();  // cells change: no flow is "refreshed in this generation" any more
    // Unsigned difference: exact even if the two times are centuries apart.
    const std::uint64_t period = static_cast<std::uint64_t>(period_ns_);
    const std::uint64_t elapsed =
        static_cast<std::uint64_t>(timestamp_ns) - static_cast<std::uint64_t>(gen_start_ns_);
    const std::uint64_t boundaries = elapsed / period;
    close_segment();
    if (boundaries >= live_) {
        // Every live generation leaves the window: one pass clears all.
        const double zeros = static_cast<double>(m_ - nonzero_);
        if (config_.kind != SeenFilterKind::two_choice) {
            expired_est_ += estimate(zeros);
            expired_var_ += estimate_variance(zeros);
        } else {
            for (std::uint32_t s = 1; s < 16; ++s) {
                expired_est_ += static_cast<double>(std::max<std::int64_t>(tokens_[s], 0));
                expired_var_ += token_errors_[s].expiry_variance();
            }
        }
        tokens_.fill(0);
        token_errors_.fill(TokenErrors{});
        std::fill(cells_.begin(), cells_.end(), 0);
        written_stamps_ = 0;
        nonzero_ = 0;
        fill_blocks_.fill(0);
        fill_blocks_[0] = blocks_;
        std::fill(block_nonzero_.begin(), block_nonzero_.end(), 0);
        ++cell_passes_;
        // Keep the stamp sequence as if each boundary had been crossed.
        const std::uint32_t steps = static_cast<std::uint32_t>(boundaries % stamp_cycle);
        cur_stamp_ = (cur_stamp_ - 1 + steps) % stamp_cycle + 1;
        for (std::uint32_t age = 0; age < 16; ++age) {
            stamp_at_age_[age] = static_cast<std::uint8_t>(
                (cur_stamp_ - 1 + stamp_cycle - age % stamp_cycle) % stamp_cycle + 1);
        }
        age_of_.fill(dead);
        for (std::uint32_t age = 0; age < live_; ++age) {
            age_of_[stamp_at_age_[age]] = static_cast<std::uint8_t>(age);
        }
    } else {
        for (std::uint64_t b = 0; b < boundaries; ++b) rotate_once();
    }
    generations_advanced_ += boundaries;
    // gen_start + boundaries·P ≤ timestamp: computed modulo 2^64, exact in int64.
    gen_start_ns_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(gen_start_ns_) +
                                              boundaries * period);
    next_boundary_ns_ = gen_start_ns_ > std::numeric_limits<std::int64_t>::max() - period_ns_
                            ? std::numeric_limits<std::int64_t>::max()
                            : gen_start_ns_ + period_ns_;
    seg_start_fpr_ = current_fpr();  // the boundaries emptied cells
}

void FlowLifecycle::rotate_once() noexcept {
    // The generation at age G leaves the window: clear its stamp (SWAR: a
    // nibble equals the stamp iff the nibble of word ^ pattern is zero).
    const std::uint32_t leaving = stamp_at_age_[live_ - 1];
    const std::uint64_t pattern = nibble_ones * leaving;
    const auto leaving_nibbles = [pattern](std::uint64_t word) noexcept {
        return ~nonzero_nibbles(word ^ pattern) & nibble_ones;
    };
    std::uint64_t cleared = 0;
    // A cell holds the stamp only if its generation wrote some (observe_slow
    // marks it): not one that began before the first packet, as the first G
    // of every run do, nor one without traffic. Then there is nothing to
    // clear and no pass over the cells to make.
    const bool pass = (written_stamps_ & (1u << leaving)) != 0;
    if (pass && blocked_) {
        // Block by block: the cells cleared are the drop in the block's fill,
        // and only a block that lost cells moves in the fill histogram. An
        // empty block stays empty: skipped.
        for (std::uint64_t block = 0; block < blocks_; ++block) {
            std::uint8_t& fill = block_nonzero_[block];
            if (fill == 0) continue;
            std::uint64_t* words = &cells_[block * block_words];
            std::uint64_t left = 0;  // per nibble: in how many of the 8 words it leaves
            for (std::uint32_t w = 0; w < block_words; ++w) {
                const std::uint64_t leaves = leaving_nibbles(words[w]);
                words[w] &= ~(leaves * 15);
                left += leaves;
            }
            if (left == 0) continue;
            const std::uint32_t gone = sum_of_nibbles(left);
            cleared += gone;
            --fill_blocks_[fill];
            fill = static_cast<std::uint8_t>(fill - gone);
            ++fill_blocks_[fill];
        }
    } else if (pass) {
        for (std::uint64_t& word : cells_) {
            const std::uint64_t equal = leaving_nibbles(word);
            cleared += sum_of_nibbles(equal);
            word &= ~(equal * 15);
        }
    }
    cell_passes_ += pass ? 1 : 0;
    written_stamps_ &= ~(1u << leaving);
    const double zeros_before = static_cast<double>(m_ - nonzero_);
    nonzero_ -= cleared;
    const double zeros_after = static_cast<double>(m_ - nonzero_);
    if (config_.kind != SeenFilterKind::two_choice) {
        if (cleared != 0) {
            expired_est_ += estimate(zeros_before) - estimate(zeros_after);
            // Var of n̂(Z_b) − n̂(Z_a) given the flows that stay (docs, "expired").
            expired_var_ +=
                std::max(0.0, estimate_variance(zeros_before) - estimate_variance(zeros_after));
        }
    } else {
        expired_est_ += static_cast<double>(std::max<std::int64_t>(tokens_[leaving], 0));
        expired_var_ += token_errors_[leaving].expiry_variance();
    }
    tokens_[leaving] = 0;
    token_errors_[leaving] = TokenErrors{};
    // Everything ages by one; the new current stamp is free (cleared when it left).
    cur_stamp_ = cur_stamp_ % stamp_cycle + 1;
    for (std::uint32_t age = 15; age > 0; --age) stamp_at_age_[age] = stamp_at_age_[age - 1];
    stamp_at_age_[0] = static_cast<std::uint8_t>(cur_stamp_);
    age_of_.fill(dead);
    for (std::uint32_t age = 0; age < live_; ++age) {
        age_of_[stamp_at_age_[age]] = static_cast<std::uint8_t>(age);
    }
}

FlowCounts FlowLifecycle::interval_counts() const {
    FlowCounts c;
    const double m = static_cast<double>(m_);
    const double f = current_fpr();
    c.packets = packets_;
    c.new_flows = new_flows_;
    const MissedFlows open_segment = segment_misses(f);
    c.new_undercount_expected = undercount_mu_ + open_segment.bound_mean;
    const double max_fpr = std::max(max_fpr_, f);
    c.new_undercount_bound = miss_bound(c.new_undercount_expected, max_fpr);

    const double zeros = static_cast<double>(m_ - nonzero_);
    if (config_.kind != SeenFilterKind::two_choice) {
        c.active = nonzero_ == 0 ? 0.0 : estimate(zeros);
        c.active_stderr = std::sqrt(estimate_variance(zeros));
        c.active_lower = std::max(0.0, c.active - 3.0 * c.active_stderr);
        c.active_upper = c.active + 3.0 * c.active_stderr;
    } else {
        double tokens = 0.0;
        TokenErrors window{open_segment, f, static_cast<double>(seg_moves_) * f};
        for (std::uint32_t s = 1; s < 16; ++s) {
            tokens += static_cast<double>(tokens_[s]);
            window += token_errors_[s];
        }
        tokens = std::max(tokens, 0.0);
        // Missed new flows are missing tokens: add their expectation; their
        // spread is the standard error. Misplaced tokens only widen the upper
        // bound (their real rate is far below f).
        c.active = tokens + window.hidden.mean;
        c.active_stderr = std::sqrt(window.hidden.variance);
        c.active_lower = tokens;
        c.active_upper = tokens + miss_bound(window.hidden.bound_mean + window.misplaced, window.fpr);
    }
    c.expired = expired_est_;
    c.expired_stderr = std::sqrt(expired_var_);

    c.ended = ended_;
    const double ended_f = ended_fpr();  // the interval's highest: the deviation's factor
    c.ended_undercount_bound = miss_bound(ended_mu_ + ended_segment_misses(ended_f), ended_f);

    c.fill = static_cast<double>(nonzero_) / m;
    c.fpr = f;
    c.max_fpr = max_fpr;
    c.target_fpr = config_.target_fpr;
    c.overfilled = c.max_fpr > config_.overfill_factor * config_.target_fpr;
    c.generations_advanced = generations_advanced_;
    return c;
}

void FlowLifecycle::start_new_interval() noexcept {
    close_segment();  // folds the segment into the token error expectations
    packets_ = 0;
    new_flows_ = 0;
    ended_ = 0;
    ended_mu_ = 0.0;
    ended_seg_ = 0;
    undercount_mu_ = 0.0;
    expired_est_ = 0.0;
    expired_var_ = 0.0;
    max_fpr_ = 0.0;
    generations_advanced_ = 0;
    ended_bits_.clear();
    ended_ones_ = 0;
    if (blocked_) {
        ended_fill_blocks_.fill(0);
        ended_fill_blocks_[0] = blocks_;
    }
}

}  // namespace flowsketch::core
