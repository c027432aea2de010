// The sketches' allocator: arrays on cache-line boundaries (2 MiB ones from
// 1 MiB up); populating pages makes them present without changing them.
#include "core/platform/cache_aligned.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace flowsketch::core {
namespace {

// Pages of [p, p + bytes) that are present in memory.
std::size_t resident_pages(const void* p, std::size_t bytes) {
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto first = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
    const auto last = (reinterpret_cast<std::uintptr_t>(p) + bytes + page - 1) & ~(page - 1);
    std::vector<unsigned char> present((last - first) / page);
    if (::mincore(reinterpret_cast<void*>(first), last - first, present.data()) != 0) return 0;
    std::size_t count = 0;
    for (const unsigned char flags : present) count += flags & 1u;
    return count;
}

// MADV_POPULATE_WRITE came with Linux 5.14; before it the pages fault in on first write.
bool kernel_populates() {
    utsname name{};
    int major = 0;
    int minor = 0;
    if (::uname(&name) != 0 || std::sscanf(name.release, "%d.%d", &major, &minor) != 2) return false;
    return major > 5 || (major == 5 && minor >= 14);
}

TEST(CacheAligned, ArraysStartOnCacheLinesAndLargeOnesOnHugePages) {
    for (const std::size_t count : {std::size_t{1}, std::size_t{100}, std::size_t{200'000}}) {
        CacheAlignedVector<std::uint64_t> small(count);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % cache_line_bytes, 0u) << count;
    }
    CacheAlignedVector<std::uint64_t> large(huge_page_threshold_bytes / sizeof(std::uint64_t));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % huge_page_bytes, 0u);
}

TEST(CacheAligned, PopulatingMakesPagesPresentAndKeepsTheirContents) {
    if (!kernel_populates()) GTEST_SKIP() << "the kernel predates MADV_POPULATE_WRITE";
    const std::size_t bytes = std::size_t{64} * 4096;
    void* fresh = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(fresh, MAP_FAILED);
    auto* words = static_cast<std::uint64_t*>(fresh);
    words[0] = 42;  // one page written, the others never touched
    ASSERT_EQ(resident_pages(fresh, bytes), 1u);

    populate_for_writing(fresh, bytes);
    EXPECT_EQ(resident_pages(fresh, bytes), 64u);
    EXPECT_EQ(words[0], 42u);
    EXPECT_EQ(words[bytes / sizeof(std::uint64_t) - 1], 0u);
    ::munmap(fresh, bytes);
}

}  // namespace
}  // namespace flowsketch::core
