#include "core/lifecycle/dirty_tracked_words.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

namespace flowsketch::core {
namespace {

constexpr std::size_t page = DirtyTrackedWords::page_words;

bool all_zero(const DirtyTrackedWords& words) {
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (words[i] != 0) return false;
    }
    return true;
}

TEST(DirtyTrackedWords, StartsZero) {
    const DirtyTrackedWords words(10 * page + 7);
    EXPECT_EQ(words.size(), 10 * page + 7);
    EXPECT_TRUE(all_zero(words));
}

// Words written anywhere, including the last, partial page and the first and
// last word of a page, all read back and all clear.
TEST(DirtyTrackedWords, ClearZeroesEveryWrittenWord) {
    DirtyTrackedWords words(70 * page + 7);  // more pages than one word of the page map
    const std::size_t written[] = {0, page - 1, page, 3 * page + 17, 64 * page, 69 * page + 511,
                                   70 * page, 70 * page + 6};
    for (int round = 0; round < 2; ++round) {
        for (const std::size_t i : written) words.for_write(i) |= std::uint64_t{1} << (i % 64);
        for (const std::size_t i : written) EXPECT_EQ(words[i], std::uint64_t{1} << (i % 64)) << i;
        EXPECT_FALSE(all_zero(words));
        words.clear();
        EXPECT_TRUE(all_zero(words)) << "round " << round;
    }
}

// clear() forgets the pages it cleared: a word written after it is cleared by the next.
TEST(DirtyTrackedWords, PagesWrittenAfterAClearAreClearedByTheNext) {
    DirtyTrackedWords words(4 * page);
    words.for_write(5) = 1;
    words.clear();
    words.for_write(2 * page + 9) = ~std::uint64_t{0};
    words.clear();
    EXPECT_TRUE(all_zero(words));
}

TEST(DirtyTrackedWords, MemoryCountsWordsAndPageMap) {
    EXPECT_EQ(DirtyTrackedWords(page).memory_bytes(), (page + 1) * sizeof(std::uint64_t));
    EXPECT_EQ(DirtyTrackedWords(65 * page).memory_bytes(), (65 * page + 2) * sizeof(std::uint64_t));
    EXPECT_EQ(DirtyTrackedWords::planned_bytes(65 * page), DirtyTrackedWords(65 * page).memory_bytes());
}

}  // namespace
}  // namespace flowsketch::core
