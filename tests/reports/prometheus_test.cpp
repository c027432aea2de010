// The Prometheus exposition: checked by parsing our own output against the
// text format 0.0.4 rules, and by the values it must carry.
#include "reports/prometheus.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "reports/format_registry.hpp"

namespace flowsketch::reports {
namespace {

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct Exposition {
    std::map<std::string, std::string> types;  // family -> type
    std::map<std::string, std::string> helps;
    std::vector<Sample> samples;

    // Samples of `name` whose labels include every pair of `match`.
    std::vector<Sample> find(const std::string& name,
                             const std::map<std::string, std::string>& match = {}) const {
        std::vector<Sample> found;
        for (const auto& sample : samples) {
            if (sample.name != name) continue;
            bool all = true;
            for (const auto& [key, value] : match) {
                const auto it = sample.labels.find(key);
                all = all && it != sample.labels.end() && it->second == value;
            }
            if (all) found.push_back(sample);
        }
        return found;
    }
    double value(const std::string& name,
                 const std::map<std::string, std::string>& match = {}) const {
        const auto found = find(name, match);
        if (found.size() != 1) {
            throw std::runtime_error(name + ": " + std::to_string(found.size()) + " samples");
        }
        return found.front().value;
    }
};

// [a-zA-Z_:][a-zA-Z0-9_:]* for metric names; labels without ':'. (No
// std::regex: g++ 12 warns inside it under the sanitizers.)
bool valid_name(const std::string& name, bool allow_colon) {
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                            (allow_colon && c == ':');
        const bool digit = c >= '0' && c <= '9';
        if (!letter && !(digit && i > 0)) return false;
    }
    return true;
}
bool valid_metric_name(const std::string& name) { return valid_name(name, true); }
bool valid_label_name(const std::string& name) { return valid_name(name, false); }

double parse_value(const std::string& text) {
    if (text == "NaN") return std::nan("");
    if (text == "+Inf") return INFINITY;
    if (text == "-Inf") return -INFINITY;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0') throw std::runtime_error("bad value '" + text + "'");
    return value;
}

// A strict reader of the text format: fails the test on anything a
// Prometheus server would reject or that our contract rules out (a sample
// without HELP/TYPE, families interleaved, duplicate series).
Exposition parse(const std::string& text) {
    Exposition result;
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "the last line must end with a newline";
    std::istringstream lines(text);
    std::string line;
    std::string current;  // family whose samples may follow
    std::set<std::string> closed;
    std::set<std::string> series;
    while (std::getline(lines, line)) {
        EXPECT_FALSE(line.empty()) << "empty line";
        if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
            const bool help = line[2] == 'H';
            const std::string rest = line.substr(7);
            const std::string name = rest.substr(0, rest.find(' '));
            EXPECT_TRUE(valid_metric_name(name)) << line;
            if (name != current) {
                EXPECT_EQ(closed.count(name), 0U) << "family " << name << " appears twice";
                if (!current.empty()) closed.insert(current);
                current = name;
            }
            const std::string payload =
                rest.size() > name.size() ? rest.substr(name.size() + 1) : "";
            if (help) {
                EXPECT_EQ(result.helps.count(name), 0U) << "two HELP lines for " << name;
                EXPECT_FALSE(payload.empty()) << line;
                result.helps[name] = payload;
            } else {
                EXPECT_EQ(result.types.count(name), 0U) << "two TYPE lines for " << name;
                EXPECT_TRUE(payload == "counter" || payload == "gauge") << line;
                result.types[name] = payload;
            }
            continue;
        }
        EXPECT_NE(line[0], '#') << "unexpected comment: " << line;
        Sample sample;
        std::size_t pos = 0;
        while (pos < line.size() && line[pos] != '{' && line[pos] != ' ') ++pos;
        sample.name = line.substr(0, pos);
        EXPECT_TRUE(valid_metric_name(sample.name)) << line;
        EXPECT_EQ(sample.name, current) << "sample outside its family's HELP/TYPE block: " << line;
        EXPECT_EQ(result.types.count(sample.name), 1U) << "no TYPE for " << line;
        EXPECT_EQ(result.helps.count(sample.name), 1U) << "no HELP for " << line;
        if (pos < line.size() && line[pos] == '{') {
            ++pos;
            while (pos < line.size() && line[pos] != '}') {
                const std::size_t eq = line.find('=', pos);
                if (eq == std::string::npos) {
                    ADD_FAILURE() << "label without '=': " << line;
                    return result;
                }
                const std::string label = line.substr(pos, eq - pos);
                EXPECT_TRUE(valid_label_name(label)) << line;
                EXPECT_EQ(line[eq + 1], '"') << line;
                std::string value;
                pos = eq + 2;
                for (; pos < line.size() && line[pos] != '"'; ++pos) {
                    if (line[pos] == '\\') {
                        const char next = line.at(++pos);
                        EXPECT_TRUE(next == '\\' || next == '"' || next == 'n') << line;
                        value.push_back(next == 'n' ? '\n' : next);
                    } else {
                        value.push_back(line[pos]);
                    }
                }
                EXPECT_EQ(sample.labels.count(label), 0U) << "label twice: " << line;
                sample.labels[label] = value;
                ++pos;  // closing quote
                if (pos < line.size() && line[pos] == ',') ++pos;
            }
            ++pos;  // closing brace
        }
        EXPECT_EQ(line.at(pos), ' ') << line;
        const std::string value_text = line.substr(pos + 1);
        EXPECT_EQ(value_text.find(' '), std::string::npos)
            << "timestamps are not exported: " << line;
        sample.value = parse_value(value_text);
        std::string key = sample.name;
        for (const auto& [k, v] : sample.labels) key += "|" + k + "=" + v;
        EXPECT_TRUE(series.insert(key).second) << "duplicate series: " << line;
        result.samples.push_back(sample);
    }
    for (const auto& [name, type] : result.types) {
        if (type == "counter") {
            EXPECT_TRUE(name.size() > 6 && name.substr(name.size() - 6) == "_total") << name;
        } else {
            EXPECT_FALSE(name.size() > 6 && name.substr(name.size() - 6) == "_total") << name;
        }
    }
    return result;
}

