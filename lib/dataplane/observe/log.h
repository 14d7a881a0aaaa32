// The daemon's rte_log type `tob` (docs/architecture.md "Dataplane"). Set its level with the EAL option
// --log-level=tob:debug. Never used on lcore loops (rte_log writes to a stream).
#pragma once

#include <rte_log.h>

namespace tob::dataplane {

// Registered once by register_log_type(); RTE_LOGTYPE_USER1 until then.
extern int tob_logtype;
void register_log_type();

}  // namespace tob::dataplane

#define TOB_LOG(level, ...) rte_log((level), ::tob::dataplane::tob_logtype, "tob: " __VA_ARGS__)
