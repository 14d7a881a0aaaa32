// What a simulation run observed, in virtual time. The checkers read only these records.
#pragma once

#include <cstdint>
#include <vector>

#include "core/clock_sync.h"
#include "core/engine.h"
#include "sim/scenario.h"

namespace tob::sim {

struct DeliveryRecord {
  core::NodeId node;
  int incarnation;
  core::NodeId sender;
  int64_t cycle;         // sender's transmit cycle
  int64_t turn_seq;      // membership point that delivered it
  int ordinal;           // position among the deliveries of that membership point
  uint64_t msg_id;
  int64_t virtual_ns;    // when the node delivered it
  bool payload_ok;       // payload matches what the sender submitted under that id
  int64_t release_ns = 0;                   // the engine's release instant (global time)
  int64_t release_virtual_ns = kNotReleased;  // when the node's clock read it (virtual time)
  static constexpr int64_t kNotReleased = INT64_MIN;  // it crashed first, or the run ended
};

// The spread of the synchronised global clocks of the nodes judged (alive, running their engine
// for three cycles or more, not a Byzantine clock, not started apart), the largest over a
// cycle's mid-slot samples.
struct PrecisionSample {
  int64_t cycle;
  int64_t spread_ns;
  core::NodeId ahead;
  core::NodeId behind;
  int nodes;
  uint64_t judged = 0;   // the nodes compared in any of the cycle's samples (bit i: node i)
  // The largest spread of every synchronised clock (engine running, not Byzantine, not apart;
  // also in its first three cycles): what the next round starts from (sim/clock_checker.cc).
  int64_t hull_ns = 0;
};

// One round of a node's clock synchronisation as it closed (clock sync on), in virtual-time
// order: what the checker judges each round's fault hypothesis from (sim/clock_checker.h).
enum class ClockRoundKind : uint8_t {
  round,        // a round closed on an integrated clock: the readings of `senders`
  integration,  // the map set at once from the readings of `senders` (peers)
  cold_start,   // integration over on its own clock (nobody heard, or fewer than 2f + 1)
};
struct ClockRoundRecord {
  core::NodeId node;
  int incarnation;
  int64_t cycle;        // the round (a cycle of global time); an integration's: the first
                        // round it closes integrated
  uint64_t senders;     // bit s: node s's reading counted
  ClockRoundKind kind;
  bool out;             // the self-check fired on this round
};

struct ClockLife {        // per node: its clock and synchronisation (summed over incarnations)
  bool byzantine = false;
  double drift_ppm_start = 0;
  uint64_t rounds = 0;
  uint64_t rounds_out = 0;     // rounds the self-check stopped its frames
  uint64_t rounds_clipped = 0;
  uint64_t integrations = 0;
  uint64_t cold_starts = 0;
  int64_t offset_ns_max = 0;   // largest |midpoint| once integrated
  double rate_ppm_end = 0;
  double rate_max_ppm = 0;           // its bound (ClockSyncConfig::rate_max_ppm)
  uint64_t rate_windows = 0;         // windows its rate correction counted
  uint64_t rate_windows_unknown = 0; // whole windows left out: too few peers' sums known
  uint64_t rate_windows_inexact = 0; // own windows not exact (clipped offsets carried in or out)
};

struct EventRecord {
  core::NodeId node;     // who observed it
  int incarnation;
  core::MembershipEvent event;
  int64_t virtual_ns;
};

struct SentRecord {      // a message that left its sender in a slot frame
  core::NodeId sender;
  int incarnation;
  uint64_t msg_id;
  int64_t cycle;
};

struct SubmitRecord {    // a message its application submitted (accepted by the engine)
  core::NodeId sender;
  int incarnation;
  uint64_t msg_id;
  int64_t virtual_ns;
};

struct DecisionRecord {  // otfp: an instance a node decided, and in which ballot
  core::NodeId node;
  int incarnation;
  int64_t instance;
  uint32_t ballot;
  uint64_t mask;
  uint64_t digest;
};

struct FinalState {      // each node at the end of the run
  bool alive = false;
  int64_t low = -1;      // otfp: lowest instance not delivered (-1: down, or mars)
  size_t queued = 0;     // messages still in its queue
};

struct UndeliveredRecord {
  core::NodeId sender;
  int incarnation;
  core::Undelivered what;
};

struct NodeLife {        // per node: how it fared
  int incarnations = 1;
  bool crashed = false;
  bool shut_down = false;  // self-shutdown at least once
  std::vector<int64_t> crash_ns;
  std::vector<int64_t> engine_start_ns;  // per incarnation: when its engine started
  // Clock sync on: the cycles in which its clock stood apart, beyond the fault hypothesis: a
  // restart that cold-started, or integrated from fewer than 2f + 1 peers or from more than f
  // that were Byzantine or apart themselves (where it stands is anybody's guess), until every
  // mid-slot sample of a cycle found it within Pi of the judged nodes.
  struct ClockApart {
    int incarnation;
    int64_t from_cycle;
    int64_t until_cycle = INT64_MAX;  // judged again from this cycle
  };
  std::vector<ClockApart> clock_apart;
  uint64_t submitted = 0;
  uint64_t refused = 0;
};

struct InjectedFault {
  Fault fault;
  int64_t virtual_ns;
};

struct Records {
  std::vector<DeliveryRecord> deliveries;
  std::vector<EventRecord> events;
  std::vector<SentRecord> sent;
  std::vector<UndeliveredRecord> undelivered;
  std::vector<NodeLife> lives;
  std::vector<InjectedFault> faults;
  std::vector<SubmitRecord> submitted;
  std::vector<DecisionRecord> decisions;
  std::vector<FinalState> final_state;
  std::vector<PrecisionSample> precision;  // clock sync on: one per cycle
  std::vector<ClockLife> clocks;
  int64_t precision_bound_ns = 0;          // the derived bound (clock sync on)
  core::PrecisionBound clock_bound;        // its terms, and what the rounds beyond need:
  int64_t clock_step_max_ns = 0;           // the largest correction per round
  int clock_faults = 0;                    // f: faulty clocks the midpoint outvotes
  int64_t clock_cycle_ns = 0;              // one round
  std::vector<ClockRoundRecord> clock_rounds;
  uint64_t frames_withheld_clock = 0;      // frames the self-check kept from leaving
  int64_t end_ns = 0;
  int64_t final_turn_seq = 0;
  uint64_t frames_sent = 0;
  uint64_t copies_lost = 0;
  uint64_t copies_corrupted = 0;
  uint64_t copies_duplicated = 0;
  uint64_t frames_rejected_crc = 0;
  core::NodeCounters engine_totals;  // summed over every incarnation at its end (crash or run end)
  uint64_t torn_tails = 0;           // crashes that left part of the unsynced records
  uint64_t crashes = 0;
  uint64_t stalls = 0;
  uint64_t syncs = 0;
  uint64_t frames_held_for_log = 0;  // frames that waited for their records to be durable
  uint64_t rx_backlog_dropped = 0;   // frames a frozen node's RX ring could not hold
  int64_t faults_end_ns = 0;         // the drain starts here
};

}  // namespace tob::sim
