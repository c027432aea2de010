#include "src/sinks/snapshot_pool.hpp"

#include <algorithm>
#include <utility>

#include "src/sinks/background_priority.hpp"

namespace flowsketch::app {

SnapshotPool::SnapshotPool(std::size_t capacity, std::size_t spares)
    : capacity_(capacity), spares_(std::min(spares, capacity)) {
    free_.reserve(capacity_);
}

SnapshotPool::~SnapshotPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

reports::Snapshot SnapshotPool::take() {
    reports::Snapshot snapshot;
    bool wanted = false;
    {
        std::lock_guard lock(mutex_);
        if (free_.empty()) return snapshot;
        snapshot = std::move(free_.back());
        free_.pop_back();
        wanted = wants_spare();
    }
    // Only when one is wanted: waking the spare maker costs the measuring
    // thread a system call and an interrupt to the other CPU, about 40 µs here.
    if (wanted) changed_.notify_all();
    return snapshot;
}

void SnapshotPool::give_back(reports::Snapshot&& snapshot) {
    {
        std::lock_guard lock(mutex_);
        if (free_.size() < capacity_) {
            free_.push_back(std::move(snapshot));
            return;
        }
    }
    reports::Snapshot freed = std::move(snapshot);  // released here, outside the lock
}

void SnapshotPool::stock(std::vector<core::CountMinParams> shape) {
    {
        std::lock_guard lock(mutex_);
        if (shape == shape_) return;
        shape_ = std::move(shape);
        if (spares_ > 0 && !thread_.joinable()) {
            thread_ = std::thread([this] {
                lower_this_thread_priority();
                run();
            });
        }
    }
    changed_.notify_all();
}

std::size_t SnapshotPool::ready() const {
    std::lock_guard lock(mutex_);
    return free_.size();
}

reports::Snapshot SnapshotPool::make_spare(const std::vector<core::CountMinParams>& shape) const {
    reports::Snapshot snapshot;
    snapshot.value.keys.reserve(shape.size());
    for (const core::CountMinParams& params : shape) {
        // The constructor zeroes the counters: every page is faulted in here.
        // Only the sketch is used again (window_value writes the rest), so any spec will do.
        snapshot.value.keys.push_back(
            core::KeyWindow{core::KeySpec::five_tuple(), core::CountMinSketch(params), {}, {}, {}, {}});
    }
    return snapshot;
}

void SnapshotPool::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [this] { return stopping_ || wants_spare(); });
        if (stopping_) return;
        const std::vector<core::CountMinParams> shape = shape_;
        lock.unlock();
        reports::Snapshot spare = make_spare(shape);
        lock.lock();
        if (shape == shape_ && free_.size() < capacity_) free_.push_back(std::move(spare));
    }
}

}  // namespace flowsketch::app
