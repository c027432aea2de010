// pcapng files of several interfaces and sections: each interface's link
// type, snapshot length and timestamp units, where libpcap 1.10 reads only
// the first interface.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "capture/file/pcap_file_source.hpp"
#include "tests/support/capture_builder.hpp"
#include "tests/support/capture_walk.hpp"

namespace flowsketch::capture {
namespace {

using testing::Bytes;
using testing::frame_bytes;
using testing::PcapngWriter;
using testing::Walk;
using testing::walk;
using testing::walk_in_batches;

// Files of several interfaces that libpcap 1.10 refuses past the first (tshark reads them
// whole; the counts are tshark's): every frame is read, each batch holds one interface's
// frames, and link_type() is that interface's.
TEST(PcapFileSource, PcapngInterfacesLibpcapRefusesAreRead) {
    struct Case {
        const char* file;
        std::map<int, std::uint64_t> frames_by_link_type;
        std::size_t interfaces;
    };
    const Case cases[] = {
        {"merged-ether-sll.pcapng", {{1, 1350}, {113, 518}}, 2},
        {"merged-snaplens.pcapng", {{1, 1397}}, 2},
        {"generated-pcapng-interfaces.pcapng", {{1, 62}, {12, 60}, {113, 61}}, 3},
        {"generated-pcapng-sections.pcapng", {{1, 40}, {12, 20}}, 3},
    };
    for (const Case& c : cases) {
        const std::string path = std::string(FLOWSKETCH_PCAP_DIR) + "/" + c.file;
        PcapFileSource source(path, "");
        ASSERT_TRUE(source.reads_interfaces()) << path;
        std::map<int, std::uint64_t> by_link;
        std::vector<Frame> frames(64);
        for (;;) {
            ReadStatus status = ReadStatus::frame;
            const std::size_t n = source.next_batch(frames, status);
            if (n == 0) {
                EXPECT_EQ(status, ReadStatus::end_of_file) << path << ": " << source.damage_message();
                break;
            }
            const auto& interface = source.interfaces().at(source.batch_interface());
            EXPECT_EQ(source.link_type(), interface.link_type);
            by_link[source.link_type()] += n;
        }
        EXPECT_EQ(by_link, c.frames_by_link_type) << path;
        EXPECT_EQ(source.interfaces().size(), c.interfaces) << path;
        EXPECT_EQ(source.unknown_interface_frames(), 0u);
    }
}

// Per interface: its own snapshot length (caplen over it is damage, as libpcap says for
// the first), its own timestamp units, and the section's first interface for a simple
// packet block, whose captured length is the original length cut to that snapshot.
TEST(PcapFileSource, PcapngEachInterfaceHasItsOwnSnapshotAndUnits) {
    PcapngWriter ng;
    ng.interface(1, 65535).interface(1, 60, 9).interface(101, 0, std::uint8_t{0x80 | 10});
    ng.packet(1, 1'700'000'000'000'000'123ULL, frame_bytes(1, 10));        // ns, 52 bytes: whole
    ng.packet(2, (std::uint64_t{1'700'000'000} << 10) + 512, testing::ipv4(17, testing::udp(1, 2)));  // 2^-10 s
    ng.simple_packet(62, frame_bytes(2));                                  // interface 0
    ng.packet(1, 1, frame_bytes(3, 100));                                  // 142 > 60: damage
    const Bytes bytes = ng.bytes();
    std::FILE* stream = fmemopen(const_cast<std::uint8_t*>(bytes.data()), bytes.size(), "rb");
    ASSERT_NE(stream, nullptr);
    PcapFileSource source(stream, "mem", "");
    const Walk w = walk(source);
    ASSERT_EQ(w.records.size(), 3u);
    EXPECT_EQ(w.records[0].timestamp_ns, 1'700'000'000'000'000'123);
    EXPECT_EQ(w.records[1].timestamp_ns, 1'700'000'000'500'000'000);
    EXPECT_EQ(w.records[2].captured_length, 62u);
    EXPECT_EQ(w.records[2].timestamp_ns, 0);
    EXPECT_EQ(w.end, ReadStatus::damaged);
    EXPECT_EQ(w.damage, "invalid packet capture length 142, bigger than snaplen of 60");
}

// A packet on an interface id its section did not describe is counted and skipped; the
// frames around it are read (libpcap stops there).
TEST(PcapFileSource, PcapngPacketsOnUndescribedInterfacesAreCountedAndSkipped) {
    for (const bool big_endian : {false, true}) {
        PcapngWriter ng(big_endian);
        ng.interface(1).packet(0, 1, frame_bytes(1)).packet(7, 2, frame_bytes(2));
        ng.section(!big_endian).packet(0, 3, frame_bytes(3)).interface(1).packet(0, 4, frame_bytes(4));
        const Bytes bytes = ng.bytes();
        std::FILE* stream = fmemopen(const_cast<std::uint8_t*>(bytes.data()), bytes.size(), "rb");
        ASSERT_NE(stream, nullptr);
        PcapFileSource source(stream, "mem", "");
        const Walk w = walk_in_batches(source);
        EXPECT_EQ(w.end, ReadStatus::end_of_file) << w.damage;
        ASSERT_EQ(w.records.size(), 2u);
        EXPECT_EQ(w.records[1].timestamp_ns, 4000);
        EXPECT_EQ(source.unknown_interface_frames(), 2u);
        ASSERT_EQ(source.interfaces().size(), 2u);
        EXPECT_EQ(source.interfaces()[1].section, 1u);
    }
}

}  // namespace
}  // namespace flowsketch::capture
