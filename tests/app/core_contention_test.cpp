// The reading thread's verdict on whether --threads 2 has a core for each
// thread: preemptions in a window mean the cores are taken, and the pipeline
// then measures alone for a while before it tries two threads again.
#include "src/core_contention.hpp"

#include <gtest/gtest.h>

namespace flowsketch::app {
namespace {

constexpr std::int64_t ms = 1'000'000;

TEST(CoreContention, QuietWindowsKeepTwoThreads) {
    CoreContention contention;
    long switches = 0;
    const auto count = [&] { return switches; };
    for (std::int64_t t = 1; t < 1000; t += 10) {
        switches += t % 100 == 1 ? 1 : 0;  // a stray preemption now and then
        EXPECT_FALSE(contention.decide(t * ms, count)) << t;
    }
}

TEST(CoreContention, PreemptedWindowRunsAloneThenTriesAgain) {
    CoreContention contention;
    long switches = 0;
    const auto count = [&] { return switches; };
    EXPECT_FALSE(contention.decide(1 * ms, count));
    switches += CoreContention::preemptions;
    EXPECT_FALSE(contention.decide(30 * ms, count));  // the window is not over
    EXPECT_TRUE(contention.decide(60 * ms, count));   // it was: the cores are taken
    EXPECT_TRUE(contention.decide(500 * ms, count));
    EXPECT_TRUE(contention.decide(1050 * ms, count));
    // A second later: judged on the switches since the verdict (none): two threads again.
    EXPECT_FALSE(contention.decide(1070 * ms, count));
    EXPECT_FALSE(contention.decide(1130 * ms, count));
}

TEST(CoreContention, TheRealClockStartsWithTwoThreads) {
    CoreContention contention;
    EXPECT_FALSE(contention.run_alone());
}

}  // namespace
}  // namespace flowsketch::app
