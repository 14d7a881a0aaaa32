// Catch2 main for the unit-tests executable; the test cases live in test_*.cc.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