core::HeavyHitter hitter(std::uint32_t src, std::uint32_t dst, std::uint16_t sport,
                         std::uint16_t dport, std::uint8_t proto, std::uint64_t estimate,
                         std::uint64_t lower) {
    return core::HeavyHitter{core::FlowKey::ipv4(src, dst, sport, dport, proto), estimate, lower};
}

Report make_report(ReportKind kind, std::uint64_t packets, std::uint64_t bytes,
                   std::uint64_t non_ip) {
    Report report;
    report.kind = kind;
    report.start = 1371506290;
    report.end = 1371506300;
    report.packets = packets;
    report.bytes = bytes;
    report.frames = packets + non_ip;
    report.skipped = {{"unsupported_link_type", 0}, {"non_ip", non_ip}};
    report.sketch = SketchDescription{"kirsch-mitzenmacher",
                                      0.000999919745616717,
                                      0.0009795441765479765,
                                      5437,
                                      7,
                                      false,
                                      1239408};
    report.top_packets.rows = {hitter(0xC0A8000D, 0xE0000016, 0, 0, 2, 60, 59),
                          hitter(0x0A000001, 0x0A000002, 51000, 443, 6, 20, 19)};
    report.top_bytes.rows = {hitter(0xC0A80001, 0xC0A8000D, 1901, 62923, 17, 9968, 9805)};
    return report;
}

TEST(PrometheusExposition, TheTestsNameCheckIsStrict) {
    EXPECT_TRUE(valid_metric_name("flowsketch_packets_total"));
    EXPECT_TRUE(valid_metric_name("a:b_9"));
    EXPECT_FALSE(valid_metric_name("9abc"));
    EXPECT_FALSE(valid_metric_name("a-b"));
    EXPECT_FALSE(valid_metric_name(""));
    EXPECT_FALSE(valid_label_name("a:b"));
}

TEST(PrometheusExposition, BeforeAnyReportOnlyZeroCounters) {
    const PrometheusExposition exposition;
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.value("flowsketch_packets_total"), 0);
    EXPECT_EQ(parsed.value("flowsketch_bytes_total"), 0);
    EXPECT_EQ(parsed.value("flowsketch_frames_total"), 0);
    EXPECT_EQ(parsed.value("flowsketch_reports_total", {{"kind", "interval"}}), 0);
    EXPECT_TRUE(parsed.find("flowsketch_sketch_info").empty());
    EXPECT_TRUE(parsed.find("flowsketch_heavy_hitter_packets").empty());
    for (const auto& [name, type] : parsed.types) EXPECT_EQ(type, "counter") << name;
}

