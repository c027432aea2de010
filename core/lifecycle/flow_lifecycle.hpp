// Flow lifecycle: which flows are new, how many are active, how many expired
// and how many ended, in memory fixed by (max_flows, target_fpr), with the
// error of every answer. Full design, proofs and sizing: docs/flow-lifecycle.md.
//
// Structure: a timestamp Bloom filter. m cells of 4 bits; a cell holds the
// stamp (1..15, cycling) of the newest generation in which some flow probed
// it, 0 for "no flow in the last G + 1 generations". Time is cut into
// generations of P = ⌈T/G⌉ (T the idle timeout); the live window is the
// current generation and the G before it. A packet writes the current stamp
// into its flow's k cells. At each generation boundary the cells holding the
// stamp that leaves the window are cleared (one SWAR pass over m/16 words).
// This is the counting filter of DESIGN.md ("G generations of bitsets plus a
// counter of generations per position") with the counter replaced by the
// newest generation: counter(i) ≠ 0 ⇔ cell(i) ≠ 0, so the set of flows it
// answers "active" for is identical, in 4 bits per position instead of G + 4,
// and a packet touches k positions instead of 2k.
//
// Guarantees (m cells, k probes, ρ = fraction of non-zero cells):
//  - no false negatives: a flow with a packet less than G·P ≥ T ago is active;
//  - a flow expires at the first generation boundary more than G·P after its
//    last packet: between G·P and (G + 1)·P after it (T < delay ≤ T + P when
//    G divides T);
//  - a packet is reported new only if its flow is not active (never an
//    overcount); a new flow is missed with probability ≤ the false-positive
//    rate f = ρ^k (two-choice: 1 − (1 − ρ^k)²) at that moment;
//  - active (standard): n̂ = ln(Z/m) / ln(1 − k/m) from the Z zero cells, with
//    Var(n̂) ≈ (m/k²)·(e^t − t − 1), t = ln(m/Z) (linear counting of n·k probes);
//  - expired (standard): Σ over boundaries of n̂(before) − n̂(after), with
//    Var ≈ (m/k²)·(m/Z_b − m/Z_a − ln(Z_a/Z_b)) per boundary (Z_b zeros before
//    clearing, Z_a after);
//  - two-choice: a flow sets fewer new cells, so n̂ does not apply; active and
//    expired come from per-generation flow tokens (exact when no lookup is a
//    false positive), corrected by the expected number of false-positive
//    lookups (see the doc);
//  - blocked (the default): a flow's k probes fall in one block of 128 cells
//    (one 64-byte cache line) chosen by h1, each uniform in the block. One
//    cache miss per flow instead of k, for about 30% more cells at the same δ.
//    n̂ keeps its form with k/m replaced by the per-flow probability of
//    probing a cell, p = (1 − (1 − 1/128)^k)/β (β blocks); its variance gains
//    a term for the spread of block loads; f is the mean of (fill of block)^k
//    over blocks, kept exact from a histogram of block fills.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "core/platform/cache_aligned.hpp"
#include "core/lifecycle/dirty_tracked_words.hpp"
#include "core/key/hash.hpp"
#include "core/sketch/probes.hpp"
#include "core/sketch/random.hpp"  // UInt128
#include "core/platform/simd.hpp"

namespace flowsketch::core {

enum class SeenFilterKind : std::uint8_t { standard = 0, two_choice = 1, blocked = 2 };

std::string_view seen_filter_kind_name(SeenFilterKind kind) noexcept;

/// Largest G: the live window holds G + 1 stamps and a 4-bit cell has 15 non-zero values.
inline constexpr std::uint32_t max_lifecycle_generations = 14;

/// Cells per block of the blocked filter: 128 cells of 4 bits fill one 64-byte cache line.
inline constexpr std::uint32_t lifecycle_block_cells = 128;

/// Blocked filter, false-positive rate of a fresh key when flows fall into
/// blocks as a Poisson process of `flows_per_block` per block: E[(j/128)^k]
/// with j the non-zero cells of a block, from the exact occupancy
/// distribution of k·L probes per block of L flows, mixed over L.
double blocked_false_positive_rate(double flows_per_block, std::uint32_t k);

/// TCP flag bits that end a flow.
inline constexpr std::uint8_t tcp_fin = 0x01;
inline constexpr std::uint8_t tcp_rst = 0x04;

/// What a configuration costs and promises at its design load.
struct FlowLifecycleSizing {
    std::uint64_t cells = 0;        ///< m: prime ≥ ⌈n·k_std / ln 2⌉, or (blocked) 128·blocks
    std::uint32_t k = 0;            ///< probes per group
    double design_fill = 0;         ///< predicted ρ with max_flows active
    double design_fpr = 0;          ///< predicted false-positive rate at that fill
    std::size_t table_bytes = 0;    ///< m/2 (4-bit cells) + m/8 (ended filter), rounded to
                                    ///< words; blocked + m/128 (a fill count per block)
};

struct FlowLifecycleConfig {
    std::uint64_t max_flows = 1'000'000;  ///< n: concurrently active flows planned
    double target_fpr = 0.001;            ///< δ: "already seen" false-positive rate at n
    std::int64_t idle_timeout_ns = 60'000'000'000;  ///< T
    std::uint32_t generations = 8;        ///< G, 1..14: expiry precision is T/G
    SeenFilterKind kind = SeenFilterKind::blocked;
    std::uint64_t seed = 0;               ///< perturbs the probe positions
    double overfill_factor = 2.0;         ///< warn when fpr > factor·δ
    /// Answer repeat packets of a flow within a generation from a small table
    /// of recently refreshed flows (exact; off only to measure or test it).
    bool recent_flow_table = true;

