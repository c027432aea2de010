// A capture file walked frame by frame or in batches of changing sizes, as
// the capture tests compare readers: every frame's time, lengths and bytes,
// and how the walk ended.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "capture/file/pcap_file_source.hpp"
#include "tests/support/capture_builder.hpp"

namespace flowsketch::testing {

struct Walk {
    struct Record {
        std::int64_t timestamp_ns;
        std::uint32_t captured_length;
        std::uint32_t wire_length;
        Bytes data;
        bool operator==(const Record&) const = default;
    };
    std::vector<Record> records;
    capture::ReadStatus end = capture::ReadStatus::frame;
    std::string damage;
    bool in_place = false;
};

inline Walk walk(capture::PcapFileSource& source) {
    Walk w;
    w.in_place = source.reads_in_place();
    capture::Frame frame;
    for (;;) {
        const capture::ReadStatus status = source.next(frame);
        if (status != capture::ReadStatus::frame) {
            w.end = status;
            w.damage = source.damage_message();
            return w;
        }
        w.records.push_back({frame.timestamp_ns, frame.captured_length, frame.wire_length,
                             Bytes(frame.data, frame.data + frame.captured_length)});
    }
}

// The same walk through next_batch (the replay's path), with batches of
// changing sizes so that they end anywhere relative to the read blocks.
inline Walk walk_in_batches(capture::PcapFileSource& source) {
    constexpr std::size_t sizes[] = {1, 3, 64, 7, 256};
    Walk w;
    w.in_place = source.reads_in_place();
    std::vector<capture::Frame> frames(256);
    for (std::size_t call = 0;; ++call) {
        capture::ReadStatus status = capture::ReadStatus::frame;
        const std::size_t n = source.next_batch(
            std::span<capture::Frame>(frames.data(), sizes[call % std::size(sizes)]), status);
        if (n == 0) {
            EXPECT_NE(status, capture::ReadStatus::frame);
            w.end = status;
            w.damage = source.damage_message();
            return w;
        }
        EXPECT_EQ(status, capture::ReadStatus::frame);
        // Every frame of the batch is still intact: none was overwritten by a later read.
        for (std::size_t i = 0; i < n; ++i) {
            const capture::Frame& frame = frames[i];
            w.records.push_back({frame.timestamp_ns, frame.captured_length, frame.wire_length,
                                 Bytes(frame.data, frame.data + frame.captured_length)});
        }
    }
}


// An Ethernet frame of one UDP/IPv4 packet to port 53 from `port`.
inline Bytes frame_bytes(std::uint16_t port, std::size_t payload = 20) {
    return ethernet(ethertype_ipv4,
                             ipv4(17, udp(port, 53, payload)));
}

}  // namespace flowsketch::testing
