// Runs the programs named by the command line (run=a,b,c), one after the
// other, passing every other key=value word to each as arguments; when the
// last one has exited, reports and leaves the machine with a status.
#ifndef RUNNER_H
#define RUNNER_H
#include "cmdline.h"

void runner_start(const struct cmdline *c);
void runner_poll(void);
#endif
