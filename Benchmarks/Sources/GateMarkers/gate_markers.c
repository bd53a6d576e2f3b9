#include "gate_markers.h"
#include <valgrind/callgrind.h>

void gate_begin(void) { CALLGRIND_ZERO_STATS; }
void gate_end(void) { CALLGRIND_DUMP_STATS_AT("gate"); }
