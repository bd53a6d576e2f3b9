/* Callgrind client requests around the measured loop of the instruction-count gate
 * (scripts/bench-check.py). Outside valgrind they cost a few instructions and do nothing. */
#ifndef COORDS_GATE_MARKERS_H
#define COORDS_GATE_MARKERS_H
/* Zeroes callgrind's counters: what runs next is what the next dump counts. */
void gate_begin(void);
/* Dumps the counters since gate_begin (a file of its own, "part 1"). */
void gate_end(void);
#endif
