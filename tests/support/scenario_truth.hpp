// The truth of `flowsketch gen --scenario ...` (docs/gen.md, "Truth format"):
// its flows with their VLAN id and scenario, its scenario lines, and the true
// packets, bytes and distinct counts per key of any key spec, aggregated here
// from the flow lines with the tests' own address arithmetic (not KeySpec's).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace flowsketch::testing {

struct ScenarioFlow {
    std::string proto, src, dst, sport, dport;
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    std::string vlan;
    std::size_t scenario = 0;
};

struct ScenarioLine {
    std::string text;  // as --scenario takes it, defaults filled in
    std::uint64_t flows = 0;
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    std::int64_t first_ns = 0;
    std::int64_t last_ns = 0;
    /// OPTION=VALUE of the text, and "kind".
    std::map<std::string, std::string> options;
};

struct ScenarioTruth {
    std::vector<ScenarioFlow> flows;
    std::vector<ScenarioLine> scenarios;  // [0] is --scenario 1
    std::map<std::string, std::string> comments;
    std::string header;
};

inline ScenarioTruth read_scenario_truth(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    ScenarioTruth truth;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# scenario ", 0) == 0) {
            std::istringstream fields(line.substr(11));
            ScenarioLine s;
            std::size_t index = 0;
            std::string word;
            fields >> index >> s.text;
            while (fields >> word) {
                if (word == "flows") fields >> s.flows;
                if (word == "packets") fields >> s.packets;
                if (word == "bytes") fields >> s.bytes;
                if (word == "first_ns") fields >> s.first_ns;
                if (word == "last_ns") fields >> s.last_ns;
            }
            std::istringstream options(s.text);
            std::string option;
            std::getline(options, s.options["kind"], ',');
            while (std::getline(options, option, ',')) {
                const std::size_t equals = option.find('=');
                s.options[option.substr(0, equals)] = option.substr(equals + 1);
            }
            EXPECT_EQ(index, truth.scenarios.size() + 1) << line;
            truth.scenarios.push_back(s);
            continue;
        }
        if (line.rfind("# ", 0) == 0) {
            const std::size_t space = line.find(' ', 2);
            truth.comments[line.substr(2, space - 2)] = space == std::string::npos ? "" : line.substr(space + 1);
            continue;
        }
        if (truth.header.empty()) {
            truth.header = line;
            continue;
        }
        std::vector<std::string> cols;
        std::istringstream fields(line);
        for (std::string col; std::getline(fields, col, '\t');) cols.push_back(col);
        EXPECT_EQ(cols.size(), 9u) << line;
        if (cols.size() != 9) continue;
        truth.flows.push_back({cols[0], cols[1], cols[2], cols[3], cols[4], std::stoull(cols[5]), std::stoull(cols[6]),
                               cols[7], std::stoul(cols[8])});
    }
    return truth;
}

/// An address cut to a prefix, as the reports print it ("192.0.2.0/24",
/// "2001:db8:1:2::/64"); the address itself when the length keeps it whole.
inline std::string prefix_text(const std::string& address, unsigned v4_bits, unsigned v6_bits) {
    const bool v6 = address.find(':') != std::string::npos;
    std::array<std::uint8_t, 16> bytes{};
    EXPECT_EQ(inet_pton(v6 ? AF_INET6 : AF_INET, address.c_str(), bytes.data()), 1) << address;
    const unsigned bits = v6 ? v6_bits : v4_bits;
    if (bits == (v6 ? 128U : 32U)) return address;
    for (unsigned i = 0; i < 16; ++i) {
        const int left = static_cast<int>(bits) - 8 * static_cast<int>(i);
        bytes[i] &= static_cast<std::uint8_t>(left >= 8 ? 0xff : left <= 0 ? 0 : 0xff << (8 - left));
    }
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof text);
    return std::string(text) + "/" + std::to_string(bits);
}

/// A key spec as the tests read it: which fields, and the prefix lengths.
struct SpecFields {
    bool src = false, dst = false, sport = false, dport = false, proto = false, vlan = false;
    unsigned src_v4 = 32, src_v6 = 128, dst_v4 = 32, dst_v6 = 128;
};

/// Parses the key part of the specs the tests use (`dst/24+vlan`, `pair`, ...).
inline SpecFields spec_fields(std::string spec) {
    SpecFields f;
    if (spec.size() > 5 && spec.substr(spec.size() - 5) == "+vlan") {
        f.vlan = true;
        spec.resize(spec.size() - 5);
    }
    const auto lengths = [](const std::string& text, unsigned& v4, unsigned& v6) {
        const std::size_t slash = text.find('/');
        if (slash == std::string::npos) return;
        const std::size_t comma = text.find(',', slash);
        v4 = static_cast<unsigned>(std::stoul(text.substr(slash + 1)));
        v6 = comma == std::string::npos ? 64 : static_cast<unsigned>(std::stoul(text.substr(comma + 1)));
    };
    if (spec == "5tuple") {
        f.src = f.dst = f.sport = f.dport = f.proto = true;
    } else if (spec == "pair") {
        f.src = f.dst = true;
    } else if (spec == "vlan") {
        f.vlan = true;
    } else if (spec.rfind("src", 0) == 0 && spec != "sport") {
        f.src = true;
        lengths(spec, f.src_v4, f.src_v6);
    } else if (spec.rfind("dst", 0) == 0) {
        f.dst = true;
        lengths(spec, f.dst_v4, f.dst_v6);
    } else {
        f.sport = spec == "sport";
        f.dport = spec == "dport";
        f.proto = spec == "proto";
    }
    return f;
}

/// The key of a flow under a spec, as "name=value;" pairs in the reports' field names.
inline std::string key_text(const ScenarioFlow& flow, const SpecFields& f) {
    std::string key;
    if (f.src) key += "src=" + prefix_text(flow.src, f.src_v4, f.src_v6) + ";";
    if (f.dst) key += "dst=" + prefix_text(flow.dst, f.dst_v4, f.dst_v6) + ";";
    if (f.sport) key += "sport=" + flow.sport + ";";
    if (f.dport) key += "dport=" + flow.dport + ";";
    if (f.proto) key += "proto=" + flow.proto + ";";
    if (f.vlan) key += "vlan=" + flow.vlan + ";";
    return key;
}

/// One field of a flow, as a distinct count counts it.
inline std::string field_value(const ScenarioFlow& flow, const std::string& field) {
    if (field == "src") return flow.src;
    if (field == "dst") return flow.dst;
    if (field == "sport") return flow.sport;
    if (field == "dport") return flow.dport;
    return flow.proto;
}

struct KeyTruth {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    std::set<std::string> distinct;  // values of the counted field
};

/// The true counts of every key of `spec` (`KEY[:distinct=FIELD]`).
inline std::map<std::string, KeyTruth> key_truth(const ScenarioTruth& truth, const std::string& spec) {
    const std::size_t colon = spec.find(':');
    const SpecFields f = spec_fields(spec.substr(0, colon));
    const std::string field = colon == std::string::npos ? "" : spec.substr(spec.find('=', colon) + 1);
    std::map<std::string, KeyTruth> keys;
    for (const ScenarioFlow& flow : truth.flows) {
        KeyTruth& k = keys[key_text(flow, f)];
        k.packets += flow.packets;
        k.bytes += flow.bytes;
        if (!field.empty()) k.distinct.insert(field_value(flow, field));
    }
    return keys;
}

}  // namespace flowsketch::testing
