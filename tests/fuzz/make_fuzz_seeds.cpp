// Writes the seed corpora of the capture_file_fuzz and sketch_deserialize_fuzz targets:
//   make_fuzz_seeds CORPUS_DIR [PCAP_DIR]
// CORPUS_DIR/capture_file_fuzz/: small captures built byte by byte (tests/support/
// capture_builder.hpp, the same builders as the malformed-capture tests) covering both file
// formats, byte orders and timestamp precisions, pcapng block kinds and a few damaged files; plus
// the first 4 KiB of every capture in PCAP_DIR (real traffic, cut mid-record).
// CORPUS_DIR/sketch_deserialize_fuzz/: one small valid snapshot of every sketch kind and shape,
// behind the selector byte sketch_deserialize_fuzz.cpp documents.
// The outputs are deterministic; run it again after changing it and commit the files.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/sketch/bloom_filter.hpp"
#include "core/sketch/count_min.hpp"
#include "core/sketch/counting_bloom_filter.hpp"
#include "core/key/hash.hpp"
#include "core/sketch/serialization.hpp"
#include "core/sketch/two_choice_bloom_filter.hpp"
#include "tests/support/capture_builder.hpp"

namespace {

namespace fs = std::filesystem;
namespace core = flowsketch::core;
using namespace flowsketch::testing;

constexpr std::size_t kRealCapturePrefix = 4096;

// A few frames of each kind the decoder keys or skips.
std::vector<Bytes> sample_frames() {
    return {
        ethernet(ethertype_ipv4, ipv4(6, tcp(40000, 443))),
        ethernet(ethertype_ipv4, ipv4(17, udp(5353, 53))),
        ethernet(ethertype_ipv6, ipv6(17, udp(1000, 2000))),
        ethernet(ethertype_ipv4, ipv4(6, tcp(1, 2)), 2),
        ethernet(ethertype_ipv6, ipv6(60, ipv6_extension_chain(3, 6, tcp(80, 81)))),
        ethernet(ethertype_arp, Bytes(28, 0)),
        ethernet(ethertype_ipv4, ipv4(6, tcp(3, 4, 4))),  // data offset < 5
    };
}

void write_capture_seeds(const fs::path& dir) {
    const auto frames = sample_frames();
    auto put = [&](const std::string& name, const Bytes& bytes) {
        write_bytes((dir / name).string(), bytes);
    };

    for (const bool big_endian : {false, true}) {
        for (const bool nanosecond : {false, true}) {
            PcapHeader header;
            header.nanosecond = nanosecond;
            header.big_endian = big_endian;
            PcapWriter pcap(header);
            std::uint32_t second = 1'700'000'000;
            for (const Bytes& frame : frames) pcap.record(second++, 250, frame);
            put(std::string("pcap_") + (big_endian ? "be" : "le") + (nanosecond ? "_ns" : "_us"),
                pcap.bytes());
        }
    }
    {
        PcapHeader header;
        header.link_type = 101;  // LINKTYPE_RAW
        PcapWriter raw(header);
        raw.record(1, 0, ipv4(17, udp(1, 2))).record(2, 0, ipv6(6, tcp(3, 4)));
        put("pcap_raw_ip", raw.bytes());
    }
    {
        PcapWriter backwards;
        backwards.record(100, 0, frames[0]).record(50, 0, frames[1]).record(101, 5, frames[2]);
        put("pcap_timestamps_backwards", backwards.bytes());
    }
    {
        PcapHeader header;
        header.snaplen = 64;
        PcapWriter lying(header);
        lying.record(1, 0, frames[0], 0, 60).record(2, 0, frames[1], 2000);
        put("pcap_record_longer_than_file", lying.bytes());
    }
    for (const bool big_endian : {false, true}) {
        PcapngWriter ng(big_endian);
        ng.interface(1).interface(1, 128, 9);  // second interface: nanoseconds
        std::uint64_t ts = 1'700'000'000'000'000;
        for (const Bytes& frame : frames) ng.packet(0, ts++, frame);
        ng.packet(1, 1'700'000'000'000'000'000, frames[2]);
        ByteSink spb(big_endian);  // simple packet block: original length, data
        spb.u32(static_cast<std::uint32_t>(frames[1].size()));
        spb.append(frames[1]);
        ng.block(3, spb.bytes());
        ng.block(0x0bad, Bytes(8, 0x5a));     // unknown block
        ng.section(!big_endian).interface(101).packet(0, 5, ipv4(17, udp(7, 8)));
        put(std::string("pcapng_") + (big_endian ? "be" : "le"), ng.bytes());
    }
    {
        PcapngWriter mixed;
        mixed.interface(1).interface(101).packet(0, 1, frames[0]).packet(1, 2, ipv4(6, tcp(1, 2)));
        put("pcapng_two_link_types", mixed.bytes());
    }
    for (const bool big_endian : {false, true}) {
        // Per-interface state: interfaces described after packets (other link types, snapshot
        // lengths and units), packets on ids out of range, a section of the other byte order
        // whose interfaces are numbered from 0 again, a link type not decoded.
        PcapngWriter ng(big_endian);
        ng.interface(1, 65535).packet(0, 1, frames[0]).packet(3, 2, frames[1]);
        ng.interface(113, 96, 9).packet(1, 3, Bytes(16, 0)).packet(0, 4, frames[2]);
        ng.interface_with(101, 0, {{9, Bytes{0x80 | 20}}, {2, Bytes{'t', 'u', 'n'}}});
        ng.packet(2, 5, ipv4(17, udp(9, 10))).obsolete_packet(7, 6, frames[0]);
        ng.section(!big_endian).packet(0, 7, frames[1]).interface(147).packet(0, 8, frames[2]);
        // Interface Statistics Blocks: counters, a comment, an id out of range, one cut short.
        for (const std::uint32_t id : {0u, 1u, 9u}) {
            ByteSink isb = ng.sink();  // the second section's byte order
            isb.u32(id);
            isb.u64(0);
            PcapngWriter::add_option(isb, 4, ng.encode_u64(100 + id));
            PcapngWriter::add_option(isb, 1, Bytes{'o', 'k'});
            PcapngWriter::add_option(isb, 5, ng.encode_u64(id));
            PcapngWriter::add_option(isb, 7, ng.encode_u64(2));
            PcapngWriter::end_options(isb);
            ng.block(5, isb.bytes());
        }
        ng.block(5, Bytes{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 200, 0});
        ng.interface(1, 0).packet(1, 9, frames[0]).simple_packet(60, frames[1]);
        put(std::string("pcapng_interfaces_") + (big_endian ? "be" : "le"), ng.bytes());
    }
}

void write_real_capture_prefixes(const fs::path& pcaps, const fs::path& dir) {
    for (const auto& entry : fs::directory_iterator(pcaps)) {
        const std::string name = entry.path().filename().string();
        const bool capture = name.ends_with(".pcap") || name.ends_with(".pcapng");
        if (!entry.is_regular_file() || !capture) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        Bytes bytes(kRealCapturePrefix);
        in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        bytes.resize(static_cast<std::size_t>(in.gcount()));
        write_bytes((dir / ("real_" + name + "_4k")).string(), bytes);
    }
}

template <class Sketch>
void add_keys(Sketch& sketch, unsigned count) {
    for (std::uint64_t i = 0; i < count; ++i) sketch.insert(core::hash128(&i, sizeof i, 1));
}

void write_sketch_seeds(const fs::path& dir) {
    // Selector bits 0-1 pick the reader; the seed is stored with and without the repair bit.
    auto put = [&](const std::string& name, std::uint8_t reader, const Bytes& snapshot) {
        for (const std::uint8_t repair : {std::uint8_t{0}, std::uint8_t{4}}) {
            Bytes bytes{static_cast<std::uint8_t>(reader | repair)};
            bytes.insert(bytes.end(), snapshot.begin(), snapshot.end());
            write_bytes((dir / (name + (repair != 0 ? "_repair" : ""))).string(), bytes);
        }
    };

    const std::vector<std::pair<std::string, core::CountMinParams>> count_mins = {
        {"count_min_km", {core::CountMinVariant::kirsch_mitzenmacher, 7, 3, 1, 11, false}},
        {"count_min_km_4_lanes", {core::CountMinVariant::kirsch_mitzenmacher, 5, 2, 4, 12, false}},
        {"count_min_standard", {core::CountMinVariant::standard, 8, 2, 2, 13, false}},
        {"count_min_conservative", {core::CountMinVariant::standard, 4, 3, 1, 0, true}},
        {"count_min_stated_epsilon", {core::CountMinVariant::kirsch_mitzenmacher, 11, 2, 2, 3, false, 0.25}},
    };
    // The corpus also keeps the format-1 snapshots these wrote before Count-Min's format 2
    // (files *_v1*), which the reader still accepts.
    for (const auto& [name, params] : count_mins) {
        core::CountMinSketch sketch(params);
        std::vector<std::uint64_t> weights(params.lanes, 3);
        for (std::uint64_t i = 0; i < 10; ++i) sketch.update(core::hash128(&i, sizeof i, 1), weights);
        put(name, 0, core::serialize(sketch));
    }

    using core::BloomLayout;
    using core::ProbeScheme;
    for (const auto& [name, params] : std::vector<std::pair<std::string, core::BloomParams>>{
             {"bloom_standard", {100, 3, ProbeScheme::double_hashing, BloomLayout::standard, 21}},
             {"bloom_partitioned", {96, 4, ProbeScheme::enhanced_square, BloomLayout::partitioned, 0}},
             {"bloom_independent", {64, 2, ProbeScheme::independent, BloomLayout::standard, 5}},
         }) {
        core::BloomFilter filter(params);
        add_keys(filter, 8);
        put(name, 1, core::serialize(filter));
    }
    for (const std::uint32_t bits : {4u, 8u, 16u}) {
        core::CountingBloomFilter filter({50, 3, bits, ProbeScheme::enhanced_cube, 9});
        add_keys(filter, 6);
        put("counting_bloom_" + std::to_string(bits) + "bit", 2, core::serialize(filter));
    }
    for (const std::uint32_t choices : {1u, 2u, 4u}) {
        core::TwoChoiceBloomFilter filter({130, 2, choices, ProbeScheme::double_hashing, 3});
        add_keys(filter, 5);
        put("two_choice_" + std::to_string(choices), 3, core::serialize(filter));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR [PCAP_DIR]\n", argc > 0 ? argv[0] : "make_fuzz_seeds");
        return 2;
    }
    try {
        const fs::path corpus = argv[1];
        const fs::path captures = corpus / "capture_file_fuzz";
        const fs::path sketches = corpus / "sketch_deserialize_fuzz";
        fs::create_directories(captures);
        fs::create_directories(sketches);
        write_capture_seeds(captures);
        if (argc == 3) write_real_capture_prefixes(argv[2], captures);
        write_sketch_seeds(sketches);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
