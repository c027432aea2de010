// The HTML report's pieces without a browser: escaping, the SVG charts, the
// bounded interval series, the page's plots and the atomic rewrite.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "reports/html/html_page.hpp"
#include "reports/html/html_report_writer.hpp"
#include "reports/html/interval_history.hpp"
#include "reports/html/svg_chart.hpp"

namespace flowsketch::reports::html {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

core::FlowKey ipv4_key(std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint16_t dport) {
    return core::FlowKey::ipv4(src, dst, sport, dport, 6);
}

Report interval_report(double start, std::uint64_t packets) {
    Report report;
    report.kind = ReportKind::interval;
    report.start = start;
    report.end = start + 10;
    report.frames = packets + 1;
    report.packets = packets;
    report.bytes = packets * 100;
    report.skipped = {{"non_ip", 1}};
    report.has_flows = true;
    report.flows.counts.new_flows = packets / 10;
    report.flows.counts.new_undercount_bound = 2;
    report.flows.counts.active = 50;
    report.flows.counts.active_lower = 40;
    report.flows.counts.active_upper = 60;
    report.flows.counts.expired = 5;
    report.flows.counts.expired_stderr = 1;
    report.sketch.epsilon = 0.001;
    report.sketch.delta = 0.001;
    report.top_packets.total = packets;
    report.top_packets.rows.push_back({ipv4_key(0x0a000001, 0xc0a80002, 80, 5000), packets / 2, packets / 2 - 3, false});
    return report;
}

TEST(HtmlEscape, EveryMarkupCharacterBecomesAnEntity) {
    EXPECT_EQ(escape("<script>alert('x')</script> & \"q\""),
              "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
    EXPECT_EQ(escape("10.0.0.1:80 → 10.0.0.2"), "10.0.0.1:80 → 10.0.0.2");
}

TEST(HtmlShortNumber, ThreeSignificantDigitsWithSuffix) {
    EXPECT_EQ(short_number(0), "0");
    EXPECT_EQ(short_number(999), "999");
    EXPECT_EQ(short_number(1234), "1.23k");
    EXPECT_EQ(short_number(1500), "1.5k");
    EXPECT_EQ(short_number(5e6), "5M");
    EXPECT_EQ(short_number(12.5), "12.5");
}

TEST(SvgLineChart, BandLineAndPointsPerSeries) {
    LineChart chart{"plot-x", "Title <b>", {0, 10, 20}, {{"a", "#123456", {1, 2, 3}, {1, 2, 3}, {2, 4, 6}}}};
    const std::string svg = render_line_chart(chart);
    EXPECT_EQ(svg.rfind("<svg id=\"plot-x\"", 0), 0u);
    EXPECT_EQ(count(svg, "<polygon class=\"band\""), 1u);
    EXPECT_EQ(count(svg, "<polyline"), 1u);
    EXPECT_EQ(count(svg, "<circle"), 3u);
    EXPECT_EQ(count(svg, "class=\"whisker\""), 3u);
    EXPECT_NE(svg.find("Title &lt;b&gt;"), std::string::npos);
    EXPECT_EQ(svg.find("nan"), std::string::npos);
    EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
    // The axis ends at a round value at or above the band's top (6 → 10): the
    // highest gridline's label.
    EXPECT_NE(svg.find(">10</text>"), std::string::npos);
}

TEST(SvgLineChart, NoPointsSaysSo) {
    const std::string svg = render_line_chart(LineChart{"plot-y", "t", {}, {{"a", "#000", {}, {}, {}}}});
    EXPECT_NE(svg.find("no data yet"), std::string::npos);
    EXPECT_EQ(count(svg, "<polyline"), 0u);
}

TEST(SvgBarChart, OneBarAndWhiskerPerRowLabelsEscaped) {
    BarChart chart{"plot-bars", "Top", "packets",
                   {{"<img src=x onerror=alert(1)>", 100, 90, false}, {"b", 50, 0, true}}};
    const std::string svg = render_bar_chart(chart);
    EXPECT_EQ(count(svg, "<g class=\"bar"), 2u);
    EXPECT_EQ(count(svg, "<g class=\"bar flagged\""), 1u);
    EXPECT_EQ(count(svg, "<rect"), 2u);
    EXPECT_EQ(count(svg, "class=\"whisker\""), 6u);
    EXPECT_EQ(svg.find("<img"), std::string::npos);
    EXPECT_NE(svg.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
    EXPECT_NE(render_bar_chart(BarChart{"e", "t", "bytes", {}}).find(">none<"), std::string::npos);
}

TEST(IntervalHistory, FullHistoryMergesPairsAndKeepsEveryInterval) {
    IntervalHistory history(4);
    std::uint64_t packets = 0;
    for (int i = 0; i < 11; ++i) {
        history.add(interval_report(1000.0 + 10 * i, 100 + static_cast<std::uint64_t>(i)));
        packets += 100 + static_cast<std::uint64_t>(i);
        ASSERT_LE(history.points().size(), 4u);
    }
    EXPECT_EQ(history.intervals_seen(), 11u);
    EXPECT_EQ(history.resolution(), 4u);  // 4 points of 1, then of 2, then of 4
    double sum = 0;
    std::uint64_t intervals = 0;
    for (const IntervalPoint& p : history.points()) {
        sum += p.packets;
        intervals += p.intervals;
    }
    EXPECT_EQ(sum, static_cast<double>(packets));
    EXPECT_EQ(intervals, 11u);
    EXPECT_EQ(history.points().front().start, 1000.0);
    EXPECT_EQ(history.points().back().end, 1110.0);
    // Merged: sums for counts and bounds, the last interval's active flows.
    const IntervalPoint& first = history.points().front();
    EXPECT_EQ(first.intervals, 4u);
    EXPECT_EQ(first.new_undercount_bound, 8.0);
    EXPECT_EQ(first.expired_variance, 4.0);
    EXPECT_EQ(first.active_upper, 60.0);
}

TEST(HtmlPage, EveryPlotAndNoUnescapedInput) {
    IntervalHistory history;
    Report first = interval_report(1000, 500);
    first.interfaces.push_back({"eth<script>x()</script>", 501, 501, 3, 0});
    first.warnings.push_back("odd </li><script>x()</script>");
    history.add(first);
    Report final_report = first;
    final_report.kind = ReportKind::final_report;
    const std::string page =
        render_page(RunDescription{{"file a<b>.pcap"}, "host 1.2.3.4"}, history, final_report, &first);
    for (const char* id : {"plot-packets", "plot-bytes", "plot-flows-new", "plot-flows-active", "plot-flows-expired",
                           "plot-skipped", "plot-top-packets", "plot-top-bytes"}) {
        EXPECT_NE(page.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
    }
    EXPECT_EQ(count(page, "<script>"), 1u) << "only the page's own marker script";
    EXPECT_NE(page.find("eth&lt;script&gt;x()&lt;/script&gt;"), std::string::npos);
    EXPECT_NE(page.find("file a&lt;b&gt;.pcap"), std::string::npos);
    EXPECT_NE(page.find("10.0.0.1:80 → 192.168.0.2:5000"), std::string::npos);
    EXPECT_EQ(page.find("://"), std::string::npos) << "nothing refers outside the page";
    EXPECT_EQ(page.find("http-equiv=\"refresh\""), std::string::npos) << "a final page does not reload";
}

TEST(HtmlReportWriter, RewritesTheWholeFileAtEachReportAndLeavesNoTemporary) {
    char dir_pattern[] = "/tmp/flowsketch-html-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_pattern), nullptr);
    const std::string dir = dir_pattern;
    const std::string path = dir + "/report.html";
    HtmlReportWriter writer(path, RunDescription{{"file x.pcap"}, ""}, 8);
    ino_t previous = 0;
    for (int i = 0; i < 3; ++i) {
        writer.write(interval_report(1000.0 + 10 * i, 1000 + static_cast<std::uint64_t>(i)));
        std::ifstream in(path);
        std::stringstream page;
        page << in.rdbuf();
        EXPECT_NE(page.str().find("http-equiv=\"refresh\""), std::string::npos);
        EXPECT_NE(page.str().find(std::to_string(i + 1) + " interval reports"), std::string::npos);
        EXPECT_EQ(page.str().substr(page.str().size() - 8), "</html>\n");
        struct stat status {};
        ASSERT_EQ(::stat(path.c_str(), &status), 0);
        EXPECT_NE(status.st_ino, previous) << "replaced by rename, not written in place";
        previous = status.st_ino;
    }
    DIR* listing = ::opendir(dir.c_str());
    ASSERT_NE(listing, nullptr);
    std::size_t files = 0;
    while (const dirent* entry = ::readdir(listing)) files += entry->d_name[0] != '.';
    ::closedir(listing);
    EXPECT_EQ(files, 1u);
    std::remove(path.c_str());
    ::rmdir(dir.c_str());
}

TEST(HtmlReportWriter, UnwritableDirectoryFailsAtOnceNamingThePath) {
    try {
        HtmlReportWriter writer("/nonexistent-dir/report.html", RunDescription{});
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/report.html"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace flowsketch::reports::html
