// Flag parsing shared by tob-sim's two modes (main.cc, ic_main.cc): a bad value ends the process
// with exit status 2 and a hint to the mode's --help.
#pragma once

#include <cstdint>
#include <string>

namespace tob::simcli {

// Which help the error message points to; ic_main sets "tob-sim --ic --help".
void set_help_hint(const char* hint);

[[noreturn]] void usage_error(const std::string& msg);
int64_t parse_int(const char* flag, const char* v, int64_t lo, int64_t hi);
double parse_prob(const char* flag, const char* v);    // [0, 1]
double parse_nonneg(const char* flag, const char* v);  // [0, 1e6)
// MIN-MAX with lo <= MIN <= MAX <= hi.
void parse_range(const char* flag, const char* v, int64_t lo, int64_t hi, int64_t& min, int64_t& max);

}  // namespace tob::simcli
