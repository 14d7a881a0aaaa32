// tob-sim --ic: the interactive-consistency mode (app/tob-sim/ic_main.cc).
#pragma once

// Parses the --ic flags, runs the seeds, prints the summary; returns the exit code.
int run_ic_main(int argc, char** argv);
