// `flowsketch lab --html` in a real browser: headless chromium loads the page
// with no console message (its Content-Security-Policy would report any
// request it makes), every figure is in the rendered DOM with its marks, and
// every table of the run is on the page. Skipped only when chromium is not
// installed.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/headless_browser.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch::testing {
namespace {

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
    return count;
}

TEST(LabHtmlBrowser, EveryFigureAndTableIsDrawn) {
    const std::string browser = find_chromium();
    if (browser.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
    const std::string html = tmp_path("lab-" + std::to_string(::getpid()) + ".html");
    std::remove(html.c_str());
    // Few trials: some rows may fall outside tolerance (exit 1); the page is written either way.
    const RunResult run = run_flowsketch("lab all --trials 3 --format json --html " + html);
    ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.err;
    std::size_t titles = 0;
    std::size_t table_rows = 0;
    for (const std::string& line : lines_of(run.out)) table_rows += line.empty() ? 0u : 1u;
    const Rendered page = render(browser, html);
    EXPECT_TRUE(page.console.empty()) << page.console.front();
    // Fig. 2 per scheme: bars and both curves.
    for (const char* id : {"fig2-partitioned", "fig2-enhanced-i2"}) {
        const std::string svg = svg_of(page.dom, id);
        ASSERT_FALSE(svg.empty()) << id;
        EXPECT_GE(count_of(svg, "<rect class=\"bar\""), 5u) << id;
        EXPECT_EQ(count_of(svg, "<polyline"), 2u) << id;
    }
    // Table 3: its 15 rows as points, and the diagonal.
    const std::string table3 = svg_of(page.dom, "table3");
    ASSERT_FALSE(table3.empty());
    EXPECT_EQ(count_of(table3, "<circle"), 15u);
    EXPECT_EQ(count_of(table3, "<polyline"), 1u);
    // Count-Min: three schemes, measured points and a bound line each.
    const std::string cms = svg_of(page.dom, "cms-error");
    ASSERT_FALSE(cms.empty());
    EXPECT_EQ(count_of(cms, "<polyline"), 3u);
    // A measured share of 0 (likely at 3 trials) has no place on the log scale.
    EXPECT_GE(count_of(cms, "<circle"), 3u);
    // Every row printed is a row of the page's tables (plus one heading row per table).
    titles = count_of(page.dom, "<caption>");
    EXPECT_EQ(titles, 9u);  // bloom 3, two-choice 4, cms 1, counting 1
    EXPECT_EQ(count_of(page.dom, "<tr"), table_rows + titles);
    std::remove(html.c_str());
}

TEST(LabHtml, AnUnwritablePathIsOneLineAndExitOne) {
    const RunResult run = run_flowsketch("lab cms --trials 2 --html /nonexistent-dir/lab.html");
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_NE(run.err.find("--html: cannot write /nonexistent-dir/lab.html"), std::string::npos) << run.err;
    EXPECT_EQ(lines_of(run.err).size(), 1u) << run.err;
}

}  // namespace
}  // namespace flowsketch::testing