TEST(PrometheusExposition, FormatAndValuesOfOneInterval) {
    PrometheusExposition exposition;
    exposition.observe(make_report(ReportKind::interval, 1224, 163229, 126));
    const std::string text = exposition.render();
    const Exposition parsed = parse(text);

    EXPECT_EQ(parsed.types.at("flowsketch_packets_total"), "counter");
    EXPECT_EQ(parsed.value("flowsketch_packets_total"), 1224);
    EXPECT_EQ(parsed.value("flowsketch_bytes_total"), 163229);
    EXPECT_EQ(parsed.value("flowsketch_frames_total"), 1350);
    EXPECT_EQ(parsed.value("flowsketch_skipped_frames_total", {{"reason", "non_ip"}}), 126);
    EXPECT_EQ(
        parsed.value("flowsketch_skipped_frames_total", {{"reason", "unsupported_link_type"}}), 0);
    EXPECT_EQ(parsed.value("flowsketch_reports_total", {{"kind", "interval"}}), 1);
    EXPECT_EQ(parsed.value("flowsketch_reports_total", {{"kind", "final"}}), 0);

    EXPECT_EQ(parsed.types.at("flowsketch_sketch_info"), "gauge");
    const Sample info = parsed.find("flowsketch_sketch_info").at(0);
    EXPECT_EQ(info.value, 1);
    EXPECT_EQ(info.labels.at("variant"), "kirsch-mitzenmacher");
    EXPECT_EQ(info.labels.at("width"), "5437");
    EXPECT_EQ(info.labels.at("depth"), "7");
    EXPECT_EQ(info.labels.at("conservative"), "false");
    EXPECT_EQ(std::stod(info.labels.at("epsilon")), 0.000999919745616717);  // exact round trip
    EXPECT_EQ(std::stod(info.labels.at("delta")), 0.0009795441765479765);
    EXPECT_EQ(parsed.value("flowsketch_sketch_epsilon"), 0.000999919745616717);
    EXPECT_EQ(parsed.value("flowsketch_sketch_width"), 5437);
    EXPECT_EQ(parsed.value("flowsketch_memory_bytes"), 1239408);
    EXPECT_EQ(parsed.value("flowsketch_report_end_timestamp_seconds"), 1371506300);
    EXPECT_EQ(parsed.value("flowsketch_report_start_timestamp_seconds"), 1371506290);
    EXPECT_EQ(parsed.value("flowsketch_report_packets"), 1224);

    const std::map<std::string, std::string> first{{"src", "192.168.0.13"}, {"dst", "224.0.0.22"},
                                                   {"sport", "0"},          {"dport", "0"},
                                                   {"proto", "igmp"}};
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets", first), 60);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets_lower", first), 59);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets_rank", first), 1);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets", {{"proto", "tcp"}, {"dport", "443"}}), 20);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets_rank", {{"proto", "tcp"}, {"dport", "443"}}), 2);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_bytes", {{"sport", "1901"}}), 9968);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_bytes_lower", {{"sport", "1901"}}), 9805);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_bytes_rank", {{"sport", "1901"}}), 1);
    EXPECT_EQ(parsed.find("flowsketch_heavy_hitter_packets").size(), 2U);
    // Exactly the labels the docs promise, no more: the key's fields, no rank.
    EXPECT_EQ(parsed.find("flowsketch_heavy_hitter_bytes").at(0).labels.size(), 5U);
    EXPECT_EQ(parsed.value("flowsketch_report_complete"), 1);
}

TEST(PrometheusExposition, Ipv6FlowLabels) {
    Report report = make_report(ReportKind::interval, 10, 1000, 0);
    std::array<std::uint8_t, 16> src{0xfe, 0x80};
    src[15] = 1;
    std::array<std::uint8_t, 16> dst{0xff, 0x02};
    dst[15] = 0x16;
    report.top_packets.rows = {core::HeavyHitter{core::FlowKey::ipv6(src, dst, 0, 0, 58), 5, 4}};
    PrometheusExposition exposition;
    exposition.observe(report);
    const Exposition parsed = parse(exposition.render());
    const Sample sample = parsed.find("flowsketch_heavy_hitter_packets").at(0);
    EXPECT_EQ(sample.labels.at("src"), "fe80::1");
    EXPECT_EQ(sample.labels.at("dst"), "ff02::16");
    EXPECT_EQ(sample.labels.at("proto"), "icmpv6");
}

