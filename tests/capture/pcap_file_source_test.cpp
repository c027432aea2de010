// The in-place record walk against libpcap's pcap_next_ex: for every file here
// (the sample captures, and classic pcap files damaged in every way the record
// rules cover, cut at every byte) both readers must yield the same frames,
// byte for byte, then the same end: clean, or damage with the same message.
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "capture/pcap_file_source.hpp"
#include "tests/support/capture_builder.hpp"

namespace flowsketch::capture {
namespace {

using testing::Bytes;
using testing::PcapHeader;
using testing::PcapWriter;

struct Walk {
    struct Record {
        std::int64_t timestamp_ns;
        std::uint32_t captured_length;
        std::uint32_t wire_length;
        Bytes data;
        bool operator==(const Record&) const = default;
    };
    std::vector<Record> records;
    ReadStatus end = ReadStatus::frame;
    std::string damage;
    bool in_place = false;
};

Walk walk(PcapFileSource& source) {
    Walk w;
    w.in_place = source.reads_in_place();
    Frame frame;
    for (;;) {
        const ReadStatus status = source.next(frame);
        if (status != ReadStatus::frame) {
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
Walk walk_in_batches(PcapFileSource& source) {
    constexpr std::size_t sizes[] = {1, 3, 64, 7, 256};
    Walk w;
    w.in_place = source.reads_in_place();
    std::vector<Frame> frames(256);
    for (std::size_t call = 0;; ++call) {
        ReadStatus status = ReadStatus::frame;
        const std::size_t n = source.next_batch(
            std::span<Frame>(frames.data(), sizes[call % std::size(sizes)]), status);
        if (n == 0) {
            EXPECT_NE(status, ReadStatus::frame);
            w.end = status;
            w.damage = source.damage_message();
            return w;
        }
        EXPECT_EQ(status, ReadStatus::frame);
        // Every frame of the batch is still intact: none was overwritten by a later read.
        for (std::size_t i = 0; i < n; ++i) {
            const Frame& frame = frames[i];
            w.records.push_back({frame.timestamp_ns, frame.captured_length, frame.wire_length,
                                 Bytes(frame.data, frame.data + frame.captured_length)});
        }
    }
}

void expect_same(const Walk& a, const Walk& b, const std::string& what);

// Both readers over the same bytes (through fmemopen, the fuzz target's path).
// Returns false when libpcap refuses the file (then so must the other reader).
bool walk_both(const Bytes& bytes, const std::string& filter, Walk& in_place, Walk& reference) {
    auto open = [&](RecordReader reader) -> std::unique_ptr<PcapFileSource> {
        std::FILE* stream = fmemopen(const_cast<std::uint8_t*>(bytes.data()), bytes.size(), "rb");
        if (stream == nullptr) throw std::runtime_error("fmemopen failed");
        try {
            return std::make_unique<PcapFileSource>(stream, "mem", filter, reader);
        } catch (const CaptureError&) {
            return nullptr;
        }
    };
    auto fast = open(RecordReader::automatic);
    auto slow = open(RecordReader::libpcap);
    auto batched = open(RecordReader::automatic);
    EXPECT_EQ(fast == nullptr, slow == nullptr);
    if (fast == nullptr || slow == nullptr || batched == nullptr) return false;
    EXPECT_FALSE(slow->reads_in_place());
    in_place = walk(*fast);
    reference = walk(*slow);
    expect_same(walk_in_batches(*batched), reference, "in batches");
    return true;
}

void expect_same(const Walk& a, const Walk& b, const std::string& what) {
    ASSERT_EQ(a.records.size(), b.records.size()) << what;
    for (std::size_t i = 0; i < a.records.size(); ++i) {
        ASSERT_EQ(a.records[i], b.records[i]) << what << ": record " << i;
    }
    EXPECT_EQ(a.end, b.end) << what;
    EXPECT_EQ(a.damage, b.damage) << what;
}

Bytes frame_bytes(std::uint16_t port, std::size_t payload = 20) {
    return testing::ethernet(testing::ethertype_ipv4,
                             testing::ipv4(17, testing::udp(port, 53, payload)));
}

// Every record rule of classic pcap, in one file per byte order and precision.
Bytes tricky_file(bool big_endian, bool nanosecond, std::uint32_t snaplen) {
    PcapHeader header;
    header.big_endian = big_endian;
    header.nanosecond = nanosecond;
    header.snaplen = snaplen;
    PcapWriter w(header);
    w.record(1'700'000'000, 1, frame_bytes(1));
    w.record(1'700'000'000, 999'999'999, frame_bytes(2));  // ns fraction in a µs file too
    w.record(0x80000000u, 5, frame_bytes(3));               // seconds with the top bit set
    w.record(10, 0xffffffffu, frame_bytes(4));              // negative fraction
    w.record(1'600'000'000, 7, frame_bytes(5));             // backwards
    w.record(1'700'000'001, 0, Bytes{});                    // zero-length record
    w.record(1'700'000'001, 1, frame_bytes(6, 200), std::nullopt, 60);  // caplen > len
    w.record(1'700'000'002, 2, frame_bytes(7, 300));        // maybe longer than snaplen
    w.record(1'700'000'003, 3, frame_bytes(8), std::nullopt, 9000);     // wire > captured
    return w.bytes();
}

TEST(PcapFileSource, InPlaceWalkMatchesLibpcapOnEveryCutOfTrickyFiles) {
    for (const bool big_endian : {false, true}) {
        for (const bool nanosecond : {false, true}) {
            for (const std::uint32_t snaplen : {65535u, 128u, 0u, 0x80000000u}) {
                const Bytes file = tricky_file(big_endian, nanosecond, snaplen);
                for (std::size_t cut = 24; cut <= file.size(); ++cut) {
                    const Bytes bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(cut));
                    Walk fast, slow;
                    const std::string what = "be=" + std::to_string(big_endian) +
                                             " ns=" + std::to_string(nanosecond) +
                                             " snaplen=" + std::to_string(snaplen) +
                                             " cut=" + std::to_string(cut);
                    ASSERT_TRUE(walk_both(bytes, "", fast, slow)) << what;
                    ASSERT_TRUE(fast.in_place) << what;
                    expect_same(fast, slow, what);
                }
            }
        }
    }
}

TEST(PcapFileSource, RecordLengthsBeyondAnySnaplenAreTheSameDamage) {
    for (const std::uint32_t snaplen : {65535u, 300000u}) {
        for (const std::uint32_t caplen : {262144u, 262145u, 300000u, 0xffffffffu}) {
            PcapHeader header;
            header.snaplen = snaplen;
            PcapWriter w(header);
            w.record(1, 0, frame_bytes(1));
            w.record(2, 0, Bytes(1000, 0x55), caplen);
            Bytes bytes = w.bytes();
            bytes.resize(bytes.size() + 270000, 0x66);  // enough bytes for the long record
            Walk fast, slow;
            ASSERT_TRUE(walk_both(bytes, "", fast, slow));
            expect_same(fast, slow, "snaplen " + std::to_string(snaplen) + " caplen " +
                                        std::to_string(caplen));
        }
    }
}

TEST(PcapFileSource, FilterRunsOnTheSameFrames) {
    PcapWriter w;
    for (std::uint16_t port = 1; port <= 50; ++port) w.record(port, 0, frame_bytes(port));
    Walk fast, slow;
    ASSERT_TRUE(walk_both(w.bytes(), "udp src port 7 or udp src port 42", fast, slow));
    EXPECT_TRUE(fast.in_place);
    EXPECT_EQ(fast.records.size(), 2u);
    expect_same(fast, slow, "filter");
}

TEST(PcapFileSource, RecordsSpanningReadBlocksAreWhole) {
    // Many read blocks, with records of every length crossing their ends.
    PcapWriter w;
    for (std::uint32_t i = 0; i < 12000; ++i) {
        w.record(i, i, frame_bytes(static_cast<std::uint16_t>(i), 1 + (i * 37) % 1400));
    }
    Walk fast, slow;
    ASSERT_TRUE(walk_both(w.bytes(), "", fast, slow));
    EXPECT_EQ(fast.records.size(), 12000u);
    expect_same(fast, slow, "blocks");
}

// --threads 2 hands frames to another thread, which decodes them while the
// source reads on: frames whose storage is held must survive later reads
// (and the end of the file), and the blocks must be reused once let go.
TEST(PcapFileSource, HeldFrameStorageOutlivesLaterReads) {
    PcapWriter w;
    for (std::uint32_t i = 0; i < 12000; ++i) {
        w.record(i, i, frame_bytes(static_cast<std::uint16_t>(i), 1 + (i * 37) % 1400));
    }
    const Bytes bytes = w.bytes();  // 8.6 MB: 33 read blocks
    Walk reference, ignored;
    ASSERT_TRUE(walk_both(bytes, "", ignored, reference));

    std::FILE* stream = fmemopen(const_cast<std::uint8_t*>(bytes.data()), bytes.size(), "rb");
    ASSERT_NE(stream, nullptr);
    PcapFileSource source(stream, "mem", "");
    ASSERT_TRUE(source.reads_in_place());
    struct Held {
        std::shared_ptr<const void> storage;
        std::vector<Frame> frames;
        std::size_t first;  // index of frames[0] in the file
    };
    std::deque<Held> held;  // the last few batches, as a lagging worker holds them
    std::set<const void*> blocks;
    auto expect_intact = [&](const Held& h) {
        for (std::size_t i = 0; i < h.frames.size(); ++i) {
            const Frame& f = h.frames[i];
            ASSERT_EQ(Bytes(f.data, f.data + f.captured_length), reference.records[h.first + i].data)
                << "record " << h.first + i;
        }
    };
    std::vector<Frame> frames(256);
    std::size_t read = 0;
    for (std::size_t call = 0;; ++call) {
        ReadStatus status = ReadStatus::frame;
        const std::size_t n = source.next_batch(std::span<Frame>(frames.data(), 1 + call % 256), status);
        if (n == 0) {
            EXPECT_EQ(status, ReadStatus::end_of_file);
            break;
        }
        Held h{source.frame_storage(), {frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(n)}, read};
        ASSERT_NE(h.storage, nullptr);
        blocks.insert(h.storage.get());
        read += n;
        held.push_back(std::move(h));
        if (held.size() > 6) {
            expect_intact(held.front());
            held.pop_front();  // the worker is done with it: its block may be read into again
        }
    }
    EXPECT_EQ(read, reference.records.size());
    for (const Held& h : held) expect_intact(h);  // after the end of the file, too
    // Six batches of at most 256 frames (0.6 MB on average) hold a few blocks at a time;
    // without reuse the 8.6 MB would take 33.
    EXPECT_LE(blocks.size(), 10u) << "blocks let go are read into again";
}

TEST(PcapFileSource, UnheldStorageIsOneBlockAndLibpcapFramesHaveNone) {
    PcapWriter w;
    for (std::uint32_t i = 0; i < 4000; ++i) w.record(i, 0, frame_bytes(static_cast<std::uint16_t>(i), 900));
    const Bytes bytes = w.bytes();  // 3.8 MB
    std::FILE* stream = fmemopen(const_cast<std::uint8_t*>(bytes.data()), bytes.size(), "rb");
    ASSERT_NE(stream, nullptr);
    PcapFileSource source(stream, "mem", "");
    std::set<const void*> blocks;
    std::vector<Frame> frames(64);
    ReadStatus status = ReadStatus::frame;
    while (source.next_batch(frames, status) > 0) blocks.insert(source.frame_storage().get());
    EXPECT_EQ(blocks.size(), 1u) << "nobody held a block: the source reads into the same one";

    std::FILE* again = fmemopen(const_cast<std::uint8_t*>(bytes.data()), bytes.size(), "rb");
    ASSERT_NE(again, nullptr);
    PcapFileSource libpcap(again, "mem", "", RecordReader::libpcap);
    ASSERT_EQ(libpcap.next_batch(frames, status), 1u);
    EXPECT_EQ(libpcap.frame_storage(), nullptr) << "libpcap's buffer is overwritten by the next read";
}

TEST(PcapFileSource, SampleCapturesReadTheSameFromTheirPaths) {
    int classic = 0;
    for (const auto& entry : std::filesystem::directory_iterator(FLOWSKETCH_PCAP_DIR)) {
        const std::string path = entry.path().string();
        if (entry.path().extension() != ".pcap" && entry.path().extension() != ".pcapng") continue;
        PcapFileSource fast(path, "");
        PcapFileSource slow(path, "", RecordReader::libpcap);
        const Walk a = walk(fast);
        const Walk b = walk(slow);
        PcapFileSource batched(path, "");
        expect_same(walk_in_batches(batched), b, path + " in batches");
        EXPECT_EQ(a.in_place, entry.path().extension() == ".pcap") << path;
        classic += a.in_place ? 1 : 0;
        EXPECT_FALSE(a.records.empty()) << path;
        expect_same(a, b, path);
    }
    EXPECT_GE(classic, 4);
}

TEST(PcapFileSource, OtherFormatsStayWithLibpcap) {
    // Patched (Kuznetzov) pcap and pcap 2.3 have record rules the walk does not reproduce.
    PcapHeader patched;
    patched.magic = 0xa1b2cd34;
    PcapWriter w(patched);
    Walk fast, slow;
    if (walk_both(w.bytes(), "", fast, slow)) {
        EXPECT_FALSE(fast.in_place);
    }

    PcapWriter v23;
    Bytes bytes = v23.record(1, 0, frame_bytes(1)).bytes();
    bytes[6] = 3;  // minor version 3: libpcap may swap caplen and len
    ASSERT_TRUE(walk_both(bytes, "", fast, slow));
    EXPECT_FALSE(fast.in_place);
    expect_same(fast, slow, "2.3");

    PcapHeader unknown_link;
    unknown_link.link_type = 147;  // user 0: counted as unsupported, read by libpcap
    PcapWriter u(unknown_link);
    ASSERT_TRUE(walk_both(u.record(1, 0, Bytes(10, 1)).bytes(), "", fast, slow));
    EXPECT_FALSE(fast.in_place);
}

}  // namespace
}  // namespace flowsketch::capture
