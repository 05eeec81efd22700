#include "tests/fixture.h"
