// The snapshot pool: snapshots given back are taken again (their memory used
// again), at most `capacity` are kept, and once it knows their shape the pool
// keeps spares ready whose sketches a window's lanes are copied into.
#include "src/sinks/snapshot_pool.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <utility>

#include "core/measure/flow_measurement.hpp"
#include "tests/support/measurement_support.hpp"

namespace flowsketch::app {
namespace {

core::MeasurementConfig small_config() {
    core::MeasurementConfig config;
    config.sketch =
        core::CountMinParams::for_error(0.01, 0.01, core::CountMinVariant::kirsch_mitzenmacher);
    config.extra_keys = {core::KeySpec::parse("dst")};
    config.track_flows = false;
    return config;
}

bool wait_until_ready(const SnapshotPool& pool, std::size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (pool.ready() < count) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

TEST(SnapshotPool, GivesBackWhatWasGivenAndKeepsAtMostItsCapacity) {
    core::FlowMeasurement measurement(small_config());
    measurement.add_batch(flowsketch::testing::skewed_stream(1000, 50, 3));
    SnapshotPool pool(2, 0);
    EXPECT_TRUE(pool.take().value.keys.empty());  // nothing given back yet

    reports::Snapshot given;
    given.value = measurement.window_value(core::Window::interval);
    const std::uint64_t* storage = given.value.keys.front().sketch.counters().data();
    pool.give_back(std::move(given));
    EXPECT_EQ(pool.ready(), 1u);
    reports::Snapshot taken = pool.take();
    ASSERT_FALSE(taken.value.keys.empty());
    EXPECT_EQ(taken.value.keys.front().sketch.counters().data(), storage);
    EXPECT_EQ(pool.ready(), 0u);

    for (int i = 0; i < 4; ++i) {
        reports::Snapshot more;
        more.value = measurement.window_value(core::Window::interval);
        pool.give_back(std::move(more));
    }
    EXPECT_EQ(pool.ready(), 2u);
}

TEST(SnapshotPool, KeepsSparesOfTheShapeItWasShown) {
    core::FlowMeasurement measurement(small_config());
    measurement.add_batch(flowsketch::testing::skewed_stream(1000, 50, 3));
    SnapshotPool pool(8, 3);
    EXPECT_EQ(pool.ready(), 0u);  // no spares before the shape is known
    const core::WindowValue model = measurement.window_value(core::Window::interval);
    pool.stock(measurement.window_value_params());
    ASSERT_TRUE(wait_until_ready(pool, 3));
    EXPECT_EQ(pool.ready(), 3u);  // spares, not more

    reports::Snapshot spare = pool.take();
    ASSERT_EQ(spare.value.keys.size(), model.keys.size());
    std::vector<const std::uint64_t*> storage;
    for (std::size_t k = 0; k < model.keys.size(); ++k) {
        EXPECT_EQ(spare.value.keys[k].sketch.params(), model.keys[k].sketch.params()) << k;
        storage.push_back(spare.value.keys[k].sketch.counters().data());
    }
    // A window made in the spare uses its memory and is the window made anew.
    const core::WindowValue filled =
        measurement.window_value(core::Window::interval, std::move(spare.value));
    for (std::size_t k = 0; k < storage.size(); ++k)
        EXPECT_EQ(filled.keys[k].sketch.counters().data(), storage[k]);
    EXPECT_EQ(filled.serialize(), model.serialize());
    // Taking one makes another.
    ASSERT_TRUE(wait_until_ready(pool, 3));
}

}  // namespace
}  // namespace flowsketch::app
