// The Source interface over the file source: a capture read through Source&
// gives the frames the concrete type gives, and close() ends the reading.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "capture/file/pcap_file_source.hpp"
#include "capture/source.hpp"

namespace flowsketch::capture {
namespace {

std::vector<Frame> read_all(Source& source, std::size_t batch_size, ReadStatus& last) {
    std::vector<Frame> frames;
    std::vector<Frame> batch(batch_size);
    for (;;) {
        const std::size_t n = source.next_batch(batch, last);
        if (n == 0) return frames;
        frames.insert(frames.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n));
    }
}

TEST(Source, FileSourceThroughTheInterfaceGivesTheSameFrames) {
    for (const char* name : {"pcapplusplus-ip4_fragments.pcap", "pcapplusplus-ipv6.pcapng"}) {
        SCOPED_TRACE(name);
        const std::string path = std::string(FLOWSKETCH_PCAP_DIR) + "/" + name;
        PcapFileSource concrete(path, "");
        std::unique_ptr<Source> source = std::make_unique<PcapFileSource>(path, "");
        EXPECT_EQ(source->link_type(), concrete.link_type());
        ReadStatus status = ReadStatus::frame;
        const std::vector<Frame> via_interface = read_all(*source, 7, status);
        EXPECT_EQ(status, ReadStatus::end_of_file);
        std::size_t count = 0;
        Frame frame;
        while (concrete.next(frame) == ReadStatus::frame) {
            ASSERT_LT(count, via_interface.size());
            EXPECT_EQ(frame.timestamp_ns, via_interface[count].timestamp_ns);
            EXPECT_EQ(frame.captured_length, via_interface[count].captured_length);
            EXPECT_EQ(frame.wire_length, via_interface[count].wire_length);
            ++count;
        }
        EXPECT_EQ(count, via_interface.size());
        EXPECT_GT(count, 0u);
        const CaptureStats stats = source->stats();
        EXPECT_EQ(stats.received, 0u);  // files keep no capture counters
    }
}

TEST(Source, CloseEndsTheReading) {
    PcapFileSource source(std::string(FLOWSKETCH_PCAP_DIR) + "/zeek-mixed-vlan-mpls.pcap", "");
    std::array<Frame, 4> batch;
    ReadStatus status = ReadStatus::frame;
    ASSERT_GT(source.next_batch(batch, status), 0u);
    source.close();
    source.close();  // idempotent
    EXPECT_EQ(source.next_batch(batch, status), 0u);
    EXPECT_EQ(status, ReadStatus::end_of_file);
    EXPECT_EQ(source.frame_storage(), nullptr);
}

}  // namespace
}  // namespace flowsketch::capture