// An extra key spec's series share the families, labelled with the spec and
// only its fields; the 5-tuple's series keep their labels (no `key`).
TEST(PrometheusExposition, ExtraKeySeriesCarryTheirSpec) {
    Report report = make_report(ReportKind::interval, 10, 1000, 0);
    const core::KeySpec spec = core::KeySpec::parse("dst/24");
    core::KeyTops tops;
    tops.top_packets = core::TopList{spec, core::Weight::packets, 10,
                                     {core::HeavyHitter{spec.apply(core::FlowKey::ipv4(1, 0xC6336407, 2, 3, 6)), 9, 8}}};
    tops.top_bytes = core::TopList{spec, core::Weight::bytes, 1000, {}};
    report.keys.push_back(tops);
    PrometheusExposition exposition;
    exposition.observe(report);
    const Exposition parsed = parse(exposition.render());
    const auto samples = parsed.find("flowsketch_heavy_hitter_packets");
    ASSERT_EQ(samples.size(), 3u);
    EXPECT_EQ(samples[0].labels.count("key"), 0u);
    const Sample& keyed = samples[2];
    EXPECT_EQ(keyed.labels.at("key"), "dst/24,64");
    EXPECT_EQ(keyed.labels.at("dst"), "198.51.100.0/24");
    EXPECT_EQ(keyed.labels.count("rank"), 0u);
    EXPECT_EQ(parsed.find("flowsketch_heavy_hitter_packets_rank").at(2).value, 1);
    EXPECT_EQ(keyed.labels.count("src"), 0u);
    EXPECT_EQ(keyed.value, 9);
    EXPECT_EQ(parsed.find("flowsketch_heavy_hitter_packets_lower").at(2).value, 8);
}

TEST(PrometheusExposition, CountersSumIntervalsAndTheFinalReportAddsNothingTwice) {
    PrometheusExposition exposition;
    exposition.observe(make_report(ReportKind::interval, 100, 10000, 3));
    exposition.observe(make_report(ReportKind::interval, 50, 4000, 1));
    Report last = make_report(ReportKind::interval, 7, 700, 0);
    last.top_packets.rows = {hitter(1, 2, 3, 4, 17, 7, 6)};
    exposition.observe(last);
    // The final report repeats the run's totals (the sum of the intervals).
    Report final_report = make_report(ReportKind::final_report, 157, 14700, 4);
    final_report.top_packets.rows = {hitter(9, 9, 9, 9, 6, 157, 150)};
    exposition.observe(final_report);

    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.value("flowsketch_packets_total"), 157);
    EXPECT_EQ(parsed.value("flowsketch_bytes_total"), 14700);
    EXPECT_EQ(parsed.value("flowsketch_frames_total"), 161);
    EXPECT_EQ(parsed.value("flowsketch_skipped_frames_total", {{"reason", "non_ip"}}), 4);
    EXPECT_EQ(parsed.value("flowsketch_reports_total", {{"kind", "interval"}}), 3);
    EXPECT_EQ(parsed.value("flowsketch_reports_total", {{"kind", "final"}}), 1);
    // Heavy hitters stay those of the last interval, not the whole run's: its
    // top, and the keys of earlier intervals within the staleness (rank 0).
    const auto ranks = parsed.find("flowsketch_heavy_hitter_packets_rank");
    ASSERT_EQ(ranks.size(), 3U);
    EXPECT_EQ(ranks[0].value, 1);
    EXPECT_EQ(ranks[0].labels.at("proto"), "udp");
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets", {{"proto", "udp"}}), 7);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets", {{"proto", "tcp"}}), 7);  // left: the floor
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets_lower", {{"proto", "tcp"}}), 0);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets_rank", {{"proto", "tcp"}}), 0);
    EXPECT_TRUE(parsed.find("flowsketch_heavy_hitter_packets", {{"proto", "tcp"}, {"src", "0.0.0.9"}}).empty());
    EXPECT_EQ(parsed.value("flowsketch_report_packets"), 7);
}

TEST(PrometheusExposition, OnlyAFinalReportCountsAndDescribes) {
    // --interval 0: the final report is the only one.
    PrometheusExposition exposition;
    exposition.observe(make_report(ReportKind::final_report, 1224, 163229, 126));
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.value("flowsketch_packets_total"), 1224);
    EXPECT_EQ(parsed.value("flowsketch_frames_total"), 1350);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets", {{"proto", "igmp"}}), 60);
    EXPECT_EQ(parsed.value("flowsketch_report_complete"), 1);  // the whole run is the window
}

