// The statistics `flowsketch lab` judges its rows with, against textbook values.
#include <gtest/gtest.h>

#include <cmath>

#include "src/lab/lab.hpp"

namespace flowsketch::testing {
namespace {

using app::lab::chi_squared_tail;

// Upper quantiles of chi-squared (any statistics table).
TEST(LabStatistics, ChiSquaredTailMatchesTables) {
    EXPECT_NEAR(chi_squared_tail(3.841, 1), 0.05, 1e-4);
    EXPECT_NEAR(chi_squared_tail(6.635, 1), 0.01, 1e-4);
    EXPECT_NEAR(chi_squared_tail(18.307, 10), 0.05, 1e-4);
    EXPECT_NEAR(chi_squared_tail(29.588, 10), 0.001, 1e-5);
    EXPECT_NEAR(chi_squared_tail(26.0, 26), 0.4631047, 1e-6);  // Poisson sum; near where series and fraction meet
    EXPECT_NEAR(chi_squared_tail(24.0, 26), 0.5759652, 1e-6);  // the series side
    EXPECT_NEAR(chi_squared_tail(1.0, 2), std::exp(-0.5), 1e-12);  // two degrees: exp(−x/2) exactly
    EXPECT_EQ(chi_squared_tail(0.0, 5), 1.0);
    EXPECT_LT(chi_squared_tail(200.0, 10), 1e-30);
}

}  // namespace
}  // namespace flowsketch::testing
