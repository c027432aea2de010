// HyperLogLog counters: estimates within their stated error, unions by
// register maximum, and the same estimate however the registers were built.
#include "core/sketch/hyperloglog.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "core/key/hash.hpp"

namespace flowsketch::core {
namespace {

std::uint64_t item(std::uint64_t i, std::uint64_t seed) { return hash64(&i, sizeof i, seed); }

// Over 40 seeds per size, the relative error's spread stays near 1.04/√m and
// no estimate falls outside 4σ (a 6e-5 chance each under the normal law).
TEST(HyperLogLog, EstimatesStayWithinTheirStandardError) {
    for (const std::uint64_t n : {10u, 100u, 1000u, 20000u, 200000u}) {
        double squares = 0;
        const int seeds = 40;
        for (int seed = 0; seed < seeds; ++seed) {
            HyperLogLog counter(10);
            for (std::uint64_t i = 0; i < n; ++i) counter.add(item(i, static_cast<std::uint64_t>(seed)));
            const double error = counter.estimate() / static_cast<double>(n) - 1;
            EXPECT_LT(std::abs(error), 4 * counter.relative_error()) << "n " << n << " seed " << seed;
            squares += error * error;
        }
        EXPECT_LT(std::sqrt(squares / seeds), 1.5 * hll::relative_error(1024)) << n;
    }
}

TEST(HyperLogLog, DuplicatesChangeNothing) {
    HyperLogLog once(12);
    HyperLogLog thrice(12);
    for (std::uint64_t i = 0; i < 5000; ++i) {
        once.add(item(i, 1));
        for (int r = 0; r < 3; ++r) thrice.add(item(i, 1));
    }
    EXPECT_EQ(once.estimate(), thrice.estimate());
    EXPECT_FALSE(thrice.add(item(17, 1)));
}

TEST(HyperLogLog, MergeIsTheUnion) {
    HyperLogLog a(11);
    HyperLogLog b(11);
    HyperLogLog both(11);
    for (std::uint64_t i = 0; i < 30000; ++i) {
        (i % 3 == 0 ? a : b).add(item(i, 7));
        both.add(item(i, 7));
    }
    a.merge(b);
    EXPECT_EQ(a.estimate(), both.estimate());
    EXPECT_TRUE(std::equal(a.register_values().begin(), a.register_values().end(), both.register_values().begin()));
    EXPECT_THROW(a.merge(HyperLogLog(10)), std::invalid_argument);
}

TEST(HyperLogLog, AssignedRegistersGiveTheSameEstimate) {
    HyperLogLog built(8);
    for (std::uint64_t i = 0; i < 777; ++i) built.add(item(i, 3));
    HyperLogLog copy(8);
    copy.assign(built.register_values());
    EXPECT_EQ(copy.estimate(), built.estimate());
    std::vector<std::uint8_t> bad(256, 0);
    bad[5] = hll::max_rank + 1;
    EXPECT_THROW(copy.assign(bad), std::invalid_argument);
    EXPECT_THROW(copy.assign(std::vector<std::uint8_t>(255, 0)), std::invalid_argument);
    copy.clear();
    EXPECT_EQ(copy.estimate(), 0.0);
}

TEST(HyperLogLog, RefusesSizesOutsideItsRange) {
    EXPECT_THROW(HyperLogLog(3), std::invalid_argument);
    EXPECT_THROW(HyperLogLog(17), std::invalid_argument);
}

}  // namespace
}  // namespace flowsketch::core