    /// k = ⌈log2(1/δ)⌉ (DESIGN.md, Bloom sizing). Throws unless 0 < δ < 1 and k ≤ 64.
    static std::uint32_t probes_for(double target_fpr);
    /// m = smallest prime ≥ ⌈n·k / ln 2⌉ with k = probes_for(δ): the DESIGN.md size,
    /// made prime so double hashing needs no division and the k probes are distinct.
    static std::uint64_t cells_for(std::uint64_t max_flows, double target_fpr);
    /// Validates and sizes. Standard: (m, k) as above, ρ = 1 − (1 − k/m)^n ≈ 1/2,
    /// f = ρ^k ≤ δ. Two-choice: the same m (same memory), k chosen to minimise
    /// the Lumetta–Mitzenmacher prediction 1 − (1 − z^k)² with z from their (3.2).
    /// Blocked: the (k, blocks) with the fewest cells such that
    /// blocked_false_positive_rate(n/blocks, k) ≤ δ.
    /// Throws std::invalid_argument on bad values.
    FlowLifecycleSizing sizing() const;
    /// P = ⌈T/G⌉ (so G·P ≥ T: no flow expires before T).
    std::int64_t generation_period_ns() const noexcept;
};

/// One interval's answers. Counts are since the last start_new_interval();
/// active, fill and fpr are as of the last observe()/advance_to().
struct FlowCounts {
    std::uint64_t packets = 0;      ///< observe() calls
    std::uint64_t new_flows = 0;    ///< packets whose flow was not active: ≤ the true count
    /// Expected number of new flows hidden by false positives:
    /// μ = Σ over generation segments (at most 256 new flows each) of
    /// new_in_segment · f/(1 − f), f the segment's end-of-segment (= highest)
    /// false-positive rate.
    double new_undercount_expected = 0;
    /// truth − new_flows ≤ μ + (1 + f/(1 − f))·(L/3 + √((L/3)² + 2μL)), L = ln 1000,
    /// f = max_fpr (Freedman/Bernstein over the arrivals, probability ≈ 0.999).
    double new_undercount_bound = 0;

    double active = 0;              ///< estimated active flows (G·P window)
    double active_stderr = 0;
    double active_lower = 0;        ///< standard: active − 3·stderr; two-choice: tokens
    double active_upper = 0;        ///< standard: active + 3·stderr; two-choice: tokens + bound

    double expired = 0;             ///< flows whose expiry boundary fell in the interval
    double expired_stderr = 0;

    std::uint64_t ended = 0;        ///< distinct flows with a FIN or RST packet
    double ended_undercount_bound = 0;  ///< same form as new_undercount_bound, ended filter's f

    double fill = 0;                ///< ρ
    double fpr = 0;                 ///< current false-positive rate of the seen filter
    double max_fpr = 0;             ///< highest fpr at any generation end in the interval, or now
    double target_fpr = 0;
    bool overfilled = false;        ///< max_fpr > overfill_factor · target_fpr
    std::uint64_t generations_advanced = 0;  ///< generation boundaries crossed
};

class FlowLifecycle {
public:
    /// Throws std::invalid_argument (see FlowLifecycleConfig::sizing).
    explicit FlowLifecycle(const FlowLifecycleConfig& config);

