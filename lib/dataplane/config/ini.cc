#include "dataplane/config/ini.h"

#include <algorithm>
#include <array>

namespace tob::dataplane {

core::Result<std::vector<std::string>> ini_sections(rte_cfgfile* f, const std::string& path) {
  const int count = std::max(rte_cfgfile_num_sections(f, nullptr, 0), 0);
  std::vector<std::array<char, CFG_NAME_LEN>> names(static_cast<size_t>(count));
  std::vector<char*> ptrs;
  for (auto& n : names) ptrs.push_back(n.data());
  rte_cfgfile_sections(f, ptrs.data(), count);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (!seen.insert(n.data()).second)
      return core::Error{path + ": [" + std::string(n.data()) + "]: appears twice (merge the two sections)"};
    out.emplace_back(n.data());
  }
  return out;
}

core::Result<bool> check_ini_keys(rte_cfgfile* f, const std::string& path, const std::string& section,
                                  const std::set<std::string_view>& known,
                                  const std::vector<std::string_view>& known_prefixes) {
  const int entries = std::max(rte_cfgfile_section_num_entries(f, section.c_str()), 0);
  std::vector<rte_cfgfile_entry> e(static_cast<size_t>(entries));
  rte_cfgfile_section_entries(f, section.c_str(), e.data(), entries);
  std::set<std::string> seen;
  for (const auto& entry : e) {
    const std::string_view name = entry.name;
    const bool prefixed = std::any_of(known_prefixes.begin(), known_prefixes.end(),
                                      [&](std::string_view p) { return name.substr(0, p.size()) == p; });
    if (known.count(entry.name) == 0 && !prefixed) return core::Error{path + ": [" + section + "] " + entry.name + ": unknown key"};
    if (!seen.insert(entry.name).second)
      return core::Error{path + ": [" + section + "] " + entry.name + ": given twice"};
  }
  return true;
}

}  // namespace tob::dataplane
