// `flowsketch gen --scenario`: each scenario's flows have the shape its name
// promises, the truth's flow lines and scenario lines agree with what the
// tests' own decoder finds in the pcap, the recorded command reproduces the
// same bytes, and bad scenarios are refused naming themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/gen_support.hpp"
#include "tests/support/scenario_truth.hpp"

namespace flowsketch::gen_test {
namespace {

using flowsketch::testing::read_scenario_truth;
using flowsketch::testing::ScenarioFlow;
using flowsketch::testing::ScenarioTruth;

const std::vector<std::string> scenario_options = {
    "--packets", "20000", "--flows", "2000", "--rate", "10000", "--vlan", "0.3", "--seed", "9",
    "--syn-flood", "500",
    "--scenario", "syn-flood,packets=3000,sources=1000,target=203.0.113.5,port=443",
    "--scenario", "carpet-bomb,packets=2000,sources=300",
    "--scenario", "horizontal-scan,hosts=700,port=23,start=0.5,duration=1",
    "--scenario", "vertical-scan,ports=400,packets=800",
    "--scenario", "surge,packets=1000,start=1,duration=0.5"};

struct Generated {
    std::string pcap;
    ScenarioTruth truth;
};

Generated generate(const std::string& name, std::vector<std::string> options) {
    Generated g;
    g.pcap = tmp_path(name + ".pcap");
    options.insert(options.begin(), {"--out", g.pcap, "--snaplen", "128"});
    EXPECT_EQ(run_gen(options), 0);
    g.truth = read_scenario_truth(g.pcap + ".truth.tsv");
    return g;
}

void remove_files(const Generated& g) {
    std::remove(g.pcap.c_str());
    std::remove((g.pcap + ".truth.tsv").c_str());
}

std::vector<const ScenarioFlow*> flows_of(const ScenarioTruth& truth, std::size_t scenario) {
    std::vector<const ScenarioFlow*> flows;
    for (const ScenarioFlow& flow : truth.flows) {
        if (flow.scenario == scenario) flows.push_back(&flow);
    }
    return flows;
}

// Without the --syn-flood, whose padded frames the tests' decoder does not take.
std::vector<std::string> without_flood(std::vector<std::string> options) {
    const auto flood = std::find(options.begin(), options.end(), "--syn-flood");
    options.erase(flood, flood + 2);
    return options;
}

TEST(GenScenarios, TruthMatchesThePcap) {
    const Generated g = generate("scenarios", without_flood(scenario_options));
    const PcapScan scan = scan_pcap(g.pcap);
    // Every flow line is what the pcap holds, and nothing else is in it.
    std::map<std::string, FlowCounts> from_truth;
    std::set<std::string> tagged;
    std::uint64_t packets = 0;
    for (const ScenarioFlow& flow : g.truth.flows) {
        const std::string key = flow.proto + "\t" + flow.src + "\t" + flow.dst + "\t" + flow.sport + "\t" + flow.dport;
        EXPECT_TRUE(from_truth.emplace(key, FlowCounts{flow.packets, flow.bytes}).second) << "twice: " << key;
        if (flow.vlan != "0") tagged.insert(key);
        EXPECT_TRUE(flow.scenario == 0 || flow.vlan == "0") << "scenario flows are untagged";
        packets += flow.packets;
    }
    EXPECT_EQ(from_truth, scan.flows);
    EXPECT_EQ(tagged, scan.vlan_flows);
    EXPECT_EQ(scan.frames, packets);
    EXPECT_EQ(scan.non_monotonic, 0u);
    EXPECT_EQ(scan.bad_ipv4_checksums + scan.bad_l4_checksums, 0u);
    EXPECT_EQ(g.truth.comments.at("frames"), std::to_string(packets));
    EXPECT_EQ(g.truth.comments.at("background_packets"), "20000");
    EXPECT_EQ(g.truth.header, "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes\tvlan\tscenario");
    // Each scenario line sums its flows.
    std::uint64_t scenario_packets = 0;
    for (std::size_t s = 1; s <= g.truth.scenarios.size(); ++s) {
        const auto& line = g.truth.scenarios[s - 1];
        std::uint64_t p = 0;
        std::uint64_t b = 0;
        const auto flows = flows_of(g.truth, s);
        for (const ScenarioFlow* flow : flows) {
            p += flow->packets;
            b += flow->bytes;
        }
        EXPECT_EQ(flows.size(), line.flows) << line.text;
        EXPECT_EQ(p, line.packets) << line.text;
        EXPECT_EQ(b, line.bytes) << line.text;
        EXPECT_LE(line.first_ns, line.last_ns);
        scenario_packets += p;
    }
    EXPECT_EQ(g.truth.comments.at("scenario_packets"), std::to_string(scenario_packets));
    EXPECT_EQ(packets, 20000u + scenario_packets);
    remove_files(g);
}

TEST(GenScenarios, EachScenarioHasItsShape) {
    const Generated g = generate("shapes", scenario_options);
    const ScenarioTruth& t = g.truth;
    ASSERT_EQ(t.scenarios.size(), 5u);
    const auto distinct = [&](std::size_t scenario, std::string ScenarioFlow::*field) {
        std::set<std::string> values;
        for (const ScenarioFlow* flow : flows_of(t, scenario)) values.insert(flow->*field);
        return values;
    };
    const std::int64_t start_ns = 1'700'000'000LL * 1'000'000'000LL;
    // syn-flood: 1,000 sources, each one flow, to one host and port, all SYNs of 60 bytes.
    EXPECT_EQ(t.scenarios[0].text, "syn-flood,packets=3000,sources=1000,target=203.0.113.5,port=443");
    EXPECT_EQ(distinct(1, &ScenarioFlow::src).size(), 1000u);
    EXPECT_EQ(distinct(1, &ScenarioFlow::dst), (std::set<std::string>{"203.0.113.5"}));
    EXPECT_EQ(distinct(1, &ScenarioFlow::dport), (std::set<std::string>{"443"}));
    EXPECT_EQ(t.scenarios[0].bytes, 3000u * 60u);
    // carpet-bomb: 300 sources onto all 256 hosts of 192.0.2.0/24.
    EXPECT_EQ(distinct(2, &ScenarioFlow::src).size(), 300u);
    const std::set<std::string> hosts = distinct(2, &ScenarioFlow::dst);
    EXPECT_EQ(hosts.size(), 256u);
    for (const std::string& host : hosts) EXPECT_EQ(host.rfind("192.0.2.", 0), 0u) << host;
    // horizontal-scan: one source, one port, 700 hosts, between 0.5 and 1.5 s.
    EXPECT_EQ(distinct(3, &ScenarioFlow::src).size(), 1u);
    EXPECT_EQ(distinct(3, &ScenarioFlow::dport), (std::set<std::string>{"23"}));
    EXPECT_EQ(distinct(3, &ScenarioFlow::dst).size(), 700u);
    EXPECT_GE(t.scenarios[2].first_ns, start_ns + 500'000'000);
    EXPECT_LE(t.scenarios[2].last_ns, start_ns + 1'500'000'000);
    // vertical-scan: one source to one host, ports 1..400, two packets each.
    EXPECT_EQ(distinct(4, &ScenarioFlow::src).size(), 1u);
    EXPECT_EQ(distinct(4, &ScenarioFlow::dst).size(), 1u);
    const std::set<std::string> ports = distinct(4, &ScenarioFlow::dport);
    EXPECT_EQ(ports.size(), 400u);
    EXPECT_TRUE(ports.count("1") && ports.count("400") && !ports.count("401"));
    for (const ScenarioFlow* flow : flows_of(t, 4)) EXPECT_EQ(flow->packets, 2u);
    // surge: one UDP flow of 1,500-byte frames from 1 s to 1.5 s.
    const auto surge = flows_of(t, 5);
    ASSERT_EQ(surge.size(), 1u);
    EXPECT_EQ(surge[0]->proto, "17");
    EXPECT_EQ(surge[0]->packets, 1000u);
    EXPECT_EQ(surge[0]->bytes, 1000u * 1500u);
    EXPECT_GE(t.scenarios[4].first_ns, start_ns + 1'000'000'000);
    EXPECT_LE(t.scenarios[4].last_ns, start_ns + 1'500'000'000);
    remove_files(g);
}

// The truth's command line, run again, writes the same pcap and truth.
TEST(GenScenarios, RecordedCommandReproducesTheBytes) {
    const Generated g = generate("first", scenario_options);
    const std::string command = g.truth.comments.at("command");
    const std::string prefix = "(output paths omitted): flowsketch gen ";
    ASSERT_EQ(command.rfind(prefix, 0), 0u) << command;
    std::vector<std::string> args;
    std::istringstream words(command.substr(prefix.size()));
    for (std::string word; words >> word;) args.push_back(word);
    const std::string again = tmp_path("again.pcap");
    args.insert(args.begin(), {"--out", again});
    ASSERT_EQ(run_gen(args), 0);
    EXPECT_EQ(read_bytes(again), read_bytes(g.pcap));
    EXPECT_EQ(read_bytes(again + ".truth.tsv"), read_bytes(g.pcap + ".truth.tsv"));
    std::remove(again.c_str());
    std::remove((again + ".truth.tsv").c_str());
    remove_files(g);
}

TEST(GenScenarios, BadScenariosAreRefusedNamingThemselves) {
    for (const std::string text :
         {"ddos", "syn-flood,packets=0", "syn-flood,packets=10,sources=20", "syn-flood,hosts=5",
          "carpet-bomb,packets=100", "vertical-scan,ports=70000", "surge,start=-1", "surge,target=10.1.2.3",
          "horizontal-scan,target=100.63.255.255,hosts=2", "syn-flood,port=80,port=81", "surge,packets"}) {
        EXPECT_THROW(parse_gen({"--out", tmp_path("bad.pcap"), "--scenario", text}), CLI::ValidationError) << text;
        try {
            parse_gen({"--out", tmp_path("bad.pcap"), "--scenario", text});
        } catch (const CLI::ValidationError& e) {
            EXPECT_NE(std::string(e.what()).find("'" + text + "'"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(parse_gen({"--out", tmp_path("bad.pcap"), "--lifetimes", "--scenario", "surge"}),
                 CLI::ValidationError);
}

// Without --scenario the truth has neither the scenario lines nor the columns.
TEST(GenScenarios, WithoutScenariosTheTruthIsAsBefore) {
    const std::string pcap = tmp_path("plain.pcap");
    ASSERT_EQ(run_gen({"--out", pcap, "--packets", "1000", "--flows", "100", "--syn-flood", "10"}), 0);
    const Truth truth = read_truth(pcap + ".truth.tsv");
    EXPECT_EQ(truth.header, "proto\tsrc\tdst\tsport\tdport\tpackets\tbytes");
    EXPECT_EQ(truth.comments.count("scenario"), 0u);
    EXPECT_EQ(truth.comments.count("scenario_packets"), 0u);
    std::remove(pcap.c_str());
    std::remove((pcap + ".truth.tsv").c_str());
}

}  // namespace
}  // namespace flowsketch::gen_test