    /// One packet: advances generations if its time passed a boundary (never
    /// backwards), then refreshes its flow. Returns true if the flow was not
    /// active before this packet. FIN or RST in tcp_flags counts the flow as
    /// ended (pass 0 for non-TCP). O(k) cell touches (2k for two-choice when the
    /// flow was not refreshed in the current generation); no allocation.
    /// Inline for the most common packet, one of a flow already refreshed in
    /// this generation: it is answered before its probes are even located.
    bool observe(const Hash128& hash, std::int64_t timestamp_ns, std::uint8_t tcp_flags) noexcept {
        if (timestamp_ns < next_boundary_ns_ && (tcp_flags & (tcp_fin | tcp_rst)) == 0 &&
            is_recent(hash)) {
            ++packets_;
            return false;
        }
        return observe_slow(hash, timestamp_ns, tcp_flags);
    }

    /// Starts loading the cells a flow's probes touch (no effect on results);
    /// issued a few packets ahead in a batch, it hides the k cache misses.
    /// Blocked: the block, its fill count and the flow's recent-table slot,
    /// whether or not the flow is recent (a branch on the table, as
    /// unpredictable as a flood's share of the packets, cost more than the
    /// line: b 1.2% slower). Standard and two-choice: the k lines, unless the
    /// flow is recent (see prefetch_reads_recent).
    void prefetch(const Hash128& hash) const noexcept {
        const Probes probes = locate(hash);
        if (blocked_) {
            __builtin_prefetch(&cells_[probes.first >> 4], 1, 3);
            __builtin_prefetch(&block_nonzero_[probes.first / lifecycle_block_cells], 1, 3);
            __builtin_prefetch(&recent_slot(hash), 0, 3);
            return;
        }
        if (is_recent(hash)) return;
        prefetch_probes(probes);
    }
    /// prefetch() reads the flow's recent-table slot (standard and two-choice
    /// filters): a batch should prefetch_recent() it earlier still.
    bool prefetch_reads_recent() const noexcept { return !blocked_; }
    /// How many packets ahead of observe() a batch should call prefetch(): far
    /// enough to hide a miss to the L3 cache, near enough that the lines in
    /// flight fit the core's miss buffers. Blocked prefetches 2 lines per packet,
    /// the others k (BM_AddBatch: 16 beat 6 and 10 for blocked; 6 beat 3 for standard).
    std::size_t prefetch_lookahead() const noexcept { return blocked_ ? 16 : 6; }
    /// Starts loading what prefetch() itself reads (issue it further ahead).
    void prefetch_recent(const Hash128& hash) const noexcept {
        __builtin_prefetch(&recent_slot(hash), 0, 3);
    }
    /// The first timestamp at which observe() or advance_to() crosses a
    /// generation boundary (the lowest value before the first packet).
    std::int64_t next_boundary_ns() const noexcept { return next_boundary_ns_; }
    /// Time passes without packets (live idle timer, end of an interval).
    /// Crossing b boundaries costs min(b, G + 1) passes over the cells.
    void advance_to(std::int64_t timestamp_ns) noexcept;

    /// True if the flow is active (always for a flow with a packet in the last
    /// G·P; for others with probability fpr). Does not change anything.
    bool contains(const Hash128& hash) const noexcept;

    FlowCounts interval_counts() const;
    void start_new_interval() noexcept;

    const FlowLifecycleConfig& config() const noexcept { return config_; }
    const FlowLifecycleSizing& sizing() const noexcept { return sizing_; }
    std::int64_t generation_period_ns() const noexcept { return period_ns_; }
    /// Start of the current generation (the first timestamp seen starts generation 0).
    std::int64_t generation_start_ns() const noexcept { return gen_start_ns_; }
    /// Full passes over the cell array so far (for tests and benchmarks).
    std::uint64_t cell_passes() const noexcept { return cell_passes_; }
    /// Fixed at construction: object plus both tables.
    std::size_t memory_bytes() const noexcept;
    /// What a lifecycle of this configuration allocates (sizing().table_bytes
    /// and the recent-flow table), known before building it. Throws as sizing().
    static std::size_t planned_bytes(const FlowLifecycleConfig& config);

private:
    static constexpr std::uint8_t dead = 0xff;  // age_of_ value for an empty cell
    struct Scan {
        std::uint32_t max_age = 0;  // dead if some cell is empty
        std::uint32_t zeros = 0;
    };

