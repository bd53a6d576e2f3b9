#ifndef COORDS_CGEODATA_H
#define COORDS_CGEODATA_H
#include <stddef.h>

/// The first byte of the bundled CGEO file (GeoNames cities15000). Static, read-only data owned
/// by the library: never free it, never write to it.
__attribute__((visibility("hidden"))) const unsigned char *cgeo_bundled_bytes(void);

/// The size in bytes of the bundled CGEO file.
__attribute__((visibility("hidden"))) size_t cgeo_bundled_size(void);

#endif
