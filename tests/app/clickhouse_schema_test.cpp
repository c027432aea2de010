// The heavy-hitter statement that docs/clickhouse.md shows is the one the
// code makes (and the end-to-end tests run against a real server).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "src/clickhouse_schema.hpp"
#include "tests/support/test_support.hpp"

namespace flowsketch {
namespace {

std::string sql_block_of(const std::string& path) {
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string open = "```sql\n";
    const std::size_t begin = text.find(open);
    if (begin == std::string::npos) return "";
    const std::size_t end = text.find("\n```", begin + open.size());
    return text.substr(begin + open.size(), end - begin - open.size());
}

TEST(ClickHouseSchema, TheDocsShowTheHeavyHitterStatementTheCodeMakes) {
    const std::string documented = sql_block_of(testing::pcap_path("../docs/clickhouse.md"));
    ASSERT_FALSE(documented.empty());
    // 2026-11-26 10:00 to 11:00 UTC, the top 5 by packets of the 5-tuple.
    EXPECT_EQ(documented, app::heavy_hitters_sql("flowsketch", "", "5tuple", 0, 1764151200000000000LL,
                                                 1764154800000000000LL, 5));
}

}  // namespace
}  // namespace flowsketch