TEST(PrometheusExposition, CountersNeverDecrease) {
    PrometheusExposition exposition;
    std::map<std::string, double> previous;
    const std::vector<Report> reports = {
        make_report(ReportKind::interval, 10, 100, 1), make_report(ReportKind::interval, 0, 0, 0),
        make_report(ReportKind::interval, 5, 60, 2),
        // A final report below the intervals' sum (cannot happen today) must not lower them.
        make_report(ReportKind::final_report, 1, 1, 0),
        make_report(ReportKind::interval, 3, 30, 0)};
    for (const auto& report : reports) {
        exposition.observe(report);
        const Exposition parsed = parse(exposition.render());
        for (const auto& sample : parsed.samples) {
            if (parsed.types.at(sample.name) != "counter") continue;
            std::string key = sample.name;
            for (const auto& [k, v] : sample.labels) key += "|" + k + "=" + v;
            const auto it = previous.find(key);
            if (it != previous.end()) {
                EXPECT_GE(sample.value, it->second) << key;
            }
            previous[key] = sample.value;
        }
    }
    EXPECT_EQ(previous.at("flowsketch_packets_total"), 18);
}

TEST(PrometheusExposition, LabelValuesAreEscaped) {
    EXPECT_EQ(escape_label_value("plain"), "plain");
    EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    // A hostile name reaches the output through a label and reads back intact.
    Report report = make_report(ReportKind::interval, 1, 1, 0);
    report.skipped.push_back({"we\"ird\\reason\nx", 5});
    report.interfaces.push_back({"eth0\" } evil 1\n#", 10, 12, 2, 0});
    PrometheusExposition exposition;
    exposition.observe(report);
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.value("flowsketch_skipped_frames_total", {{"reason", "we\"ird\\reason\nx"}}),
              5);
    EXPECT_EQ(parsed.value("flowsketch_interface_packets_dropped_total",
                           {{"interface", "eth0\" } evil 1\n#"}}),
              2);
}

TEST(PrometheusExposition, HeavyHitterSeriesAreCapped) {
    Report report = make_report(ReportKind::interval, 1000, 100000, 0);
    report.top_packets.rows.clear();
    report.top_bytes.rows.clear();
    for (std::uint32_t i = 0; i < 50; ++i) {
        report.top_packets.rows.push_back(hitter(i, i + 1, 1, 2, 6, 100 - i, 90 - i));
        report.top_bytes.rows.push_back(hitter(i, i + 1, 1, 2, 6, 1000 - i, 900 - i));
    }
    PrometheusExposition exposition(ExpositionOptions{5});
    exposition.observe(report);
    const Exposition parsed = parse(exposition.render());
    std::size_t heavy = 0;
    for (const auto& sample : parsed.samples) {
        if (sample.name.rfind("flowsketch_heavy_hitter_", 0) == 0) ++heavy;
    }
    EXPECT_EQ(heavy, 6U * 5U);  // estimate, lower and rank, by packets and by bytes
    const Sample fifth = parsed.find("flowsketch_heavy_hitter_packets_rank").at(4);
    EXPECT_EQ(fifth.value, 5);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets", fifth.labels), 96);

    EXPECT_THROW(PrometheusExposition(ExpositionOptions{max_exported_heavy_hitters + 1}),
                 std::invalid_argument);
    // The default cap is the CLI's cap on --top: the series count is bounded by it.
    EXPECT_EQ(ExpositionOptions{}.max_heavy_hitters, 10000U);
    EXPECT_THROW(PrometheusExposition(ExpositionOptions{10, 3, 0}), std::invalid_argument);
    EXPECT_THROW(PrometheusExposition(ExpositionOptions{10, 3, max_heavy_hitter_series_cap + 1}),
                 std::invalid_argument);
}

TEST(PrometheusExposition, FlowLifecycleAndInterfaces) {
    PrometheusExposition exposition;
    for (int i = 0; i < 2; ++i) {
        Report report = make_report(ReportKind::interval, 10, 100, 0);
        report.has_flows = true;
        report.flows.counts.new_flows = 4;
        report.flows.counts.expired = 1.5;
        report.flows.counts.ended = 2;
        report.flows.counts.active = 3.25 + i;
        report.flows.counts.active_lower = 3;
        report.flows.counts.active_upper = 5;
        report.flows.counts.fpr = 0.001;
        report.flows.seen_filter = "two-choice";
        report.flows.idle_timeout = 30;
        report.flows.generations = 4;
        report.flows.max_flows = 100000;
        report.interfaces = {{"eth0", 10, 11, 1, 0}, {"eth1", 5, 5, 0, 2}};
        report.counts_are_lower_bounds = true;
        exposition.observe(report);
    }
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.value("flowsketch_flows_new_total"), 8);
    EXPECT_EQ(parsed.value("flowsketch_flows_expired_total"), 3);
    EXPECT_EQ(parsed.value("flowsketch_flows_ended_total"), 4);
    EXPECT_EQ(parsed.value("flowsketch_flows_active"), 4.25);  // the last interval's
    EXPECT_EQ(parsed.value("flowsketch_flows_active_upper"), 5);
    EXPECT_EQ(parsed.value("flowsketch_seen_filter_false_positive_rate"), 0.001);
    EXPECT_EQ(parsed.value("flowsketch_flow_idle_timeout_seconds"), 30);
    EXPECT_EQ(parsed.find("flowsketch_flow_tracking_info").at(0).labels.at("seen_filter"),
              "two-choice");
    EXPECT_EQ(parsed.value("flowsketch_interface_packets_received_total", {{"interface", "eth0"}}),
              22);
    EXPECT_EQ(parsed.value("flowsketch_interface_packets_dropped_total", {{"interface", "eth0"}}),
              2);
    EXPECT_EQ(
        parsed.value("flowsketch_interface_packets_if_dropped_total", {{"interface", "eth1"}}), 4);
    EXPECT_EQ(parsed.value("flowsketch_interface_frames_total", {{"interface", "eth1"}}), 10);
    EXPECT_EQ(parsed.value("flowsketch_counts_are_lower_bounds"), 1);
}

