// `--threads 2`: the sketches are updated on a thread of their own while the
// calling thread reads. Batches pass through a short ring in
// order, so the measurement sees exactly the packet sequence a single thread
// would: the reports are identical.
//
// Decoding the frames and hashing the keys (FlowMeasurement::prepare) go to
// whichever side has time: the reader decodes and hashes a batch when the
// worker is behind (batches waiting in the ring), and leaves them to the
// worker otherwise. On steady traffic the reader is the slower side; under a
// flood it is the other way round. Either way the records
// and hashes are the same. The worker can decode only frames whose bytes stay
// put until it has (files walked in place: PcapFileSource::frame_storage).
//
// Each side spins for a while before it sleeps when the ring is empty (worker)
// or full (reader). The two sides run at nearly the same rate, so one of them
// waits every few batches; sleeping on a condition variable there costs a
// host wake-up of the idle virtual CPU per wait, longer than the wait itself.
// A side whose spins keep ending in sleep (the other thread is not running:
// both cores are busy with other work) spins less, so it does not take the
// core the other side needs.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "capture/decode/decode.hpp"
#include "capture/file/pcap_file_source.hpp"
#include "core/measure/flow_measurement.hpp"

namespace flowsketch::app {

/// Decodes a frame and, if it carries a flow, appends its record to `out`;
/// what the tunnel layer met is added to `tunnels`.
/// Returns why it was skipped, or SkipReason::none.
inline capture::SkipReason decode_into(std::vector<core::PacketRecord>& out, int link_type,
                                       const capture::Frame& frame,
                                       const capture::DecodeLimits& limits,
                                       capture::TunnelCounts& tunnels) noexcept {
    // Decoded in place (see core::PacketRecord): the record is appended first
    // and taken back if the frame is skipped.
    core::PacketRecord& record = out.emplace_back();
    const capture::SkipReason reason = capture::decode_frame(
        link_type, frame.data, frame.captured_length, record, limits, tunnels);
    if (reason != capture::SkipReason::none) {
        out.pop_back();
        return reason;
    }
    record.timestamp_ns = frame.timestamp_ns;
    record.wire_length = frame.wire_length;
    return reason;
}
/// The same, also appending the frame's tunnel tag to `tags` when it carries
/// a flow (tags[i] is out[i]'s), for a `tunnel` or `+vni` key spec.
inline capture::SkipReason decode_into(std::vector<core::PacketRecord>& out,
                                       std::vector<core::TunnelTag>& tags, int link_type,
                                       const capture::Frame& frame, const capture::DecodeLimits& limits,
                                       capture::TunnelCounts& tunnels) noexcept {
    core::PacketRecord& record = out.emplace_back();
    core::TunnelTag& tag = tags.emplace_back();
    const capture::SkipReason reason = capture::decode_frame(
        link_type, frame.data, frame.captured_length, record, limits, tunnels, tag);
    if (reason != capture::SkipReason::none) {
        out.pop_back();
        tags.pop_back();
        return reason;
    }
    record.timestamp_ns = frame.timestamp_ns;
    record.wire_length = frame.wire_length;
    return reason;
}
inline capture::SkipReason decode_into(std::vector<core::PacketRecord>& out, int link_type,
                                       const capture::Frame& frame,
                                       const capture::DecodeLimits& limits) noexcept {
    capture::TunnelCounts ignored;
    return decode_into(out, link_type, frame, limits, ignored);
}

using SkipCounts = std::array<std::uint64_t, capture::skip_reason_count>;

/// How long a waiting side spins before it sleeps: adapted by each wait.
struct SpinBudget {
    static constexpr std::uint32_t max_ns = 500'000;
    static constexpr std::uint32_t min_ns = 2'000;
    std::uint32_t nanoseconds = max_ns;
};

class MeasurementWorker {
public:
    /// Starts the thread. `measurement` must outlive the worker and, between
    /// submit() and drain(), must not be touched by anyone else. Frames
    /// handed over undecoded are decoded with `limits`.
    explicit MeasurementWorker(core::FlowMeasurement& measurement,
                               const capture::DecodeLimits& limits = {});
    ~MeasurementWorker();
    MeasurementWorker(const MeasurementWorker&) = delete;
    MeasurementWorker& operator=(const MeasurementWorker&) = delete;

    struct Batch {
        std::vector<core::PacketRecord> packets;
        std::vector<core::TunnelTag> tags;  // one per packet when the measurement keys_tunnel(), else empty
        core::FlowMeasurement::PreparedBatch prepared;  // of packets, when `hashed`
        bool hashed = false;  // false: the worker hashes the keys itself
        /// Frames for the worker to decode (link type `link_type`) into
        /// `packets`, which is then empty; their bytes stay alive in `storage`
        /// until it has (the submitting thread lets go of it, not the worker).
        /// Such a batch is never `hashed`.
        std::vector<capture::Frame> frames;
        std::vector<std::shared_ptr<const void>> storage;
        int link_type = 0;
    };
    /// An emptied batch to fill next (its buffers keep their capacity).
    /// Only the submitting thread calls take_spare(), submit() and drain().
    Batch take_spare();
    /// Queues a batch (waits while the ring is full).
    void submit(Batch batch);
    /// Returns once every submitted batch is in the measurement.
    void drain();
    /// Adds the skip counts of the frames the worker decoded since the last
    /// call to `counts`, and starts over. Only between drain() and submit().
    void take_skipped(SkipCounts& counts) noexcept;
    /// The same for the tunnel counts.
    void take_tunnels(capture::TunnelCounts& counts) noexcept;
    /// True when batches wait in the ring: the worker is the slower side, so
    /// the submitter should decode and hash the next batch itself.
    bool behind() const noexcept {
        return submitted_.load(std::memory_order_relaxed) -
                   added_.load(std::memory_order_relaxed) >= behind_batches;
    }

private:
    void run();
    void release_storage() noexcept;

    static constexpr std::uint32_t ring_size = 8;
    // Batches queued (the one being added included) from which the worker counts as behind.
    static constexpr std::uint32_t behind_batches = 2;
    core::FlowMeasurement& measurement_;
    capture::DecodeLimits limits_;
    SkipCounts skipped_{};  // the worker's, read by the submitter after drain()
    capture::TunnelCounts tunnels_;  // likewise
    std::array<Batch, ring_size> ring_;
    // Batches submitted and batches added, each written by one side only;
    // their difference is the ring's fill. 32 bits: what atomic wait() sleeps on.
    alignas(64) std::atomic<std::uint32_t> submitted_{0};
    alignas(64) std::atomic<std::uint32_t> added_{0};
    std::atomic<bool> stopping_{false};  // set by the destructor once drained
    Batch spare_;  // the submitting thread's next buffers
    std::uint32_t released_ = 0;  // batches whose storage the submitter let go of
    // Each side's spin before it sleeps (see wait_for), its own to adapt.
    SpinBudget submitter_spin_;
    alignas(64) SpinBudget worker_spin_;
    std::thread thread_;
};

}  // namespace flowsketch::app
