#include <criterion/criterion.h>
Test(placeholder, nothing) {}
