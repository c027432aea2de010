// --html in a real browser: headless chromium loads the page with no console
// message (its Content-Security-Policy would report any request it makes),
// every plot is in the rendered DOM with SVG content, the top flow of the
// independent truth is shown, and names from the command line cannot inject
// markup. Skipped only when chromium is not installed.
#include <gtest/gtest.h>

#include <algorithm>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/headless_browser.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

// Every plot is drawn: a line, a bar or the "none" of an empty list, never an empty <svg>.
void expect_plots(const std::string& dom, const std::vector<std::string>& ids) {
    for (const std::string& id : ids) {
        const std::string svg = svg_of(dom, id);
        ASSERT_FALSE(svg.empty()) << id << " missing from the rendered page";
        EXPECT_TRUE(svg.find("<polyline") != std::string::npos || svg.find("<rect") != std::string::npos) << id;
    }
}

// The source address of the truth's largest flow by packets.
std::string top_source(const Truth& truth) {
    std::uint64_t most = 0;
    std::string source;
    for (const auto& [key, flow] : truth.flows) {
        if (flow.packets > most) {
            most = flow.packets;
            source = std::get<1>(key);
        }
    }
    return source;
}

const std::vector<std::string> series_plots = {"plot-packets",      "plot-bytes",         "plot-flows-new",
                                               "plot-flows-active", "plot-flows-expired", "plot-skipped",
                                               "plot-top-packets",  "plot-top-bytes"};