// docs/prometheus.md promises at most 6·min(C, K·(S+1)·(1+E)) + 4·(interfaces) + 50
// series; one interval's top fills K per ranking.
TEST(PrometheusExposition, SeriesCountMatchesTheDocumentedBound) {
    Report report = make_report(ReportKind::interval, 1000, 100000, 0);
    report.skipped.clear();
    for (const char* reason :
         {"unsupported_link_type", "non_ip", "truncated_link", "link_limit", "truncated_ip",
          "invalid_ip", "ipv6_extension_limit", "truncated_transport", "invalid_transport"}) {
        report.skipped.push_back({reason, 1});
    }
    report.top_packets.rows.clear();
    report.top_bytes.rows.clear();
    const std::uint32_t k = 10;
    for (std::uint32_t i = 0; i < k; ++i) {
        report.top_packets.rows.push_back(hitter(i, i + 1, 1, 2, 6, 100 - i, 90 - i));
        report.top_bytes.rows.push_back(hitter(i, i + 1, 1, 2, 6, 1000 - i, 900 - i));
    }
    report.has_flows = true;
    report.interfaces = {{"eth0", 1, 1, 0, 0}, {"eth1", 1, 1, 0, 0}};
    PrometheusExposition exposition;
    exposition.observe(report);
    exposition.observe(make_report(ReportKind::final_report, 1000, 100000, 0));
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.samples.size(), 6U * k + 4U * 2U + 50U);
}

// The end of a replay (or of a live run) cuts its last interval short: its
// counts join the counters, but a dashboard keeps the last complete interval.
TEST(PrometheusExposition, APartialLastIntervalCountsButKeepsTheCompleteIntervalsGauges) {
    PrometheusExposition exposition;
    exposition.observe(make_report(ReportKind::interval, 1224, 163229, 126));
    Report tail = make_report(ReportKind::interval, 3, 300, 0);
    tail.partial = true;
    tail.start = 1371506300;
    tail.end = 1371506310;
    tail.top_packets.rows = {hitter(1, 2, 3, 4, 17, 3, 2)};
    exposition.observe(tail);
    exposition.observe(make_report(ReportKind::final_report, 1227, 163529, 126));
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.value("flowsketch_packets_total"), 1227);
    EXPECT_EQ(parsed.value("flowsketch_reports_total", {{"kind", "interval"}}), 2);
    EXPECT_EQ(parsed.value("flowsketch_report_packets"), 1224);
    EXPECT_EQ(parsed.value("flowsketch_report_end_timestamp_seconds"), 1371506300);
    EXPECT_EQ(parsed.value("flowsketch_report_complete"), 1);
    EXPECT_EQ(parsed.find("flowsketch_heavy_hitter_packets", {{"proto", "udp"}}).size(), 0U);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets_rank", {{"proto", "igmp"}}), 1);
}

TEST(PrometheusExposition, ARunShorterThanAnIntervalIsDescribedAndSaysSo) {
    PrometheusExposition exposition;
    Report only = make_report(ReportKind::interval, 10, 1000, 0);
    only.partial = true;
    exposition.observe(only);
    exposition.observe(make_report(ReportKind::final_report, 10, 1000, 0));
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.value("flowsketch_report_complete"), 0);
    EXPECT_EQ(parsed.value("flowsketch_report_packets"), 10);
    EXPECT_EQ(parsed.value("flowsketch_heavy_hitter_packets", {{"proto", "igmp"}}), 60);
    // A complete interval after it (live: cannot happen; a contract all the same) takes over.
    exposition.observe(make_report(ReportKind::interval, 20, 2000, 0));
    EXPECT_EQ(parse(exposition.render()).value("flowsketch_report_complete"), 1);
}

