// Packet time is clamped at the source so interval arithmetic cannot overflow
// (found by fuzzing: a pcapng timestamp beyond the year 2262).
#include <gtest/gtest.h>

#include <limits>

#include "capture/frame.hpp"

namespace flowsketch::capture {
namespace {

TEST(ClampTimestamp, OrdinaryTimesAreExact) {
    EXPECT_EQ(clamp_timestamp_ns(1'700'000'000, 123'456'789), 1'700'000'000'123'456'789);
    EXPECT_EQ(clamp_timestamp_ns(0, 0), 0);
}

TEST(ClampTimestamp, FarFutureAndNegativeTimesSaturate) {
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(clamp_timestamp_ns(max, 999'999'999), max_timestamp_ns);
    EXPECT_EQ(clamp_timestamp_ns(max_timestamp_ns / 1'000'000'000, 999'999'999), max_timestamp_ns);
    EXPECT_EQ(clamp_timestamp_ns(-5, 0), 0);
    EXPECT_EQ(clamp_timestamp_ns(5, -1), 0);
    // A subsecond field out of range (damaged file) cannot carry into seconds.
    EXPECT_EQ(clamp_timestamp_ns(1, 2'500'000'000), 1'500'000'000);
}

}  // namespace
}  // namespace flowsketch::capture