class HtmlReportBrowser : public ::testing::Test {
protected:
    void SetUp() override {
        browser_ = find_chromium();
        if (browser_.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
    }
    std::string browser_;
};

TEST_F(HtmlReportBrowser, RealCaptureRendersEveryPlotAndTheTopFlow) {
    const std::string capture = "suricata-verify-output-eve-ftp-data.pcap";
    const std::string html = tmp_path("real-" + std::to_string(::getpid()) + ".html");
    const RunResult run = run_flowsketch("-r " + pcap_path(capture) + " --interval 1 --html " + html);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const Rendered page = render(browser_, html);
    EXPECT_TRUE(page.console.empty()) << page.console.front();
    EXPECT_NE(page.dom.find("data-rendered=\""), std::string::npos) << "the page's script did not run to its end";
    expect_plots(page.dom, series_plots);
    const std::string top = top_source(read_truth(pcap_path(capture) + ".truth.tsv"));
    ASSERT_FALSE(top.empty());
    EXPECT_NE(svg_of(page.dom, "plot-top-packets").find(top), std::string::npos) << top;
    EXPECT_NE(page.dom.find("flowsketch final report"), std::string::npos);
    std::remove(html.c_str());
}

TEST_F(HtmlReportBrowser, GeneratedTraceHasOnePointPerIntervalAndKeyPlots) {
    const std::string pcap = tmp_path("html-gen-" + std::to_string(::getpid()) + ".pcap");
    // 100,000 packets at 20,000 per second: 5 s of packet time, 10 intervals of 0.5 s.
    const RunResult gen = run_flowsketch("gen --out " + pcap + " --packets 100000 --flows 5000 --zipf 1.2 --rate 20000 --seed 5");
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const std::string html = tmp_path("gen-" + std::to_string(::getpid()) + ".html");
    const std::string jsonl_path = tmp_path("gen-" + std::to_string(::getpid()) + ".jsonl");
    std::remove(jsonl_path.c_str());
    const RunResult run = run_flowsketch("-r " + pcap + " --interval 0.5 --key src:distinct=dst --format json -o " +
                                         jsonl_path + " --html " + html);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::size_t intervals = 0;
    for (const std::string& line : lines_of(read_file(jsonl_path))) {
        intervals += nlohmann::json::parse(line).at("kind") == "interval";
    }
    ASSERT_GE(intervals, 8u);

    const Rendered page = render(browser_, html);
    EXPECT_TRUE(page.console.empty()) << page.console.front();
    std::vector<std::string> plots = series_plots;
    for (const char* key : {"plot-key-1-packets", "plot-key-1-bytes", "plot-key-1-distinct"}) plots.emplace_back(key);
    expect_plots(page.dom, plots);
    // The packets line has one point per interval report.
    const std::string line = svg_of(page.dom, "plot-packets");
    const std::size_t points_at = line.find("<polyline");
    ASSERT_NE(points_at, std::string::npos);
    const std::string points = line.substr(points_at, line.find('>', points_at) - points_at);
    // A point is "x,y": count the commas between two numbers.
    const auto numeric = [](char c) { return (c >= '0' && c <= '9') || c == '.'; };
    std::size_t pairs = 0;
    for (std::size_t i = 1; i + 1 < points.size(); ++i) {
        if (points[i] == ',' && numeric(points[i - 1]) && numeric(points[i + 1])) ++pairs;
    }
    EXPECT_EQ(pairs, intervals);
    EXPECT_NE(page.dom.find(std::to_string(intervals) + " interval reports"), std::string::npos);
    const std::string top = top_source(read_truth(pcap + ".truth.tsv"));
    EXPECT_NE(svg_of(page.dom, "plot-top-packets").find(top), std::string::npos) << top;
    EXPECT_NE(svg_of(page.dom, "plot-key-1-packets").find(top), std::string::npos) << top;
    for (const std::string& path : {pcap, pcap + ".truth.tsv", html, jsonl_path}) std::remove(path.c_str());
}

// merge --html: the same page over the merged windows, one point per merged
// interval, with the probes that were summed and their seed among the parameters.
TEST_F(HtmlReportBrowser, MergedSnapshotsHaveOnePointPerMergedInterval) {
    const std::string pcap = tmp_path("html-merge-" + std::to_string(::getpid()) + ".pcap");
    // 4 s of packet time: probes snapshot every 0.5 s, merged per second.
    const RunResult gen = run_flowsketch("gen --out " + pcap + " --packets 80000 --flows 4000 --rate 20000 --seed 8");
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    const std::string dir = tmp_path("html-merge-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    for (const char* probe : {"edge-a", "edge-b"}) {
        const RunResult run = run_flowsketch("-r " + pcap + " --interval 0.5 --probe " + probe + " --seed 0x1234 "
                                             "--snapshot-dir " + dir + " --format json -o /dev/null");
        ASSERT_EQ(run.exit_code, 0) << run.err;
    }
    const std::string html = tmp_path("merge-" + std::to_string(::getpid()) + ".html");
    const RunResult merge = run_flowsketch("merge --interval 1 --format json --html " + html + " " + dir + "/*.fsnap");
    ASSERT_EQ(merge.exit_code, 0) << merge.err;
    const std::size_t reports = lines_of(merge.out).size();
    ASSERT_GE(reports, 4u);
    const Rendered page = render(browser_, html);
    EXPECT_TRUE(page.console.empty()) << page.console.front();
    expect_plots(page.dom, series_plots);
    const std::string line = svg_of(page.dom, "plot-packets");
    const std::size_t points_at = line.find("<polyline");
    ASSERT_NE(points_at, std::string::npos);
    const std::string points = line.substr(points_at, line.find('>', points_at) - points_at);
    EXPECT_EQ(static_cast<std::size_t>(std::count(points.begin(), points.end(), ',')), reports);
    EXPECT_NE(page.dom.find(std::to_string(reports) + " interval reports"), std::string::npos);
    EXPECT_NE(page.dom.find("<th class=\"key\">probes</th><td>edge-a,edge-b</td>"), std::string::npos);
    EXPECT_NE(page.dom.find("<th class=\"key\">hash seed</th><td>0x0000000000001234</td>"), std::string::npos);
    std::filesystem::remove_all(dir);
    for (const std::string& path : {pcap, pcap + ".truth.tsv", html}) std::remove(path.c_str());
}

TEST_F(HtmlReportBrowser, MarkupInAFileNameIsShownAsText) {
    const std::string dir = tmp_path("html-evil-" + std::to_string(::getpid()));
    ::mkdir(dir.c_str(), 0755);
    const std::string evil = dir + "/x<img src=x onerror=alert(1)><b>.pcap";
    std::filesystem::copy_file(pcap_path("suricata-verify-output-eve-ftp-data.pcap"), evil,
                               std::filesystem::copy_options::overwrite_existing);
    const std::string html = dir + "/page.html";
    const RunResult run = run_flowsketch("-r '" + evil + "' --interval 0 --html " + html);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const Rendered page = render(browser_, html);
    EXPECT_TRUE(page.console.empty()) << page.console.front();
    EXPECT_EQ(page.dom.find("<img"), std::string::npos);
    EXPECT_EQ(page.dom.find("<b>"), std::string::npos);
    EXPECT_NE(page.dom.find("x&lt;img src=x onerror=alert(1)&gt;&lt;b&gt;.pcap"), std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST(HtmlReportOption, UnwritablePathIsOneLineAndExitOne) {
    const RunResult run = run_flowsketch("-r " + pcap_path("suricata-verify-output-eve-ftp-data.pcap") +
                                         " --html /nonexistent-dir/page.html");
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
    EXPECT_NE(run.err.find("--html /nonexistent-dir/page.html"), std::string::npos) << run.err;
    EXPECT_EQ(run.out, "") << "no report before the failure";
}

}  // namespace
}  // namespace flowsketch::testing
