#include "dataplane/observe/log.h"

namespace tob::dataplane {

int tob_logtype = RTE_LOGTYPE_USER1;

void register_log_type() {
  const int t = rte_log_register_type_and_pick_level("tob", RTE_LOG_INFO);
  if (t >= 0) tob_logtype = t;
}

}  // namespace tob::dataplane
