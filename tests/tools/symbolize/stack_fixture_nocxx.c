/* stack_fixture_nocxx.c — stands in for stack_fixture_cxx.cpp when there is no C++ compiler. */
#include "stack_fixture.h"

uint64_t fixture_cxx_frame(const char **name, unsigned *line)
{
    *name = 0;
    *line = 0;
    return 0;
}
