// The x-y chart of the lab's figures: every finite point drawn in its style,
// what a log axis cannot place left out, labels escaped, an empty chart said.
#include "reports/html/xy_chart.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace flowsketch::reports::html {
namespace {

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
    return count;
}

TEST(XyChart, DrawsEachSeriesInItsStyle) {
    XyChart chart{"fig", "Q <by> trials", "Q", "trials", false,
                  {XySeries{"observed", "#111", XySeries::Style::bars, {1, 2, 3}, {4, 0, 2}},
                   XySeries{"curve", "#222", XySeries::Style::line, {1, 2, 3}, {3, 3, NAN}},
                   XySeries{"paper's", "#333", XySeries::Style::points, {1, 3}, {1, 2}}}};
    const std::string svg = render_xy_chart(chart);
    EXPECT_EQ(svg.rfind("<svg id=\"fig\"", 0), 0u);
    EXPECT_EQ(count_of(svg, "<rect class=\"bar\""), 3u);
    EXPECT_EQ(count_of(svg, "<polyline"), 1u);
    EXPECT_EQ(count_of(svg, "<circle"), 2u);
    EXPECT_NE(svg.find("Q &lt;by&gt; trials"), std::string::npos);
    EXPECT_NE(svg.find("paper&#39;s"), std::string::npos);
    EXPECT_EQ(svg.find("<by>"), std::string::npos);
}

TEST(XyChart, ALogAxisLeavesOutWhatItCannotPlace) {
    XyChart chart{"cms", "error", "cells", "share", true,
                  {XySeries{"measured", "#111", XySeries::Style::points, {1, 2, 3}, {0, 0.001, 0.02}}}};
    const std::string svg = render_xy_chart(chart);
    EXPECT_EQ(count_of(svg, "<circle"), 2u);
    EXPECT_NE(svg.find(">0.001<"), std::string::npos);  // decades from below the smallest value
    EXPECT_NE(svg.find(">0.1<"), std::string::npos);    // to above the largest
}

TEST(XyChart, NoPointIsSaid) {
    const std::string svg = render_xy_chart(XyChart{"none", "empty", "x", "y", false, {}});
    EXPECT_NE(svg.find("no data"), std::string::npos);
    EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

}  // namespace
}  // namespace flowsketch::reports::html
