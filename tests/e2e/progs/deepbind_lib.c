/* deepbind_lib.c — a trivial library the deepbind scenario opens with RTLD_DEEPBIND. */
int cmt_deepbind_probe(void)
{
    return 1;
}