// Help texts say which window a family describes.
TEST(PrometheusExposition, HelpTextsNameTheWindow) {
    Report report = make_report(ReportKind::interval, 10, 100, 0);
    report.has_flows = true;
    report.interfaces = {{"eth0", 1, 1, 0, 0}};
    PrometheusExposition exposition;
    exposition.observe(report);
    const Exposition parsed = parse(exposition.render());
    for (const auto& [name, help] : parsed.helps) {
        const bool run = help.rfind("Whole run: ", 0) == 0;
        const bool interval = help.rfind("Last complete interval: ", 0) == 0;
        const bool configuration = help.rfind("Configuration: ", 0) == 0;
        if (parsed.types.at(name) == "counter") {
            EXPECT_TRUE(run) << name << ": " << help;
        } else {
            EXPECT_TRUE(interval || configuration || name == "flowsketch_report_complete" ||
                        name == "flowsketch_input_truncated")
                << name << ": " << help;
        }
    }
}

Report report_with_flows(ReportKind kind) {
    Report report = make_report(kind, 500, 50000, 0);
    report.has_flows = true;
    core::FlowCounts& f = report.flows.counts;
    f.new_flows = 41;
    f.new_undercount_bound = 2.3;
    f.new_undercount_expected = 0.4;
    f.expired = 12.6;
    f.expired_stderr = 1.25;
    f.ended = 7;
    f.ended_undercount_bound = 1.01;
    f.active = 30.2;
    f.active_lower = 25.1;
    f.active_upper = 35.4;
    f.fpr = 0.0002;
    f.target_fpr = 0.001;
    report.flows.seen_filter = "blocked";
    report.flows.idle_timeout = 60;
    report.flows.generations = 8;
    report.flows.max_flows = 1000;
    return report;
}

// The flow counts and their bounds are the JSON report's numbers, and the
// text report's.
TEST(PrometheusExposition, FlowBoundsMatchTheJsonAndTextReports) {
    const Report interval = report_with_flows(ReportKind::interval);
    PrometheusExposition exposition;
    exposition.observe(interval);
    const Exposition parsed = parse(exposition.render());
    const auto json = nlohmann::json::parse(json_format().make()->render(interval));
    const auto& flows = json.at("flows");
    const double new_flows = flows.at("new").get<double>();
    EXPECT_EQ(parsed.value("flowsketch_interval_flows_new"), new_flows);
    EXPECT_EQ(parsed.value("flowsketch_interval_flows_new_upper"),
              new_flows + flows.at("new_undercount_bound").get<double>());
    const double expired = flows.at("precise").at("expired").get<double>();
    const double stderr_ = flows.at("precise").at("expired_stderr").get<double>();
    EXPECT_EQ(parsed.value("flowsketch_interval_flows_expired"), expired);
    EXPECT_DOUBLE_EQ(parsed.value("flowsketch_interval_flows_expired_lower"), expired - 3 * stderr_);
    EXPECT_DOUBLE_EQ(parsed.value("flowsketch_interval_flows_expired_upper"), expired + 3 * stderr_);
    const double ended = flows.at("ended").get<double>();
    EXPECT_EQ(parsed.value("flowsketch_interval_flows_ended"), ended);
    EXPECT_EQ(parsed.value("flowsketch_interval_flows_ended_upper"),
              ended + flows.at("ended_undercount_bound").get<double>());
    EXPECT_EQ(parsed.value("flowsketch_flows_active_lower"), flows.at("precise").at("active_lower").get<double>());
    EXPECT_EQ(parsed.value("flowsketch_interval_flows_new_upper"), 44);  // 41 + ⌈2.3⌉
    EXPECT_EQ(parsed.value("flowsketch_interval_flows_ended_upper"), 9);

    const std::string text = text_format().make()->render(interval);
    EXPECT_NE(text.find("new 41 (may miss up to 3, p ≥ 0.999)"), std::string::npos) << text;
    EXPECT_NE(text.find("ended (FIN/RST) 7"), std::string::npos) << text;
}

