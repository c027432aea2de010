#include "core/sketch/counting_bloom_filter.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace flowsketch::core {

double counting_overflow_bound(double m, double j) noexcept {
    return m * std::pow(std::numbers::e * std::numbers::ln2 / j, j);
}

double counting_overflow_binomial_bound(double m, double n, std::uint32_t k,
                                        std::uint32_t j) noexcept {
    // Binomial(t, p) with t = n·k, p = 1/m; terms in log space, ln C(t, i)
    // built up incrementally (std::lgamma is not thread-safe in glibc).
    const double t = std::floor(n * k);
    const double p = 1.0 / m;
    if (j == 0) return m;
    if (static_cast<double>(j) > t) return 0.0;
    const double log_p = std::log(p);
    const double log_q = std::log1p(-p);
    double log_choose = 0.0;
    auto term = [&](double i) { return std::exp(log_choose + i * log_p + (t - i) * log_q); };
    if (static_cast<double>(j) <= t * p + 1.0) {  // near or below the mean: 1 − the head
        double head = 0.0;
        for (std::uint32_t i = 0; i < j; ++i) {
            if (i > 0) log_choose += std::log((t - i + 1) / i);
            head += term(i);
        }
        return m * std::clamp(1.0 - head, 0.0, 1.0);
    }
    for (std::uint32_t i = 1; i <= j; ++i) log_choose += std::log((t - i + 1) / i);
    double tail = 0.0;
    for (double i = j; i <= t; i += 1.0) {
        if (i > j) log_choose += std::log((t - i + 1) / i);
        const double x = term(i);
        tail += x;
        if (x < tail * 1e-17) break;
    }
    return m * std::min(1.0, tail);
}

CountingBloomFilter::CountingBloomFilter(const CountingBloomParams& params) : params_(params) {
    if (params.k < 1 || params.k > max_probes) {
        throw std::invalid_argument("counting Bloom filter k must be in 1.." +
                                    std::to_string(max_probes));
    }
    if (params.counters < 1 || params.counters > (std::uint64_t{1} << 36)) {
        throw std::invalid_argument("counting Bloom filter size must be in 1..2^36 counters, got " +
                                    std::to_string(params.counters));
    }
    switch (params.counter_bits) {
        case 4: bits_log_ = 2; break;
        case 8: bits_log_ = 3; break;
        case 16: bits_log_ = 4; break;
        default:
            throw std::invalid_argument("counter width must be 4, 8 or 16 bits, got " +
                                        std::to_string(params.counter_bits));
    }
    per_word_log_ = 6 - bits_log_;
    per_word_mask_ = (std::uint64_t{1} << per_word_log_) - 1;
    max_value_ = (1u << params.counter_bits) - 1;
    probes_ = ProbeGenerator(params.scheme, params.counters, params.k, params.seed);
    const std::uint64_t per_word = std::uint64_t{1} << per_word_log_;
    words_.assign(static_cast<std::size_t>((params.counters + per_word - 1) / per_word), 0);
}

void CountingBloomFilter::increment(std::uint64_t index) noexcept {
    const std::uint32_t shift = static_cast<std::uint32_t>((index & per_word_mask_) << bits_log_);
    std::uint64_t& word = words_[index >> per_word_log_];
    if ((word >> shift & max_value_) != max_value_) word += std::uint64_t{1} << shift;
}

void CountingBloomFilter::decrement(std::uint64_t index) noexcept {
    const std::uint32_t shift = static_cast<std::uint32_t>((index & per_word_mask_) << bits_log_);
    std::uint64_t& word = words_[index >> per_word_log_];
    const std::uint64_t value = word >> shift & max_value_;
    if (value != 0 && value != max_value_) word -= std::uint64_t{1} << shift;
}

void CountingBloomFilter::insert(const Hash128& hash) noexcept {
    std::uint64_t pos[max_probes];
    probes_.generate(hash, pos);
    for (std::uint32_t i = 0; i < params_.k; ++i) increment(pos[i]);
}

bool CountingBloomFilter::erase(const Hash128& hash) noexcept {
    std::uint64_t pos[max_probes];
    probes_.generate(hash, pos);
    // A repeated probe was incremented twice: it needs a count of two.
    for (std::uint32_t i = 0; i < params_.k; ++i) {
        std::uint32_t needed = 0;
        for (std::uint32_t j = 0; j < params_.k; ++j) needed += pos[j] == pos[i] ? 1u : 0u;
        const std::uint32_t value = counter(pos[i]);
        if (value != max_value_ && value < needed) return false;
    }
    for (std::uint32_t i = 0; i < params_.k; ++i) decrement(pos[i]);
    return true;
}

bool CountingBloomFilter::contains(const Hash128& hash) const noexcept {
    std::uint64_t pos[max_probes];
    probes_.generate(hash, pos);
    for (std::uint32_t i = 0; i < params_.k; ++i) {
        if (counter(pos[i]) == 0) return false;
    }
    return true;
}

std::uint64_t CountingBloomFilter::saturated_count() const noexcept {
    std::uint64_t n = 0;
    for (std::uint64_t i = 0; i < params_.counters; ++i) n += counter(i) == max_value_ ? 1u : 0u;
    return n;
}

std::uint64_t CountingBloomFilter::nonzero_count() const noexcept {
    std::uint64_t n = 0;
    for (std::uint64_t i = 0; i < params_.counters; ++i) n += counter(i) != 0 ? 1u : 0u;
    return n;
}

std::uint32_t CountingBloomFilter::max_counter() const noexcept {
    std::uint32_t best = 0;
    for (std::uint64_t i = 0; i < params_.counters; ++i) best = std::max(best, counter(i));
    return best;
}

double CountingBloomFilter::observed_false_positive_rate() const noexcept {
    const double fill =
        static_cast<double>(nonzero_count()) / static_cast<double>(params_.counters);
    return std::pow(fill, params_.k);
}

}  // namespace flowsketch::core
