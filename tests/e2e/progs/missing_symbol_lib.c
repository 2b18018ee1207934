/* A library whose one function calls a symbol nothing defines: with lazy binding the loader
 * fails at the first call, prints "symbol lookup error" and ends the process with _exit(127). */
void cmt_test_nowhere(void);
void call_missing(void);

void call_missing(void)
{
    cmt_test_nowhere();
}