// The run's counters and their bounds are the final report's sums.
TEST(PrometheusExposition, RunBoundCountersAreTheFinalReportsSums) {
    PrometheusExposition exposition;
    exposition.observe(report_with_flows(ReportKind::interval));
    exposition.observe(report_with_flows(ReportKind::interval));
    Report final_report = report_with_flows(ReportKind::final_report);
    core::FlowCounts& f = final_report.flows.counts;
    f.new_flows = 82;
    f.new_undercount_bound = 4.6;
    f.expired = 25.2;
    f.expired_stderr = std::sqrt(2 * 1.25 * 1.25);
    f.ended = 14;
    f.ended_undercount_bound = 2.02;
    exposition.observe(final_report);
    const Exposition parsed = parse(exposition.render());
    const auto json = nlohmann::json::parse(json_format().make()->render(final_report));
    const auto& precise = json.at("flows").at("precise");
    EXPECT_EQ(parsed.value("flowsketch_flows_new_total"), json.at("flows").at("new").get<double>());
    EXPECT_DOUBLE_EQ(parsed.value("flowsketch_flows_new_undercount_bound_total"),
                     precise.at("new_undercount_bound").get<double>());
    EXPECT_DOUBLE_EQ(parsed.value("flowsketch_flows_expired_total"), precise.at("expired").get<double>());
    EXPECT_DOUBLE_EQ(std::sqrt(parsed.value("flowsketch_flows_expired_variance_total")),
                     precise.at("expired_stderr").get<double>());
    EXPECT_EQ(parsed.value("flowsketch_flows_ended_total"), json.at("flows").at("ended").get<double>());
    EXPECT_DOUBLE_EQ(parsed.value("flowsketch_flows_ended_undercount_bound_total"),
                     precise.at("ended_undercount_bound").get<double>());
}

TEST(PrometheusExposition, TunnelCountsByTypeAndReplayInterfacesWithTheirFile) {
    PrometheusExposition exposition;
    const Exposition without = parse([&] {
        exposition.observe(make_report(ReportKind::interval, 10, 100, 0));
        return exposition.render();
    }());
    EXPECT_EQ(without.types.count("flowsketch_tunnelled_frames_total"), 0U);
    EXPECT_EQ(without.types.count("flowsketch_interface_frames_total"), 0U);
    for (int i = 0; i < 2; ++i) {
        Report report = make_report(ReportKind::interval, 10, 100, 0);
        report.tunnels.inner = {{"gre", 1}, {"vxlan", 4}};
        report.tunnels.outer_keyed = {{"truncated_tunnel", 2}, {"non_ip", 0}};
        FileInterfaceReport interface;
        interface.name = "eth0";
        interface.file = "a.pcapng";
        interface.frames = 7;
        report.file_interfaces = {interface};
        exposition.observe(report);
    }
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.types.at("flowsketch_tunnelled_frames_total"), "counter");
    EXPECT_EQ(parsed.value("flowsketch_tunnelled_frames_total", {{"type", "vxlan"}}), 8);
    EXPECT_EQ(parsed.value("flowsketch_tunnelled_frames_total", {{"type", "gre"}}), 2);
    EXPECT_EQ(parsed.value("flowsketch_tunnel_outer_keyed_frames_total", {{"reason", "truncated_tunnel"}}), 4);
    EXPECT_EQ(parsed.value("flowsketch_tunnel_outer_keyed_frames_total", {{"reason", "non_ip"}}), 0);
    EXPECT_EQ(parsed.value("flowsketch_interface_frames_total", {{"interface", "eth0"}, {"file", "a.pcapng"}}), 14);
    EXPECT_EQ(parsed.types.count("flowsketch_interface_packets_received_total"), 0U);  // a file has no drops
}

TEST(PrometheusExposition, NoFlowFamiliesWithoutTheLifecycle) {
    PrometheusExposition exposition;
    exposition.observe(make_report(ReportKind::interval, 10, 100, 0));
    const Exposition parsed = parse(exposition.render());
    EXPECT_EQ(parsed.types.count("flowsketch_flows_new_total"), 0U);
    EXPECT_EQ(parsed.types.count("flowsketch_flows_active"), 0U);
    EXPECT_EQ(parsed.types.count("flowsketch_interface_packets_dropped_total"), 0U);
}

TEST(PrometheusExposition, NonFiniteValuesUseTheFormatsSpelling) {
    Report report = make_report(ReportKind::interval, 1, 1, 0);
    report.sketch.epsilon = std::nan("");
    report.sketch.delta = INFINITY;
    PrometheusExposition exposition;
    exposition.observe(report);
    const std::string text = exposition.render();
    EXPECT_NE(text.find("flowsketch_sketch_epsilon NaN\n"), std::string::npos);
    EXPECT_NE(text.find("flowsketch_sketch_delta +Inf\n"), std::string::npos);
    parse(text);
}

}  // namespace
}  // namespace flowsketch::reports
