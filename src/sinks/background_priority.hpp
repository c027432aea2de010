// The sinks' threads (ClickHouse export, snapshot files, spare snapshots) run
// at the lowest priority: when the cores are busy the kernel
// gives them to the capture first, and the sinks' bounded queues absorb the
// delay. A window late to ClickHouse costs nothing; a packet the capture had
// no CPU for is lost.
#pragma once

namespace flowsketch::app {

/// The calling thread's nice value set to 19, the lowest priority a thread
/// can take without privileges that still gets its share of busy cores
/// (SCHED_IDLE would starve it). A failure leaves the priority as it was.
void lower_this_thread_priority() noexcept;

}  // namespace flowsketch::app
