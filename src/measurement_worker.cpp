#include "src/measurement_worker.hpp"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <utility>

namespace flowsketch::app {
namespace {

// Waits until `ready()`, spinning up to `spin` (at most 0.5 ms: two
// batches' work in a replay) before sleeping on `counter` changing; the other
// side notifies after each change. The budget adapts: a wait that spinning
// ended lets the next spin longer, one that had to sleep halves it. When the
// other thread is not running (both cores busy with other work), spinning
// only takes the core it needs, so the budget falls to a token spin.
template <class Ready>
void wait_for(const std::atomic<std::uint32_t>& counter, Ready ready, SpinBudget& spin) {
    using clock = std::chrono::steady_clock;
    const auto spin_until = clock::now() + std::chrono::nanoseconds(spin.nanoseconds);
    for (std::uint32_t spins = 0;; ++spins) {
        if (ready()) {
            spin.nanoseconds = std::min(SpinBudget::max_ns, spin.nanoseconds + spin.nanoseconds / 4 + 1000);
            return;
        }
        if ((spins & 63) == 63 && clock::now() > spin_until) break;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    spin.nanoseconds = std::max(SpinBudget::min_ns, spin.nanoseconds / 2);
    for (;;) {
        const std::uint32_t seen = counter.load(std::memory_order_acquire);
        if (ready()) return;
        counter.wait(seen, std::memory_order_acquire);
    }
}

// A thread that never takes SIGINT, SIGTERM or SIGHUP: the thread that
// reads must, so that they end its wait for a pipe (ReadStatus::interrupted)
// or reach its event loop. A new thread inherits the creator's mask.
template <class Body>
std::thread thread_without_stop_signals(Body body) {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigset_t previous;
    pthread_sigmask(SIG_BLOCK, &stop, &previous);
    struct Restore {
        const sigset_t& mask;
        ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
    } restore{previous};
    return std::thread(std::move(body));
}

}  // namespace

MeasurementWorker::MeasurementWorker(core::FlowMeasurement& measurement,
                                     const capture::DecodeLimits& limits)
    : measurement_(measurement),
      limits_(limits),
      thread_(thread_without_stop_signals([this] { run(); })) {}

MeasurementWorker::~MeasurementWorker() {
    drain();
    // A count with no batch behind it: the change wakes the worker, the flag says stop.
    stopping_.store(true, std::memory_order_relaxed);
    submitted_.fetch_add(1, std::memory_order_release);
    submitted_.notify_one();
    thread_.join();
}

MeasurementWorker::Batch MeasurementWorker::take_spare() { return std::exchange(spare_, Batch{}); }

void MeasurementWorker::submit(Batch batch) {
    const std::uint32_t n = submitted_.load(std::memory_order_relaxed);
    wait_for(added_, [&] { return n - added_.load(std::memory_order_acquire) < ring_size; }, submitter_spin_);
    release_storage();
    // The slot's previous batch has been added and cleared: its buffers are the next spare.
    Batch& slot = ring_[n % ring_size];
    spare_ = std::exchange(slot, std::move(batch));
    submitted_.store(n + 1, std::memory_order_release);
    submitted_.notify_one();
}

void MeasurementWorker::drain() {
    const std::uint32_t n = submitted_.load(std::memory_order_relaxed);
    wait_for(added_, [&] { return added_.load(std::memory_order_acquire) == n; }, submitter_spin_);
    release_storage();
}

// The submitter lets go of the frame storage of every batch the worker has
// added: on its own thread, after the acquire of `added_` that orders the
// worker's reads of those bytes before, so the reader that owns the blocks may
// read into them again (PcapFileSource::frame_storage). The worker does not
// touch a slot again until the submitter fills it anew.
void MeasurementWorker::release_storage() noexcept {
    const std::uint32_t added = added_.load(std::memory_order_acquire);
    for (; released_ != added; ++released_) ring_[released_ % ring_size].storage.clear();
}

void MeasurementWorker::take_skipped(SkipCounts& counts) noexcept {
    for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += skipped_[i];
    skipped_.fill(0);
}

void MeasurementWorker::take_tunnels(capture::TunnelCounts& counts) noexcept {
    counts.add(tunnels_);
    tunnels_ = {};
}

void MeasurementWorker::run() {
    for (std::uint32_t next = 0;; ++next) {
        wait_for(submitted_, [&] { return submitted_.load(std::memory_order_acquire) != next; }, worker_spin_);
        if (stopping_.load(std::memory_order_relaxed)) return;  // ordered by the acquire above
        Batch& batch = ring_[next % ring_size];
        if (!batch.frames.empty()) {
            const bool tagged = measurement_.keys_tunnel();
            for (const capture::Frame& frame : batch.frames) {
                const capture::SkipReason reason =
                    tagged ? decode_into(batch.packets, batch.tags, batch.link_type, frame, limits_, tunnels_)
                           : decode_into(batch.packets, batch.link_type, frame, limits_, tunnels_);
                if (reason != capture::SkipReason::none) ++skipped_[static_cast<std::size_t>(reason)];
            }
            batch.frames.clear();  // the submitter lets go of batch.storage (release_storage)
        }
        if (batch.hashed) {
            measurement_.add_prepared(batch.packets, batch.prepared, batch.tags);
        } else {
            measurement_.add_batch(batch.packets, batch.tags);  // hashes chunk by chunk, as one thread does
        }
        batch.packets.clear();
        batch.tags.clear();
        added_.store(next + 1, std::memory_order_release);
        added_.notify_one();
    }
}

}  // namespace flowsketch::app
