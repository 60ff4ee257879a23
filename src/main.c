/* placeholder entry point until the CLI module lands (see src/cli.c) */
#include <stdio.h>
int main(void) { puts("modelfs: under construction"); return 1; }