    // Flows refreshed in the current generation, by hash (direct-mapped). Such
    // a flow's cells all hold the current stamp until the next boundary (other
    // packets only write that stamp; only a boundary clears), so its next
    // packets change nothing: observe() answers them from here, without the k
    // cell reads. Exact: entries match on the whole 128-bit hash, from which
    // the probes are derived, and a boundary empties the table. 16 bytes, so
    // an entry never straddles two cache lines.
    struct Recent {
        std::uint64_t h1 = 0;
        std::uint64_t h2 = 0;
    };
    static constexpr std::size_t recent_slots = std::size_t{1} << 15;
    // With the table off, two slots that are never written.
    const Recent& recent_slot(const Hash128& hash) const noexcept {
        return recent_[hash.h1 & recent_mask_];
    }
    bool is_recent(const Hash128& hash) const noexcept {
        const Recent& r = recent_slot(hash);
        return r.h1 == hash.h1 && r.h2 == hash.h2;
    }
    void clear_recent() noexcept;
    /// ⌊x·r / 2^64⌋: x reduced to [0, r) by a multiply (Lemire), no division.
    static std::uint64_t reduce(std::uint64_t x, std::uint64_t r) noexcept {
        return static_cast<std::uint64_t>((static_cast<UInt128>(x) * r) >> 64);
    }
    // Where a flow's (first group of) probes fall, located from its hash when
    // needed (a multiply or two) rather than stored.
    struct Probes {
        std::uint64_t first = 0;  // g_0; blocked: the block's first cell
        std::uint64_t step = 0;   // g_{i+1} − g_i mod m; blocked: 7-bit offsets in the block
    };
    // Double hashing modulo the prime m without division: a = ⌊h1·m/2^64⌋,
    // b = 1 + ⌊h2·(m−1)/2^64⌋ ∈ [1, m), g_i = a + i·b mod m. Every b is a unit
    // mod the prime m, so the k < m probes are distinct and P(cell j is probed) = k/m.
    //
    // Blocked: the block is ⌊h1·β/2^64⌋ and the offsets are consecutive 7-bit
    // fields of h2 (9 per word; further words by remixing). The block depends
    // on the top bits of h1 only, so offsets and block are independent, and
    // each probe is uniform over its block's 128 cells (with repetition).
    Probes locate(const Hash128& hash) const noexcept {
        if (blocked_) {
            return Probes{reduce(hash.h1 ^ seed1_, blocks_) * lifecycle_block_cells, hash.h2 ^ seed2_};
        }
        return Probes{reduce(hash.h1 ^ seed1_, m_), 1 + reduce(hash.h2 ^ seed2_, m_ - 1)};
    }
    bool observe_slow(const Hash128& hash, std::int64_t timestamp_ns, std::uint8_t tcp_flags) noexcept;
    void prefetch_probes(const Probes& probes) const noexcept;

    void generate(const Hash128& hash, std::uint64_t* out) const noexcept;
    void generate(const Probes& probes, std::uint64_t* out) const noexcept;
    std::uint32_t ended_block_fill(std::uint64_t block) const noexcept;
    Hash128 second_group(const Hash128& hash) const noexcept;
    std::uint32_t cell(std::uint64_t i) const noexcept {
        return static_cast<std::uint32_t>(cells_[i >> 4] >> ((i & 15) << 2)) & 15u;
    }
    Scan scan(const std::uint64_t* pos) const noexcept;
    void touch(const std::uint64_t* pos, const Scan& s) noexcept;
    struct BlockResult {
        bool current = false;  // every probed cell already held the current stamp
        bool is_new = false;   // some probed cell was zero
    };
    BlockResult refresh_block(const Probes& probes) noexcept;
    simd::BlockRefresh refresh_block_words(std::uint64_t* cells, std::uint64_t offsets) const noexcept;
    simd::BlockRefresh refresh_block_vector(std::uint64_t* cells, std::uint64_t offsets) const noexcept;
    void note_end(const std::uint64_t* pos) noexcept;
    void advance_slow(std::int64_t timestamp_ns) noexcept;
    void rotate_once() noexcept;
    void close_segment() noexcept;
    /// Expected ends missed behind the open ended segment's, at ended fpr f.
    double ended_segment_misses(double f) const noexcept;
    void close_ended_segment() noexcept;
    /// Missed new flows behind the open segment's detections, given the fpr
    /// at its end: the bounds' mean (at the end fpr), the estimate's mean
    /// and its variance.
    struct MissedFlows {
        double bound_mean = 0;
        double mean = 0;
        double variance = 0;
    };
    MissedFlows segment_misses(double end_fpr) const noexcept;
    /// Two-choice's token errors of a generation (or of several, summed): the
    /// new flows missed, the highest fpr they were counted at, and the bound on
    /// misplaced token moves. Each shifts one token until the generation leaves.
    struct TokenErrors {
        MissedFlows hidden;
        double fpr = 0;
        double misplaced = 0;
        TokenErrors& operator+=(const TokenErrors& other) noexcept {
            hidden.bound_mean += other.hidden.bound_mean;
            hidden.mean += other.hidden.mean;
            hidden.variance += other.hidden.variance;
            fpr = fpr > other.fpr ? fpr : other.fpr;
            misplaced += other.misplaced;
            return *this;
        }
        /// What the generation's expiry count may be off by (its variance term).
        double expiry_variance() const noexcept { return hidden.bound_mean + misplaced; }
    };
    using FillHistogram = std::array<std::uint64_t, lifecycle_block_cells + 1>;
    double current_fpr() const noexcept;
    double ended_fpr() const noexcept;
    double blocked_fpr(const FillHistogram& blocks_by_fill) const noexcept;
    double estimate(double zeros) const noexcept;
    double estimate_variance(double zeros) const noexcept;

