/* deepbind_lib.c — a trivial library the deepbind scenario opens with RTLD_DEEPBIND. */
int cmt_deepbind_probe(void); /* the library's one exported function */

int cmt_deepbind_probe(void)
{
    return 1;
}
