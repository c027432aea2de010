// Snapshots for the measuring thread to fill at each window close, so that
// copying a window's sketch lanes never allocates or faults in memory there:
// the sinks give back the snapshots they have finished with, and a thread of
// the pool's own keeps a few spares ready (allocated and faulted in) for when
// the sinks hold them all, as a replay that outruns ClickHouse does. Copying
// 723 KB of lanes into fresh memory costs about 2 ms on a virtual machine
// (page faults), into memory already faulted in 0.04 ms.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "core/sketch/count_min.hpp"
#include "reports/snapshot.hpp"

namespace flowsketch::app {

class SnapshotPool {
public:
    /// Keeps at most `capacity` snapshots, and makes spares until `spares`
    /// (≤ capacity) are ready once it knows their shape (stock).
    SnapshotPool(std::size_t capacity, std::size_t spares);
    ~SnapshotPool();
    SnapshotPool(const SnapshotPool&) = delete;
    SnapshotPool& operator=(const SnapshotPool&) = delete;

    /// A snapshot given back or made ready earlier (holding an old window or
    /// none: overwrite it), or an empty one if none is ready.
    reports::Snapshot take();
    /// From any thread, once nothing refers to the snapshot any more.
    void give_back(reports::Snapshot&& snapshot);
    /// The spares' shape: one sketch of these parameters per key
    /// (FlowMeasurement::window_value_params). The first call starts the
    /// thread that makes them.
    void stock(std::vector<core::CountMinParams> shape);

    /// Snapshots ready to be taken.
    std::size_t ready() const;

private:
    void run();
    /// Fewer ready than the spares to keep (the caller holds mutex_): the
    /// spare maker's cue, and take()'s reason to wake it.
    bool wants_spare() const noexcept { return free_.size() < spares_; }
    reports::Snapshot make_spare(const std::vector<core::CountMinParams>& shape) const;

    const std::size_t capacity_;
    const std::size_t spares_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<reports::Snapshot> free_;
    std::vector<core::CountMinParams> shape_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace flowsketch::app
