// The sinks' threads take the lowest priority, and only they: the measuring
// thread that started them keeps its own.
#include "src/sinks/background_priority.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <thread>

namespace flowsketch::app {
namespace {

int own_niceness() { return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())); }

TEST(BackgroundPriority, LowersTheCallingThreadAlone) {
    const int before = own_niceness();
    ASSERT_LT(before, 19) << "run the test at a priority above the lowest";
    int in_thread = before;
    std::thread sink([&in_thread] {
        lower_this_thread_priority();
        in_thread = own_niceness();
    });
    sink.join();
    EXPECT_EQ(in_thread, 19);
    EXPECT_EQ(own_niceness(), before);
}

}  // namespace
}  // namespace flowsketch::app
