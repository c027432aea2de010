#include "core/sketch/distinct_sketch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/sketch/count_min.hpp"
#include "core/sketch/primes.hpp"

namespace flowsketch::core {
namespace {

// One-sided tail of the normal distribution at t = 3.
constexpr double tail_at_t = 0.00135;

DistinctBounds bounded(double estimate, double sigma, double additive) noexcept {
    const double t = DistinctSketch::t;
    DistinctBounds b;
    b.estimate = estimate;
    b.upper = t * sigma < 1 ? estimate / (1 - t * sigma) : std::numeric_limits<double>::infinity();
    b.lower = std::clamp(estimate / (1 + t * sigma) - additive, 0.0, estimate);
    return b;
}

}  // namespace

double DistinctSketchParams::count_min_delta() const noexcept {
    return kirsch_mitzenmacher_delta(epsilon, width, depth);
}

double DistinctSketchParams::delta() const noexcept {
    return std::min(1.0, count_min_delta() + (depth + 2) * tail_at_t);
}

std::uint64_t DistinctSketchParams::planned_bytes() const noexcept {
    const std::uint64_t per_cell = (std::uint64_t{1} << register_bits) + sizeof(std::uint64_t) + sizeof(std::uint16_t);
    return cells() * per_cell + (std::uint64_t{1} << DistinctSketch::total_register_bits) + sizeof(DistinctSketch);
}

DistinctSketch::DistinctSketch(const DistinctSketchParams& params)
    : params_(params), registers_per_cell_(0), total_(DistinctSketch::total_register_bits) {
    if (params.width < 3 || !is_prime(params.width)) {
        throw std::invalid_argument("distinct sketch: the width must be a prime of at least 3");
    }
    if (params.depth == 0 || params.depth > 16) throw std::invalid_argument("distinct sketch: depth 1 to 16");
    if (params.register_bits < 4 || params.register_bits > 12) {
        throw std::invalid_argument("distinct sketch: between 2^4 and 2^12 registers per cell");
    }
    if (!(params.epsilon > 0 && params.epsilon < 1)) throw std::invalid_argument("distinct sketch: 0 < epsilon < 1");
    registers_per_cell_ = std::uint32_t{1} << params.register_bits;
    registers_.assign(params.cells() * registers_per_cell_, 0);
    scaled_sums_.assign(params.cells(), 0);
    zeros_.assign(params.cells(), 0);
    recount();
}

void DistinctSketch::columns(const Hash128& key, std::uint32_t* out) const noexcept {
    // Kirsch–Mitzenmacher: row j's column is h1 + j·h2 mod w.
    const std::uint64_t w = params_.width;
    const std::uint64_t a = key.h1 % w;
    const std::uint64_t b = key.h2 % w;
    std::uint64_t column = a;
    for (std::uint32_t row = 0; row < params_.depth; ++row) {
        out[row] = static_cast<std::uint32_t>(column);
        column += b;
        column -= column >= w ? w : 0;
    }
}

std::optional<double> DistinctSketch::add(const Hash128& key, std::uint64_t pair) noexcept {
    total_.add(pair);
    const hll::Position p = hll::position(pair, params_.register_bits);
    std::uint32_t cols[16];
    columns(key, cols);
    bool rose = false;
    for (std::uint32_t row = 0; row < params_.depth; ++row) {
        const std::size_t cell = std::size_t{row} * params_.width + cols[row];
        std::uint8_t& reg = registers_[cell * registers_per_cell_ + p.index];
        if (p.rank <= reg) continue;
        scaled_sums_[cell] += hll::scaled_term(p.rank) - hll::scaled_term(reg);
        zeros_[cell] = static_cast<std::uint16_t>(zeros_[cell] - (reg == 0 ? 1 : 0));
        reg = p.rank;
        rose = true;
    }
    if (!rose) return std::nullopt;
    return estimate_at(cols);
}

double DistinctSketch::estimate(const Hash128& key) const noexcept {
    std::uint32_t cols[16];
    columns(key, cols);
    return estimate_at(cols);
}

double DistinctSketch::estimate_at(const std::uint32_t* cols) const noexcept {
    double best = std::numeric_limits<double>::infinity();
    for (std::uint32_t row = 0; row < params_.depth; ++row) {
        const std::size_t cell = std::size_t{row} * params_.width + cols[row];
        best = std::min(best, hll::estimate(scaled_sums_[cell], zeros_[cell], registers_per_cell_));
    }
    return best;
}

DistinctBounds DistinctSketch::total() const noexcept {
    return bounded(total_.estimate(), total_.relative_error(), 0);
}

DistinctBounds DistinctSketch::bounds(const Hash128& key) const noexcept {
    return bounded(estimate(key), hll::relative_error(registers_per_cell_), params_.epsilon * total().upper);
}

void DistinctSketch::merge(const DistinctSketch& other) {
    if (!(other.params_ == params_)) {
        throw std::invalid_argument("distinct sketch: merging sketches of different dimensions");
    }
    for (std::size_t i = 0; i < registers_.size(); ++i) registers_[i] = std::max(registers_[i], other.registers_[i]);
    total_.merge(other.total_);
    recount();
}

void DistinctSketch::clear() noexcept {
    std::fill(registers_.begin(), registers_.end(), std::uint8_t{0});
    total_.clear();
    recount();
}

std::size_t DistinctSketch::memory_bytes() const noexcept {
    return sizeof(*this) + registers_.capacity() + scaled_sums_.capacity() * sizeof(std::uint64_t) +
           zeros_.capacity() * sizeof(std::uint16_t) + total_.memory_bytes() - sizeof(HyperLogLog);
}

std::vector<std::uint8_t> DistinctSketch::register_bytes() const {
    std::vector<std::uint8_t> bytes(registers_);
    const auto total = total_.register_values();
    bytes.insert(bytes.end(), total.begin(), total.end());
    return bytes;
}

void DistinctSketch::assign_registers(const std::vector<std::uint8_t>& bytes) {
    const std::size_t cells = registers_.size();
    if (bytes.size() != cells + total_.registers()) {
        throw std::invalid_argument("distinct sketch: wrong number of registers");
    }
    if (std::any_of(bytes.begin(), bytes.end(), [](std::uint8_t v) { return v > hll::max_rank; })) {
        throw std::invalid_argument("distinct sketch: a register above the highest rank");
    }
    std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cells), registers_.begin());
    total_.assign(std::span<const std::uint8_t>(bytes).subspan(cells));
    recount();
}

void DistinctSketch::recount() noexcept {
    for (std::size_t cell = 0; cell < scaled_sums_.size(); ++cell) {
        std::uint64_t sum = 0;
        std::uint32_t zeros = 0;
        const std::uint8_t* regs = registers_.data() + cell * registers_per_cell_;
        for (std::uint32_t i = 0; i < registers_per_cell_; ++i) {
            sum += hll::scaled_term(regs[i]);
            zeros += regs[i] == 0 ? 1 : 0;
        }
        scaled_sums_[cell] = sum;
        zeros_[cell] = static_cast<std::uint16_t>(zeros);
    }
}

}  // namespace flowsketch::core
