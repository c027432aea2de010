// Captures are recognised by content: classic pcap in either byte order, with
// micro- or nanosecond timestamps, and pcapng, whatever the file is named.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

using nlohmann::json;

std::uint32_t load_le32(const std::string& s, std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(s[at + static_cast<std::size_t>(i)]);
    return v;
}

void put32(std::string& out, std::uint32_t v, bool big_endian) {
    for (int i = 0; i < 4; ++i) {
        const int shift = big_endian ? 24 - 8 * i : 8 * i;
        out.push_back(static_cast<char>((v >> shift) & 0xff));
    }
}

void put16(std::string& out, std::uint16_t v, bool big_endian) {
    out.push_back(static_cast<char>(big_endian ? v >> 8 : v & 0xff));
    out.push_back(static_cast<char>(big_endian ? v & 0xff : v >> 8));
}

// Rewrites a little-endian microsecond pcap in the requested byte order and
// timestamp resolution (same packets, same instants).
std::string rewrite_pcap(const std::string& in, bool big_endian, bool nanoseconds) {
    EXPECT_EQ(load_le32(in, 0), 0xa1b2c3d4u) << "fixture must be little-endian microsecond pcap";
    std::string out;
    put32(out, nanoseconds ? 0xa1b23c4du : 0xa1b2c3d4u, big_endian);
    put16(out, 2, big_endian);
    put16(out, 4, big_endian);
    put32(out, 0, big_endian);                   // thiszone
    put32(out, 0, big_endian);                   // sigfigs
    put32(out, load_le32(in, 16), big_endian);   // snaplen
    put32(out, load_le32(in, 20), big_endian);   // link type
    for (std::size_t at = 24; at + 16 <= in.size();) {
        const std::uint32_t caplen = load_le32(in, at + 8);
        put32(out, load_le32(in, at), big_endian);
        put32(out, load_le32(in, at + 4) * (nanoseconds ? 1000u : 1u), big_endian);
        put32(out, caplen, big_endian);
        put32(out, load_le32(in, at + 12), big_endian);
        out.append(in, at + 16, caplen);
        at += 16 + caplen;
    }
    return out;
}

json replay(const std::string& path) {
    const RunResult run = run_flowsketch("-r " + path + " --interval 0 --format json --top 5");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const auto lines = lines_of(run.out);
    return lines.empty() ? json::object() : json::parse(lines.back());
}

void expect_same_measurement(const json& a, const json& b) {
    for (const char* field : {"frames", "packets", "bytes", "top_packets", "top_bytes", "skipped"}) {
        EXPECT_EQ(a.at(field), b.at(field)) << field;
    }
    EXPECT_NEAR(a.at("start").get<double>(), b.at("start").get<double>(), 1e-6);
    EXPECT_NEAR(a.at("end").get<double>(), b.at("end").get<double>(), 1e-6);
}

TEST(CaptureFormats, ByteOrderAndTimestampResolutionDoNotChangeTheReport) {
    const std::string original_path = pcap_path("suricata-verify-output-eve-ftp-data.pcap");
    const std::string original = read_file(original_path);
    const json reference = replay(original_path);
    int variant = 0;
    for (const bool big_endian : {false, true}) {
        for (const bool nanoseconds : {false, true}) {
            const std::string path = tmp_path("format-variant-" + std::to_string(variant++) + ".pcap");
            std::ofstream(path, std::ios::binary) << rewrite_pcap(original, big_endian, nanoseconds);
            SCOPED_TRACE(path);
            expect_same_measurement(reference, replay(path));
        }
    }
}

// A pcapng file named .pcap and a pcap file with no extension at all.
TEST(CaptureFormats, RecognisedByContentNotByName) {
    const std::string pcapng = pcap_path("pcapplusplus-ipv6.pcapng");
    const std::string misnamed = tmp_path("really-pcapng.pcap");
    std::ofstream(misnamed, std::ios::binary) << read_file(pcapng);
    expect_same_measurement(replay(pcapng), replay(misnamed));

    const std::string pcap = pcap_path("zeek-mixed-vlan-mpls.pcap");
    const std::string bare = tmp_path("capture-without-extension");
    std::ofstream(bare, std::ios::binary) << read_file(pcap);
    expect_same_measurement(replay(pcap), replay(bare));
}

// The reports without their "memory_bytes" values, which may differ with the
// thread count. (std::regex would do, but gcc 12 warns inside it at -O1.)
std::string without_memory_bytes(std::string text) {
    const std::string field = "\"memory_bytes\":";
    for (std::size_t at = text.find(field); at != std::string::npos; at = text.find(field, at)) {
        std::size_t end = at + field.size();
        while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
        text.erase(at, end - at);
    }
    return text;
}

// pcapng is walked in place as classic pcap is, and so is either through a
// pipe, stdin or a path that names one (with --threads 2 the frames are
// decoded on the second thread while the reader reads on): the same packets
// as pcapng or from a pipe give the same reports, byte for byte, as classic
// pcap, with either thread count.
TEST(CaptureFormats, PcapngAndPipedReportsAreTheClassicReportsWithEitherThreadCount) {
    const std::string traffic =
        " --packets 300000 --flows 3000 --ipv6 0.3 --vlan 0.2 --syn-flood 20000 --seed 11";
    const std::string classic = tmp_path("formats-gen.pcap");
    const std::string ng = tmp_path("formats-gen.pcapng");
    const RunResult made_classic = run_flowsketch("gen --out " + classic + traffic);
    ASSERT_EQ(made_classic.exit_code, 0) << made_classic.err;
    const RunResult made_ng = run_flowsketch("gen --out " + ng + traffic + " --format pcapng");
    ASSERT_EQ(made_ng.exit_code, 0) << made_ng.err;
    ASSERT_NE(read_file(classic), read_file(ng));

    std::string reference;
    for (const std::string& path : {classic, ng}) {
        for (const char* threads : {"1", "2"}) {
            for (const char* via : {"file", "stdin", "named pipe"}) {
                SCOPED_TRACE(path + " --threads " + threads + " from a " + via);
                const std::string via_stdin = via == std::string("stdin") ? path : "";
                // A FIFO this shell makes and feeds (bash's <(cat FILE) is one too, but sh has none).
                const std::string fifo = tmp_path("formats-fifo");
                const std::string input = via == std::string("file")    ? path
                                          : via == std::string("stdin") ? "-"
                                                                        : fifo;
                if (via == std::string("named pipe")) {
                    std::remove(fifo.c_str());
                    const std::string feed = "mkfifo " + fifo + " && (cat " + path + " > " + fifo + " &)";
                    ASSERT_EQ(std::system(feed.c_str()), 0);
                }
                const RunResult run = run_flowsketch(
                    "-r " + input + " --threads " + threads + " --interval 1 --format json",
                    via_stdin);
                std::remove(fifo.c_str());
                ASSERT_EQ(run.exit_code, 0) << run.err;
                const std::string reports = without_memory_bytes(run.out);
                EXPECT_GE(lines_of(reports).size(), 4u) << "several intervals and the final report";
                if (reference.empty()) {
                    reference = reports;
                    continue;
                }
                EXPECT_EQ(reports, reference);
            }
        }
    }
}

}  // namespace
}  // namespace flowsketch::testing
