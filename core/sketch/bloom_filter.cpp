#include "core/sketch/bloom_filter.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace flowsketch::core {
namespace {

constexpr std::uint64_t max_bits = std::uint64_t{1} << 40;

}  // namespace

double bloom_false_positive_rate(double m, double n, std::uint32_t k) noexcept {
    const double kd = k;
    return std::pow(-std::expm1(-kd * n / m), kd);
}

std::uint32_t bloom_optimal_k(double m, double n) noexcept {
    if (!(n > 0.0) || !(m > 0.0)) return 1;
    const double real_k = (m / n) * std::numbers::ln2;
    const double lo_d = std::clamp(std::floor(real_k), 1.0, static_cast<double>(max_probes));
    const double hi_d = std::clamp(std::ceil(real_k), 1.0, static_cast<double>(max_probes));
    const auto lo = static_cast<std::uint32_t>(lo_d);
    const auto hi = static_cast<std::uint32_t>(hi_d);
    return bloom_false_positive_rate(m, n, hi) < bloom_false_positive_rate(m, n, lo) ? hi : lo;
}

double bloom_lower_bound_bits(double n, double epsilon) noexcept {
    return n * std::log2(1.0 / epsilon);
}

double bloom_space_ratio(double m, double n, double epsilon) noexcept {
    return m / bloom_lower_bound_bits(n, epsilon);
}

BloomParams BloomParams::for_rate(std::uint64_t n, double rate, ProbeScheme scheme,
                                  BloomLayout layout, std::uint64_t seed) {
    if (n < 1) throw std::invalid_argument("Bloom filter sizing needs n >= 1");
    if (!(rate > 0.0 && rate < 1.0)) {
        throw std::invalid_argument("Bloom filter target rate must be in (0, 1), got " +
                                    std::to_string(rate));
    }
    BloomParams p;
    p.scheme = scheme;
    p.layout = layout;
    p.seed = seed;
    const double k = std::ceil(std::log2(1.0 / rate));
    if (k > max_probes) throw std::invalid_argument("Bloom filter target rate too small");
    p.k = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(k));
    const double m = std::ceil(static_cast<double>(n) * p.k / std::numbers::ln2);
    if (m > static_cast<double>(max_bits)) throw std::invalid_argument("Bloom filter too large");
    p.bits = static_cast<std::uint64_t>(m);
    if (layout == BloomLayout::partitioned && p.bits % p.k != 0) {
        p.bits += p.k - p.bits % p.k;
    }
    return p;
}

BloomFilter::BloomFilter(const BloomParams& params) : params_(params) {
    if (params.k < 1 || params.k > max_probes) {
        throw std::invalid_argument("Bloom filter k must be in 1.." + std::to_string(max_probes));
    }
    if (params.bits < 1 || params.bits > max_bits) {
        throw std::invalid_argument("Bloom filter size must be in 1..2^40 bits, got " +
                                    std::to_string(params.bits));
    }
    if (params.layout != BloomLayout::standard && params.layout != BloomLayout::partitioned) {
        throw std::invalid_argument("unknown Bloom filter layout");
    }
    if (params.layout == BloomLayout::partitioned) {
        if (params.bits % params.k != 0) {
            throw std::invalid_argument("partitioned Bloom filter needs bits divisible by k");
        }
        part_bits_ = params.bits / params.k;
    } else {
        part_bits_ = params.bits;
    }
    probes_ = ProbeGenerator(params.scheme, part_bits_, params.k, params.seed);
    words_.assign(static_cast<std::size_t>((params.bits + 63) / 64), 0);
}

void BloomFilter::positions(const Hash128& hash, std::uint64_t* out) const noexcept {
    probes_.generate(hash, out);
    if (params_.layout == BloomLayout::partitioned) {
        for (std::uint32_t i = 0; i < params_.k; ++i) out[i] += i * part_bits_;
    }
}

void BloomFilter::insert(const Hash128& hash) noexcept {
    std::uint64_t pos[max_probes];
    positions(hash, pos);
    for (std::uint32_t i = 0; i < params_.k; ++i) {
        words_[pos[i] >> 6] |= std::uint64_t{1} << (pos[i] & 63);
    }
    ++insertions_;
}

bool BloomFilter::contains(const Hash128& hash) const noexcept {
    std::uint64_t pos[max_probes];
    positions(hash, pos);
    for (std::uint32_t i = 0; i < params_.k; ++i) {
        if ((words_[pos[i] >> 6] >> (pos[i] & 63) & 1) == 0) return false;
    }
    return true;
}

std::uint64_t BloomFilter::count_ones() const noexcept {
    std::uint64_t ones = 0;
    for (const std::uint64_t w : words_) ones += static_cast<std::uint64_t>(std::popcount(w));
    return ones;
}

double BloomFilter::fill_ratio() const noexcept {
    return static_cast<double>(count_ones()) / static_cast<double>(params_.bits);
}

