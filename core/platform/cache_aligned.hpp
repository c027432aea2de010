// An allocator that puts arrays on cache-line boundaries, so a sketch cell of
// 32 or 64 bytes never straddles two lines (one memory access per row).
//
// Arrays of 1 MiB and more (the Count-Min counters, the flow filter's cells)
// are also placed on 2 MiB boundaries, rounded up to whole 2 MiB pages, and
// offered to the kernel as transparent huge pages: their accesses are random,
// and with 4 KiB pages nearly every one also missed the TLB (a 7 MiB filter
// spans 1,800 pages; the second-level TLB holds about 1,500).
//
// Arrays of 64 KiB and more are faulted in by the kernel in one call before
// they are first written: page by page, each fault traps, which costs some
// 15 µs a page on virtual machines with shadow page tables (zeroing a 723 KB
// window's counters took 2.6 ms that way, 1.7 ms populated first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace flowsketch::core {

inline constexpr std::size_t cache_line_bytes = 64;
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;
inline constexpr std::size_t huge_page_threshold_bytes = std::size_t{1} << 20;
inline constexpr std::size_t populate_threshold_bytes = std::size_t{64} << 10;

/// Makes the whole pages of [p, p + bytes) present and writable without
/// changing their contents. Kernels before Linux 5.14 refuse it; then the
/// first writes fault the pages in, as without it.
inline void populate_for_writing(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    constexpr std::uintptr_t page = 4096;
    const auto first = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
    const auto last = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)bytes;
#endif
}

template <class T>
struct CacheAlignedAllocator {
    using value_type = T;
    CacheAlignedAllocator() noexcept = default;
    template <class U>
    CacheAlignedAllocator(const CacheAlignedAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < huge_page_threshold_bytes) {
            void* p = ::operator new(bytes, std::align_val_t{cache_line_bytes});
            if (bytes >= populate_threshold_bytes) populate_for_writing(p, bytes);
            return static_cast<T*>(p);
        }
        const std::size_t rounded = (bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
        void* p = ::operator new(rounded, std::align_val_t{huge_page_bytes});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: without huge pages, nothing changes
#endif
        populate_for_writing(p, bytes);
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        const bool huge = n * sizeof(T) >= huge_page_threshold_bytes;
        ::operator delete(p, std::align_val_t{huge ? huge_page_bytes : cache_line_bytes});
    }
    template <class U>
    bool operator==(const CacheAlignedAllocator<U>&) const noexcept { return true; }
};

template <class T>
using CacheAlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace flowsketch::core
