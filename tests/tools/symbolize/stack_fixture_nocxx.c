/* stack_fixture_nocxx.c — stands in for stack_fixture_cxx.cpp when there is no C++ compiler. */
/* A call and the __LINE__ it returns to share a line, as the test expects: */
/* clang-format off */
#include "stack_fixture.h"

uint64_t fixture_cxx_frame(const char **name, unsigned *line)
{
    *name = 0;
    *line = 0;
    return 0;
}
/* clang-format on */
