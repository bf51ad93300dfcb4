// Catch2 main for the codec tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
