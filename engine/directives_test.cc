#include "engine/directives.h"
#include "gtest/gtest.h"
