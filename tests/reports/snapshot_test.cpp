// Snapshot files: a window value with what its report needs, compressed or
// not, read back the same or refused whole with a message naming the damage.
#include "reports/snapshot.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/measure/flow_measurement.hpp"
#include "reports/formats/json.hpp"
#include "tests/support/measurement_support.hpp"

namespace flowsketch::reports {
namespace {

Snapshot measured_snapshot() {
    core::MeasurementConfig config;
    config.sketch = core::CountMinParams::for_error(0.01, 0.01, core::CountMinVariant::kirsch_mitzenmacher);
    config.top_k = 5;
    config.extra_keys = {core::KeySpec::parse("src/24"), core::KeySpec::parse("dst:distinct=sport")};
    config.lifecycle.max_flows = 10000;
    core::FlowMeasurement measurement(config);
    const std::vector<core::PacketRecord> stream = flowsketch::testing::skewed_stream(20000, 800, 3);
    measurement.add_batch(stream);
    Snapshot snapshot;
    snapshot.value = measurement.window_value(core::Window::interval);
    snapshot.value.start_ns = 1'700'000'000'000'000'000;
    snapshot.value.end_ns = 1'700'000'010'000'000'000;
    snapshot.value.frames = 20042;
    snapshot.value.skipped = {{"non_ip", 42}};
    snapshot.context.probe = "edge-1.example";
    snapshot.context.memory_bytes = measurement.memory_bytes();
    snapshot.context.key_memory_bytes = {1000, 2000};
    snapshot.context.flows.seen_filter = "blocked";
    snapshot.context.flows.idle_timeout = 60;
    snapshot.context.flows.generations = 8;
    snapshot.context.flows.max_flows = 10000;
    snapshot.context.flows.memory_bytes = 4096;
    snapshot.context.warnings = {"input cut short"};
    snapshot.context.truncated = true;
    return snapshot;
}

std::string decode_error(std::span<const std::uint8_t> bytes) {
    try {
        decode_snapshot(bytes);
    } catch (const SnapshotError& e) {
        return e.what();
    }
    return "accepted";
}

TEST(Snapshot, ReadsBackTheReportItWasTakenFor) {
    const Snapshot snapshot = measured_snapshot();
    const std::string expected = to_json(report_from_value(ReportKind::interval, snapshot.value, snapshot.context));
    EXPECT_NE(expected.find("\"probe\":\"edge-1.example\""), std::string::npos);
    for (const SnapshotCompression compression : {SnapshotCompression::none, SnapshotCompression::zstd}) {
        const std::vector<std::uint8_t> bytes = encode_snapshot(snapshot, compression);
        const Snapshot back = decode_snapshot(bytes);
        EXPECT_EQ(to_json(report_from_value(ReportKind::interval, back.value, back.context)), expected);
        EXPECT_EQ(back.context.warnings, snapshot.context.warnings);
        EXPECT_EQ(back.value.serialize(), snapshot.value.serialize());
    }
    // Sketches of a short window are mostly zeros: compression must pay.
    EXPECT_LT(encode_snapshot(snapshot, SnapshotCompression::zstd).size() * 4,
              encode_snapshot(snapshot, SnapshotCompression::none).size());
}

TEST(Snapshot, EveryTruncationAndEveryByteFlipIsRefused) {
    const Snapshot snapshot = measured_snapshot();
    for (const SnapshotCompression compression : {SnapshotCompression::none, SnapshotCompression::zstd}) {
        const std::vector<std::uint8_t> bytes = encode_snapshot(snapshot, compression);
        const std::span<const std::uint8_t> all(bytes);
        // Every length short of the whole (stepping through the large body).
        for (std::size_t size = 0; size < bytes.size(); size += size < 512 ? 1 : 997) {
            const std::string error = decode_error(all.first(size));
            EXPECT_TRUE(error.find("truncated") != std::string::npos || (size < 4 && error.find("not a") == 0))
                << size << ": " << error;
        }
        std::vector<std::uint8_t> longer = bytes;
        longer.push_back(0);
        EXPECT_NE(decode_error(longer).find("after the snapshot's end"), std::string::npos);
        for (std::size_t at = 0; at < bytes.size(); at += at < 64 ? 1 : 331) {
            std::vector<std::uint8_t> damaged = bytes;
            damaged[at] ^= 0x10;
            EXPECT_NE(decode_error(damaged), "accepted") << "byte " << at;
        }
        std::vector<std::uint8_t> flipped = bytes;
        flipped[bytes.size() / 2] ^= 1;
        EXPECT_NE(decode_error(flipped).find("checksum mismatch"), std::string::npos);
    }
}

TEST(Snapshot, ForeignAndNewerFilesAreNamedAsSuch) {
    const std::vector<std::uint8_t> pcap = {0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(decode_error(pcap), "not a flowsketch snapshot (no FSNP magic)");
    // A window value alone (the sketches' envelope) is not a snapshot either.
    EXPECT_EQ(decode_error(measured_snapshot().value.serialize()), "not a flowsketch snapshot (no FSNP magic)");
    std::vector<std::uint8_t> newer = encode_snapshot(measured_snapshot(), SnapshotCompression::none);
    newer[4] = 2;
    EXPECT_EQ(decode_error(newer), "snapshot format version 2; this build reads version 1");
}

TEST(Snapshot, FileNamesSortByTimeAndSayTheWindow) {
    Snapshot snapshot = measured_snapshot();
    EXPECT_EQ(snapshot_file_name(snapshot), "edge-1.example-20231114T221320.000Z-interval.fsnap");
    snapshot.value.window = core::Window::run;
    snapshot.value.start_ns += 123'456'789;
    EXPECT_EQ(snapshot_file_name(snapshot), "edge-1.example-20231114T221320.123Z-run.fsnap");
}

TEST(Snapshot, ProbeNamesAreSafeInFilesCellsAndLabels) {
    EXPECT_TRUE(valid_probe_name("edge-1.example"));
    EXPECT_TRUE(valid_probe_name("a_b:c"));
    EXPECT_FALSE(valid_probe_name(""));
    EXPECT_FALSE(valid_probe_name("a b"));
    EXPECT_FALSE(valid_probe_name("a,b"));
    EXPECT_FALSE(valid_probe_name("a/b"));
    EXPECT_FALSE(valid_probe_name(std::string(65, 'a')));
}

}  // namespace
}  // namespace flowsketch::reports
