// A fixed array of 64-bit words, zero at start, that clears in time
// proportional to the pages written since the last clear.
//
// For a bit set that is large, sparsely written and cleared often (the flow
// lifecycle's ended filter: 2.4 MiB at the default sizing, cleared at every
// report interval, written only by FIN and RST packets): std::fill walked every
// page at every clear, although a flood of SYNs never sets a bit. The words
// are still zeroed, and so made resident, at construction: the process's
// memory must not depend on how many flows end.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace flowsketch::core {

class DirtyTrackedWords {
public:
    /// Words per tracked page (4 KiB): a clear zeroes the written pages whole.
    static constexpr std::size_t page_words = 512;

    /// `words` zero words.
    explicit DirtyTrackedWords(std::size_t words) : words_(words, 0), dirty_(map_words(words), 0) {}

    std::size_t size() const noexcept { return words_.size(); }
    std::uint64_t operator[](std::size_t i) const noexcept { return words_[i]; }

    /// Word i, to be written: its page will be cleared by clear().
    std::uint64_t& for_write(std::size_t i) noexcept {
        const std::size_t page = i / page_words;
        dirty_[page / 64] |= std::uint64_t{1} << (page % 64);
        return words_[i];
    }

    /// Every word back to zero, touching only the pages written since the last clear.
    void clear() noexcept {
        for (std::size_t d = 0; d < dirty_.size(); ++d) {
            for (std::uint64_t bits = dirty_[d]; bits != 0; bits &= bits - 1) {
                const std::size_t page = d * 64 + static_cast<std::size_t>(std::countr_zero(bits));
                const std::size_t begin = page * page_words;
                const std::size_t end = std::min(words_.size(), begin + page_words);
                std::memset(words_.data() + begin, 0, (end - begin) * sizeof(std::uint64_t));
            }
            dirty_[d] = 0;
        }
    }

    /// The words and the page map: what this array can ever hold resident.
    std::size_t memory_bytes() const noexcept { return planned_bytes(words_.size()); }
    static std::size_t planned_bytes(std::size_t words) noexcept {
        return (words + map_words(words)) * sizeof(std::uint64_t);
    }

private:
    /// Words of the page map: a bit per page of `words` words.
    static std::size_t map_words(std::size_t words) noexcept {
        const std::size_t pages = (words + page_words - 1) / page_words;
        return (pages + 63) / 64;
    }

    std::vector<std::uint64_t> words_;
    std::vector<std::uint64_t> dirty_;  // a bit per page written since the last clear
};

}  // namespace flowsketch::core
