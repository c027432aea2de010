// The in-place walk against libpcap's pcap_next_ex: for every file here (the
// sample captures, and classic pcap and pcapng files damaged in every way the
// record and block rules cover, cut at every byte) both readers must yield the
// same frames, byte for byte, then the same end: clean, or damage with the
// same message.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "capture/file/pcap_file_source.hpp"
#include "tests/support/capture_builder.hpp"
#include "tests/support/capture_walk.hpp"
#include "tests/support/pipe_feed.hpp"
#include "tests/support/sanitized_build.hpp"

namespace flowsketch::capture {
namespace {

using testing::ByteSink;
using testing::Bytes;
using testing::PcapHeader;
using testing::PcapngWriter;
using testing::PcapWriter;
using testing::PipeFeed;

using testing::frame_bytes;
using testing::Walk;
using testing::walk;
using testing::walk_in_batches;

void expect_same(const Walk& a, const Walk& b, const std::string& what);


// The bytes through a pipe (`-r -`), walked in batches: the same frames and
// end as `reference`, and in place exactly when the file's reader is.
// (Declared before walk_both, which runs it on every file it is given.)
void expect_same_through_a_pipe(const Bytes& bytes, const std::string& filter, bool in_place,
                                const Walk& reference) {
    PipeFeed feed(bytes);
    std::unique_ptr<PcapFileSource> piped;
    try {
        piped = std::make_unique<PcapFileSource>(feed.read_end(), "mem", filter);
    } catch (const CaptureError& e) {
        ADD_FAILURE() << "libpcap accepted the file but not the pipe: " << e.what();
        return;
    }
    EXPECT_EQ(piped->reads_in_place(), in_place) << "through a pipe";
    expect_same(walk_in_batches(*piped), reference, "through a pipe");
}

// Both readers over the same bytes (through fmemopen, the fuzz target's path),
// and the same bytes through a pipe. Returns false when libpcap refuses the
// file (then so must the other reader).
bool walk_both(const Bytes& bytes, const std::string& filter, Walk& in_place, Walk& reference) {
    std::string refusal;
    auto open = [&](RecordReader reader) -> std::unique_ptr<PcapFileSource> {
        std::FILE* stream = fmemopen(const_cast<std::uint8_t*>(bytes.data()), bytes.size(), "rb");
        if (stream == nullptr) throw std::runtime_error("fmemopen failed");
        try {
            return std::make_unique<PcapFileSource>(stream, "mem", filter, reader);
        } catch (const CaptureError& e) {
            refusal = e.what();
            return nullptr;
        }
    };
    auto fast = open(RecordReader::automatic);
    auto slow = open(RecordReader::libpcap);
    auto batched = open(RecordReader::automatic);
    EXPECT_EQ(fast == nullptr, slow == nullptr);
    if (fast == nullptr || slow == nullptr || batched == nullptr) {
        PipeFeed feed(bytes);
        try {
            PcapFileSource piped(feed.read_end(), "mem", filter);
            ADD_FAILURE() << "a pipe opened what libpcap refused: " << refusal;
        } catch (const CaptureError& e) {
            EXPECT_EQ(std::string(e.what()), refusal) << "through a pipe";
        }
        return false;
    }
    EXPECT_FALSE(slow->reads_in_place());
    in_place = walk(*fast);
    reference = walk(*slow);
    expect_same(walk_in_batches(*batched), reference, "in batches");
    expect_same_through_a_pipe(bytes, filter, in_place.in_place, reference);
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

// Files cut at every byte (every third under the sanitizers, where each cut
// costs a hundred times more: see tests/support/sanitized_build.hpp).
constexpr std::size_t cut_step = testing::sanitized_build ? 3 : 1;

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
                for (std::size_t cut = 24; cut <= file.size(); cut += cut_step) {
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
    int in_place = 0;
    for (const auto& entry : std::filesystem::directory_iterator(FLOWSKETCH_PCAP_DIR)) {
        const std::string path = entry.path().string();
        if (entry.path().extension() != ".pcap" && entry.path().extension() != ".pcapng") continue;
        PcapFileSource fast(path, "");
        PcapFileSource slow(path, "", RecordReader::libpcap);
        const Walk a = walk(fast);
        Walk b = walk(slow);
        PcapFileSource batched(path, "");
        const Walk c = walk_in_batches(batched);
        EXPECT_TRUE(a.in_place) << path;  // classic and pcapng, of link types flowsketch decodes
        in_place += a.in_place ? 1 : 0;
        EXPECT_FALSE(a.records.empty()) << path;
        // Where libpcap 1.10 refuses to read on (interfaces of another link type or snapshot
        // length), the walk reads the whole file: the same frames up to there.
        if (fast.reads_past_libpcap()) {
            const auto agreed = static_cast<std::ptrdiff_t>(b.records.size());
            ASSERT_GT(a.records.size(), b.records.size()) << path;
            b.records.insert(b.records.end(), a.records.begin() + agreed, a.records.end());
            b.end = ReadStatus::end_of_file;
            b.damage.clear();
        }
        expect_same(c, b, path + " in batches");
        expect_same(a, b, path);
    }
    EXPECT_GE(in_place, 5);
}

// ------------------------------------------------------------------ pcapng

// Every block kind and timestamp unit libpcap reads: µs by default, ns,
// offsets (one wrapping the seconds around), binary fractions (2^-20, and 2^-63, where libpcap's fraction
// arithmetic wraps), ms (scaled up), ps and 10^-19 (scaled down); simple and
// obsolete packet blocks; blocks to skip; options after packet data; a
// second section with interfaces of its own. `opened` is where libpcap stops
// reading at open (after the first interface).
Bytes tricky_pcapng(bool big_endian, std::uint32_t snaplen, std::size_t& opened) {
    PcapngWriter ng(big_endian);
    ng.block(0x0bad, Bytes(10, 0x42));  // custom block before the first interface
    ng.interface_with(1, snaplen, {{2, Bytes{'e', 't', 'h', '0'}}});
    opened = ng.bytes().size();
    ng.packet(0, 1'700'000'000'000'001ULL, frame_bytes(1));
    ng.block(4, Bytes(16, 0));  // name resolution
    ng.interface_with(1, snaplen, {{9, Bytes{9}}, {14, ng.encode_u64(1000)}});  // ns, +1000 s
    ng.packet(1, 1'700'000'000'123'456'789ULL, frame_bytes(2));
    ng.packet(0, ~std::uint64_t{0}, frame_bytes(3));  // far past 2116: clamped
    ng.interface_with(1, snaplen, {{9, Bytes{0x80 | 20}}});
    ng.packet(2, (std::uint64_t{1} << 40) + 12345, frame_bytes(4));
    ng.interface_with(1, snaplen, {{9, Bytes{3}}, {14, ng.encode_u64(~std::uint64_t{0} - 5)}});  // ms, wrapping
    ng.packet(3, 1'700'000'000'123ULL, frame_bytes(5));
    ng.interface_with(1, snaplen, {{9, Bytes{12}}});  // ps
    ng.packet(4, 1'700'000'000'123'456'789ULL, frame_bytes(6));
    ng.interface_with(1, snaplen, {{9, Bytes{0x80 | 63}}});
    ng.packet(5, 0xfedcba9876543210ULL, frame_bytes(7));
    ng.interface_with(1, snaplen, {{9, Bytes{19}}});
    ng.packet(6, 0xfedcba9876543210ULL, frame_bytes(8));
    ng.simple_packet(62, frame_bytes(9));
    ng.obsolete_packet(1, 1'700'000'001'000'000'000ULL, frame_bytes(10));
    ng.packet(0, 1'700'000'002'000'000ULL, frame_bytes(11), {}, 9000);  // wire > captured
    ng.packet(0, 1'700'000'003'000'000ULL, Bytes{});                // nothing captured
    ng.packet(1, 1'700'000'004'000'000'000ULL, frame_bytes(12), {}, {}, 40);  // options after the data
    ng.block(5, Bytes(24, 0));  // interface statistics
    ng.section(big_endian);     // interfaces start again from 0
    ng.interface(1, snaplen);
    ng.packet(0, 1'700'000'005'000'000ULL, frame_bytes(13));
    return ng.bytes();
}

TEST(PcapFileSource, PcapngWalkMatchesLibpcapOnEveryCutOfTrickyFiles) {
    for (const bool big_endian : {false, true}) {
        for (const std::uint32_t snaplen : {65535u, 0u, 0x80000000u}) {
            std::size_t opened = 0;
            const Bytes file = tricky_pcapng(big_endian, snaplen, opened);
            Walk whole, reference;
            ASSERT_TRUE(walk_both(file, "", whole, reference));
            ASSERT_EQ(reference.end, ReadStatus::end_of_file) << reference.damage;
            ASSERT_EQ(reference.records.size(), 14u);
            for (std::size_t cut = 1; cut <= file.size(); cut += cut_step) {
                const Bytes bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(cut));
                const std::string what = "be=" + std::to_string(big_endian) +
                                         " snaplen=" + std::to_string(snaplen) +
                                         " cut=" + std::to_string(cut);
                Walk fast, slow;
                const bool opens = walk_both(bytes, "", fast, slow);
                ASSERT_EQ(opens, cut >= opened) << what;  // libpcap needs the first interface
                if (!opens) continue;
                ASSERT_TRUE(fast.in_place) << what;
                expect_same(fast, slow, what);
            }
        }
    }
}

// Each of libpcap's pcapng errors after the open, at a block after some packets:
// both readers stop at the same packet with the same message. (Not those where
// the walk reads on: PcapngInterfacesLibpcapRefusesAreRead.)
TEST(PcapFileSource, PcapngDamageIsTheSameDamage) {
    struct Case {
        std::string name;
        std::function<void(PcapngWriter&)> damage;
    };
    auto raw_block = [](PcapngWriter& ng, std::uint32_t type, std::uint32_t leading, std::uint32_t trailing,
                        std::size_t body) {
        ByteSink out = ng.sink();
        out.u32(type);
        out.u32(leading);
        out.append(Bytes(body, 0x11));
        out.u32(trailing);
        Bytes bytes = ng.bytes();
        bytes.insert(bytes.end(), out.bytes().begin(), out.bytes().end());
        return bytes;
    };
    const std::vector<Case> cases = {
        {"caplen over snaplen", [](PcapngWriter& ng) { ng.packet(0, 1, Bytes(70000, 1)); }},
        {"end of options with a length", [](PcapngWriter& ng) { ng.interface_with(1, 65535, {{0, Bytes{1}}}); }},
        {"tsresol of two bytes", [](PcapngWriter& ng) { ng.interface_with(1, 65535, {{9, Bytes{6, 6}}}); }},
        {"two tsresol", [](PcapngWriter& ng) { ng.interface_with(1, 65535, {{9, Bytes{6}}, {9, Bytes{9}}}); }},
        {"tsresol 2^-64", [](PcapngWriter& ng) { ng.interface_with(1, 65535, {{9, Bytes{0x80 | 64}}}); }},
        {"tsresol 10^-20", [](PcapngWriter& ng) { ng.interface_with(1, 65535, {{9, Bytes{20}}}); }},
        {"tsoffset of four bytes", [](PcapngWriter& ng) { ng.interface_with(1, 65535, {{14, Bytes{1, 2, 3, 4}}}); }},
        {"two tsoffset", [](PcapngWriter& ng) { ng.interface_with(1, 65535, {{14, ng.encode_u64(1)}, {14, ng.encode_u64(2)}}); }},
        {"option cut short",
         [](PcapngWriter& ng) {
             ByteSink body = ng.sink();
             body.u16(1);
             body.u16(0);
             body.u32(65535);
             body.u16(2);
             body.u16(200);  // longer than the block
             body.u32(0);
             ng.block(1, body.bytes());
         }},
        {"interface too short", [](PcapngWriter& ng) { ng.block(1, Bytes(4, 0)); }},
        {"enhanced packet too short", [](PcapngWriter& ng) { ng.block(6, Bytes(16, 0)); }},
        {"packet data past the block",
         [](PcapngWriter& ng) {
             ByteSink body = ng.sink();
             body.u32(0);
             body.u32(0);
             body.u32(1);
             body.u32(64);  // captured length
             body.u32(64);
             body.append(Bytes(32, 7));
             ng.block(6, body.bytes());
         }},
        {"obsolete packet too short", [](PcapngWriter& ng) { ng.block(2, Bytes(12, 0)); }},
        {"simple packet too short", [](PcapngWriter& ng) { ng.block(3, Bytes{}); }},
        {"simple packet data past the block",
         [](PcapngWriter& ng) {
             ByteSink body = ng.sink();
             body.u32(100);
             body.append(Bytes(8, 1));
             ng.block(3, body.bytes());
         }},
        {"section header too short", [](PcapngWriter& ng) { ng.block(0x0a0d0d0a, Bytes(8, 0)); }},
        {"section with a bad magic", [](PcapngWriter& ng) { ng.section_header(0x12345678, 1); }},
        {"section version 2", [](PcapngWriter& ng) { ng.section_header(0x1a2b3c4d, 2); }},
    };
    for (const bool big_endian : {false, true}) {
        for (const Case& c : cases) {
            PcapngWriter ng(big_endian);
            ng.interface(1, 65535);
            for (std::uint16_t port = 1; port <= 3; ++port) ng.packet(0, port, frame_bytes(port));
            c.damage(ng);
            ng.packet(0, 9, frame_bytes(9));  // never reached
            const std::string what = c.name + (big_endian ? " (big-endian)" : "");
            Walk fast, slow;
            ASSERT_TRUE(walk_both(ng.bytes(), "", fast, slow)) << what;
            EXPECT_TRUE(fast.in_place) << what;
            EXPECT_EQ(slow.end, ReadStatus::damaged) << what;
            EXPECT_EQ(slow.records.size(), 3u) << what << ": " << slow.damage;
            expect_same(fast, slow, what);
        }
        // Block frames: lengths that lie, or that libpcap will not allocate.
        PcapngWriter ng(big_endian);
        ng.interface(1, 65535).packet(0, 1, frame_bytes(1));
        const std::vector<std::pair<std::string, Bytes>> frames = {
            {"length under 12", raw_block(ng, 6, 8, 8, 0)},
            {"length not a multiple of 4", raw_block(ng, 6, 18, 18, 6)},
            {"trailer differs", raw_block(ng, 0x0bad, 16, 20, 4)},
            {"length past the end", raw_block(ng, 6, 400, 400, 8)},
            {"length over 16 MiB", raw_block(ng, 6, 16 * 1024 * 1024 + 4, 0, 8)},
            {"header cut short", Bytes(ng.bytes().begin(), ng.bytes().end() - 1)},
        };
        for (const auto& [name, bytes] : frames) {
            const std::string what = name + (big_endian ? " (big-endian)" : "");
            Walk fast, slow;
            ASSERT_TRUE(walk_both(bytes, "", fast, slow)) << what;
            EXPECT_TRUE(fast.in_place) << what;
            EXPECT_EQ(slow.end, ReadStatus::damaged) << what;
            expect_same(fast, slow, what);
        }
    }
}

// Blocks longer than a read block (options after a packet's data, a custom
// block of a MiB, up to libpcap's 16 MiB) among many ordinary ones that cross
// the read blocks' ends: the same frames, however they are batched.
TEST(PcapFileSource, PcapngBlocksOfAnyLengthAreWhole) {
    PcapngWriter ng(false);
    ng.interface_with(1, 262144, {{9, Bytes{9}}});
    for (std::uint32_t i = 0; i < 6000; ++i) {
        const auto port = static_cast<std::uint16_t>(i);
        if (i == 1000) ng.packet(0, i, frame_bytes(port), {}, {}, 60000);  // 60 KB of comment
        if (i == 2000) ng.block(0x0bad, Bytes(1 << 20, 0x33));
        if (i == 3000) {
            ng.packet(0, i, Bytes(262144, 0x44));  // the longest frame, then 2 MB of options
            ByteSink body = ng.sink();
            body.u32(0);
            body.u32(0);
            body.u32(i);
            body.u32(100);
            body.u32(100);
            body.append(frame_bytes(port, 58));
            for (int k = 0; k < 40; ++k) PcapngWriter::add_option(body, 1, Bytes(50000, 'x'));
            ng.block(6, body.bytes());
        }
        if (i == 4000) ng.block(0x0bad, Bytes(16 * 1024 * 1024 - 12, 0x55));  // the largest block
        ng.packet(0, i, frame_bytes(port, 1 + (i * 37) % 1400));
    }
    Walk fast, slow;
    ASSERT_TRUE(walk_both(ng.bytes(), "", fast, slow));
    EXPECT_TRUE(fast.in_place);
    EXPECT_EQ(slow.end, ReadStatus::end_of_file) << slow.damage;
    EXPECT_EQ(slow.records.size(), 6003u);
    expect_same(fast, slow, "long blocks");
}

TEST(PcapFileSource, PcapngFilterRunsOnTheSameFrames) {
    PcapngWriter ng(true);
    ng.interface(1, 65535);
    for (std::uint16_t port = 1; port <= 50; ++port) ng.packet(0, port, frame_bytes(port));
    Walk fast, slow;
    ASSERT_TRUE(walk_both(ng.bytes(), "udp src port 7 or udp src port 42", fast, slow));
    EXPECT_TRUE(fast.in_place);
    EXPECT_EQ(fast.records.size(), 2u);
    expect_same(fast, slow, "filter");
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

    // A Linux cooked frame carrying CAN, in a file of the other byte order:
    // libpcap swaps the CAN ID in place after reading it.
    Bytes can = {0, 0, 1, 0x18, 0, 0};  // incoming, ARPHRD_CAN, no address
    can.resize(14, 0);
    can.insert(can.end(), {0x00, 0x0c, 0x12, 0x34, 0x56, 0x78, 4, 0, 0, 0, 1, 2, 3, 4});
    for (const bool big_endian : {false, true}) {
        PcapHeader cooked;
        cooked.link_type = 113;
        cooked.big_endian = big_endian;
        PcapWriter c(cooked);
        ASSERT_TRUE(walk_both(c.record(1, 0, can).bytes(), "", fast, slow));
        EXPECT_EQ(fast.in_place, !big_endian);
        expect_same(fast, slow, "cooked CAN");
        EXPECT_EQ(slow.records.at(0).data != can, big_endian) << "libpcap rewrote the frame";

        PcapngWriter ng(big_endian);
        ng.interface_with(113, 65535, {}).packet(0, 1, can);
        ASSERT_TRUE(walk_both(ng.bytes(), "", fast, slow));
        EXPECT_EQ(fast.in_place, !big_endian);
        expect_same(fast, slow, "cooked CAN in pcapng");
    }
}

// ------------------------------------------------------------------ pipes
// (Every file above also goes through a pipe, in walk_both.)

// Four UDP frames as pcap or pcapng; `third_ends` is where the third one ends.
Bytes four_frames(bool pcapng, std::size_t payload, std::size_t& third_ends) {
    if (pcapng) {
        PcapngWriter ng(false);
        ng.interface(1, 65535);
        for (std::uint16_t port = 1; port <= 4; ++port) {
            if (port == 4) third_ends = ng.bytes().size();
            ng.packet(0, port, frame_bytes(port, payload));
        }
        return ng.bytes();
    }
    PcapWriter w;
    for (std::uint16_t port = 1; port <= 4; ++port) {
        if (port == 4) third_ends = w.bytes().size();
        w.record(port, 0, frame_bytes(port, payload));
    }
    return w.bytes();
}

// A writer that stops with its pipe open (tcpdump -w - between two bursts):
// the frames it has written are handed out without waiting for the rest of
// a read block, or for the writer to finish.
TEST(PcapFileSource, PipedFramesComeAsTheyAreWritten) {
    for (const bool pcapng : {false, true}) {
        // Three frames, then a pause, then one more.
        std::size_t cut = 0;
        const Bytes whole = four_frames(pcapng, 20, cut);
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        std::mutex mutex;
        std::condition_variable read_three;
        bool three = false;
        bool waited_in_vain = false;
        std::thread writer([&] {
            EXPECT_EQ(::write(fds[1], whole.data(), cut), static_cast<ssize_t>(cut));
            {
                // A reader that waits for more than was written would time out here.
                std::unique_lock<std::mutex> lock(mutex);
                waited_in_vain = !read_three.wait_for(lock, std::chrono::seconds(10), [&] { return three; });
            }
            EXPECT_EQ(::write(fds[1], whole.data() + cut, whole.size() - cut),
                      static_cast<ssize_t>(whole.size() - cut));
            ::close(fds[1]);
        });
        {
            PcapFileSource source(fds[0], "pipe", "");
            EXPECT_TRUE(source.reads_in_place());
            std::vector<Frame> frames(256);
            std::size_t got = 0;
            ReadStatus status = ReadStatus::frame;
            while (got < 3) {
                const std::size_t n = source.next_batch(std::span<Frame>(frames), status);
                ASSERT_GT(n, 0u) << source.damage_message();
                got += n;
            }
            EXPECT_EQ(got, 3u);
            {
                const std::lock_guard<std::mutex> lock(mutex);
                three = true;
            }
            read_three.notify_one();
            EXPECT_EQ(source.next_batch(std::span<Frame>(frames), status), 1u);
            EXPECT_EQ(source.next_batch(std::span<Frame>(frames), status), 0u);
            EXPECT_EQ(status, ReadStatus::end_of_file);
        }
        writer.join();
        ::close(fds[0]);
        EXPECT_FALSE(waited_in_vain) << (pcapng ? "pcapng" : "pcap")
                                     << ": the reader waited for bytes not yet written";
    }
}

// A path that names a pipe (mkfifo, or bash's <(zstd -dc ...) as /dev/fd/N)
// is read as -r - reads stdin: in place, the same frames.
TEST(PcapFileSource, NamedPipesAreWalkedInPlace) {
    PcapngWriter ng(false);
    ng.interface(1, 65535);
    for (std::uint32_t i = 0; i < 3000; ++i) {
        ng.packet(0, i, frame_bytes(static_cast<std::uint16_t>(i), 1 + (i * 37) % 1400));
    }
    const Bytes bytes = ng.bytes();
    Walk reference, ignored;
    ASSERT_TRUE(walk_both(bytes, "", ignored, reference));
    const std::string fifo =
        std::string(FLOWSKETCH_TEST_TMP) + "/named-pipe-" + std::to_string(::getpid());
    ::unlink(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::thread writer([&] {
        const int fd = ::open(fifo.c_str(), O_WRONLY);  // waits for the reader to open
        ASSERT_GE(fd, 0);
        testing::write_all(fd, bytes);
        ::close(fd);
    });
    {
        PcapFileSource source(fifo, "");
        EXPECT_TRUE(source.reads_in_place());
        expect_same(walk_in_batches(source), reference, "named pipe");
    }
    writer.join();
    ::unlink(fifo.c_str());
}

extern "C" void ignore_signal(int) {}

// SIGINT or SIGTERM (handlers without SA_RESTART) while the walk waits for a
// pipe, here in the middle of a record or block: next_batch returns nothing,
// status interrupted, and once the writer goes on the walk does too, with
// every frame and no damage.
TEST(PcapFileSource, ASignalEndsTheWaitForAPipeAndLosesNothing) {
    struct sigaction action {};
    action.sa_handler = ignore_signal;  // a handler, and no SA_RESTART: reads return EINTR
    struct sigaction previous {};
    ASSERT_EQ(::sigaction(SIGUSR1, &action, &previous), 0);
    for (const bool pcapng : {false, true}) {
        std::size_t third_ends = 0;
        const Bytes whole = four_frames(pcapng, 100, third_ends);
        Walk reference, ignored;
        ASSERT_TRUE(walk_both(whole, "", ignored, reference));
        const std::size_t cut = whole.size() - 50;  // inside the last record or block
        ASSERT_GT(cut, third_ends);
        int fds[2];
        ASSERT_EQ(::pipe(fds), 0);
        ASSERT_EQ(::write(fds[1], whole.data(), cut), static_cast<ssize_t>(cut));
        std::atomic<bool> interrupted{false};
        Walk walked;
        std::thread reader([&] {
            PcapFileSource source(fds[0], "pipe", "");
            std::vector<Frame> frames(256);
            for (;;) {
                ReadStatus status = ReadStatus::frame;
                const std::size_t n = source.next_batch(std::span<Frame>(frames), status);
                if (status == ReadStatus::interrupted) {
                    EXPECT_EQ(n, 0u);
                    EXPECT_EQ(walked.records.size(), 3u) << "every whole record before the wait";
                    interrupted = true;
                    continue;
                }
                if (n == 0) {
                    walked.end = status;
                    walked.damage = source.damage_message();
                    return;
                }
                for (std::size_t i = 0; i < n; ++i) {
                    walked.records.push_back({frames[i].timestamp_ns, frames[i].captured_length,
                                              frames[i].wire_length,
                                              Bytes(frames[i].data, frames[i].data + frames[i].captured_length)});
                }
            }
        });
        // Until the reader reports it: a signal that lands before its read is lost on the handler.
        for (int i = 0; i < 200 && !interrupted; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
            pthread_kill(reader.native_handle(), SIGUSR1);
        }
        EXPECT_TRUE(interrupted.load()) << (pcapng ? "pcapng" : "pcap");
        ASSERT_EQ(::write(fds[1], whole.data() + cut, whole.size() - cut),
                  static_cast<ssize_t>(whole.size() - cut));
        ::close(fds[1]);
        reader.join();
        ::close(fds[0]);
        expect_same(walked, reference, pcapng ? "pcapng, interrupted" : "pcap, interrupted");
    }
    ::sigaction(SIGUSR1, &previous, nullptr);
}

// libpcap reads up to the first interface at open; past 64 MiB the walk does
// not read that start again (a file leaves it to libpcap, and a pipe stops
// keeping it), and libpcap reads the rest as it would.
TEST(PcapFileSource, PipedPcapngWithAVeryLongStartStaysWithLibpcap) {
    PcapngWriter ng(false);
    for (int i = 0; i < 5; ++i) ng.block(0x0bad, Bytes(15 * 1024 * 1024, static_cast<std::uint8_t>(i)));
    ng.interface(1, 65535);
    for (std::uint16_t port = 1; port <= 100; ++port) ng.packet(0, port, frame_bytes(port));
    Walk fast, slow;
    ASSERT_TRUE(walk_both(ng.bytes(), "", fast, slow));  // and through a pipe
    EXPECT_FALSE(fast.in_place);
    EXPECT_EQ(slow.records.size(), 100u);
    expect_same(fast, slow, "long start");
}

}  // namespace
}  // namespace flowsketch::capture