    FlowLifecycleConfig config_;
    FlowLifecycleSizing sizing_;
    std::uint64_t m_ = 0;
    std::uint32_t k_ = 0;
    std::uint32_t live_ = 0;  // G + 1
    std::int64_t period_ns_ = 0;
    std::uint64_t seed1_ = 0, seed2_ = 0;
    bool blocked_ = false;
    bool vector_kernels_ = false;  // blocked and simd::level() was avx512 at construction
    std::uint64_t blocks_ = 0;   // β (blocked)
    double log_spared_ = 0;      // ln(1 − p), p = P(a given flow probes a given cell)
    double block_hit_ = 0;       // blocked: q = 1 − (1 − 1/128)^k, P(a flow probes a cell of its block)
    double pair_exponent_ = 0;   // blocked: 2 − (1 − (1 − 2/128)^k)/q (estimate_variance)

    CacheAlignedVector<std::uint64_t> cells_;  // 16 cells of 4 bits per word
    DirtyTrackedWords ended_bits_;  // 1 bit per position, cleared per interval
    std::vector<std::uint8_t> block_nonzero_;  // blocked: non-zero cells per block (0..128)
    std::vector<Recent> recent_;
    std::uint64_t recent_mask_ = 0;
    std::uint64_t nonzero_ = 0;
    std::uint64_t ended_ones_ = 0;
    // Blocked: how many blocks have j non-zero cells (seen filter) or j set
    // bits (ended filter), j = 0..128, and (j/128)^k: f = Σ_j blocks(j)·(j/128)^k / β.
    FillHistogram fill_blocks_{};
    FillHistogram ended_fill_blocks_{};
    std::array<double, lifecycle_block_cells + 1> fill_power_{};

    bool started_ = false;
    std::int64_t gen_start_ns_ = 0;
    std::int64_t next_boundary_ns_ = std::numeric_limits<std::int64_t>::min();
    std::uint32_t cur_stamp_ = 1;
    std::uint32_t written_stamps_ = 0;  // bit s: some cell may hold stamp s (rotate_once)
    std::array<std::uint8_t, 16> age_of_{};          // stamp → age (0..G) or dead
    std::array<std::uint8_t, 16> stamp_at_age_{};    // age 0..14 → stamp
    std::array<std::int64_t, 16> tokens_{};          // flows by stamp of their last packet
    std::array<TokenErrors, 16> token_errors_{};     // by generation stamp

    // Segments of at most segment_flows flows, so a filter's fpr changes
    // little within one: new flows for the seen filter (the current one ends
    // also at a boundary or the interval's start), ended flows for the ended filter.
    static constexpr std::uint64_t segment_flows = 256;
    std::uint64_t seg_new_ = 0;
    std::uint64_t seg_moves_ = 0;
    double seg_start_fpr_ = 0;
    // Interval.
    std::uint64_t packets_ = 0;
    std::uint64_t new_flows_ = 0;
    std::uint64_t ended_ = 0;
    // Expected ends missed behind the closed segments' ends, each charged the
    // ended filter's rate at its segment's close (the rate only grows within
    // an interval), and the ends of the open segment.
    double ended_mu_ = 0;
    std::uint64_t ended_seg_ = 0;
    double undercount_mu_ = 0;
    double expired_est_ = 0;
    double expired_var_ = 0;
    double max_fpr_ = 0;
    std::uint64_t generations_advanced_ = 0;
    std::uint64_t cell_passes_ = 0;
};

}  // namespace flowsketch::core
