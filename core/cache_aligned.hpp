// An allocator that puts arrays on cache-line boundaries, so a sketch cell of
// 32 or 64 bytes never straddles two lines (one memory access per row).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace flowsketch::core {

inline constexpr std::size_t cache_line_bytes = 64;

template <class T>
struct CacheAlignedAllocator {
    using value_type = T;
    CacheAlignedAllocator() noexcept = default;
    template <class U>
    CacheAlignedAllocator(const CacheAlignedAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{cache_line_bytes}));
    }
    void deallocate(T* p, std::size_t) noexcept {
        ::operator delete(p, std::align_val_t{cache_line_bytes});
    }
    template <class U>
    bool operator==(const CacheAlignedAllocator<U>&) const noexcept { return true; }
};

template <class T>
using CacheAlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace flowsketch::core
