/* origin_main.c — calls origin_load() (see origin_loader.c); exits 0 when it worked. */
#include "origin_loader.h"

int main(void)
{
    return origin_load() ? 0 : 1;
}
