// Shared checks of INI files read with rte_cfgfile (cluster.ini, port profiles): list the
// sections, and refuse keys a section does not know or repeats (a typo must not pass silently).
#pragma once

#include <rte_cfgfile.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tob::dataplane {

// Section names in file order; a section given twice is an error (rte_cfgfile would keep both
// and every lookup would silently read the first).
core::Result<std::vector<std::string>> ini_sections(rte_cfgfile* f, const std::string& path);
// Keys starting with one of `known_prefixes` (e.g. "class." in [ic]) are accepted as well.
core::Result<bool> check_ini_keys(rte_cfgfile* f, const std::string& path, const std::string& section,
                                  const std::set<std::string_view>& known,
                                  const std::vector<std::string_view>& known_prefixes = {});

}  // namespace tob::dataplane