double BloomFilter::formula_false_positive_rate() const noexcept {
    return bloom_false_positive_rate(static_cast<double>(params_.bits),
                                     static_cast<double>(insertions_), params_.k);
}

double BloomFilter::observed_false_positive_rate() const noexcept {
    if (params_.layout == BloomLayout::standard) return std::pow(fill_ratio(), params_.k);
    double product = 1.0;
    for (std::uint32_t part = 0; part < params_.k; ++part) {
        std::uint64_t ones = 0;
        const std::uint64_t begin = part * part_bits_;
        const std::uint64_t end = begin + part_bits_;
        for (std::uint64_t bit = begin; bit < end;) {
            // Whole words where possible, single bits at the edges.
            if ((bit & 63) == 0 && bit + 64 <= end) {
                ones += static_cast<std::uint64_t>(std::popcount(words_[bit >> 6]));
                bit += 64;
            } else {
                ones += words_[bit >> 6] >> (bit & 63) & 1;
                ++bit;
            }
        }
        product *= static_cast<double>(ones) / static_cast<double>(part_bits_);
    }
    return product;
}

double BloomFilter::log_survival_per_item() const noexcept {
    const double m = static_cast<double>(params_.bits);
    if (params_.layout == BloomLayout::standard) return params_.k * std::log1p(-1.0 / m);
    return std::log1p(-1.0 / static_cast<double>(part_bits_));
}

std::uint64_t BloomFilter::zeros_of(std::span<const std::uint64_t> words,
                                    std::uint64_t bits) noexcept {
    std::uint64_t ones = 0;
    for (const std::uint64_t w : words) ones += static_cast<std::uint64_t>(std::popcount(w));
    return bits - ones;
}

double BloomFilter::estimate_cardinality() const noexcept {
    const std::uint64_t zeros = zeros_of(words_, params_.bits);
    if (zeros == 0) return std::numeric_limits<double>::infinity();
    if (params_.bits == 1) return 0.0;
    const double ratio = static_cast<double>(zeros) / static_cast<double>(params_.bits);
    return std::log(ratio) / log_survival_per_item();
}

double BloomFilter::space_ratio_to_lower_bound() const noexcept {
    return bloom_space_ratio(static_cast<double>(params_.bits), static_cast<double>(insertions_),
                             observed_false_positive_rate());
}

void BloomFilter::check_compatible(const BloomFilter& other, const char* what) const {
    if (&other == this) {
        throw std::invalid_argument(std::string("cannot ") + what + " a Bloom filter with itself");
    }
    if (!(other.params_ == params_)) {
        throw std::invalid_argument(std::string("cannot ") + what +
                                    " Bloom filters with different size, k, scheme, layout or "
                                    "seed");
    }
}

void BloomFilter::union_with(const BloomFilter& other) {
    check_compatible(other, "union");
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
    insertions_ += other.insertions_;
}

void BloomFilter::halve() {
    if (params_.layout != BloomLayout::standard) {
        throw std::invalid_argument("only a standard-layout Bloom filter can be halved");
    }
    if (params_.bits < 2 || !std::has_single_bit(params_.bits)) {
        throw std::invalid_argument("only a Bloom filter whose size is a power of two (>= 2) "
                                    "can be halved");
    }
    const std::uint64_t half = params_.bits / 2;
    std::vector<std::uint64_t> halved(static_cast<std::size_t>((half + 63) / 64), 0);
    if (half >= 64) {
        const std::size_t half_words = static_cast<std::size_t>(half / 64);
        for (std::size_t i = 0; i < half_words; ++i) halved[i] = words_[i] | words_[i + half_words];
    } else {
        // Both halves live in word 0.
        const std::uint64_t low_mask = (std::uint64_t{1} << half) - 1;
        halved[0] = (words_[0] & low_mask) | ((words_[0] >> half) & low_mask);
    }
    words_ = std::move(halved);
    params_.bits = half;
    part_bits_ = half;
    probes_ = ProbeGenerator(params_.scheme, half, params_.k, params_.seed);
}

double BloomFilter::estimate_intersection(const BloomFilter& a, const BloomFilter& b) {
    a.check_compatible(b, "intersect");
    const double m = static_cast<double>(a.params_.bits);
    const auto z1 = static_cast<double>(zeros_of(a.words_, a.params_.bits));
    const auto z2 = static_cast<double>(zeros_of(b.words_, b.params_.bits));
    std::uint64_t ones_or = 0;
    for (std::size_t i = 0; i < a.words_.size(); ++i) {
        ones_or += static_cast<std::uint64_t>(std::popcount(a.words_[i] | b.words_[i]));
    }
    const double z_or = m - static_cast<double>(ones_or);
    if (z1 == 0.0 || z2 == 0.0 || z_or == 0.0) return std::numeric_limits<double>::infinity();
    const double estimate = std::log(m * z_or / (z1 * z2)) / -a.log_survival_per_item();
    return std::max(0.0, estimate);
}

}  // namespace flowsketch::core
