#include "CGeoData.h"

extern const unsigned char cgeo_places15000_start[];
extern const unsigned char cgeo_places15000_end[];

const unsigned char *cgeo_bundled_bytes(void) { return cgeo_places15000_start; }

size_t cgeo_bundled_size(void) { return (size_t)(cgeo_places15000_end - cgeo_places15000_start); }
