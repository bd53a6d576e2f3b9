// The bundled offline geocoding data (GeoNames cities15000 in the CGEO format, built by
// scripts/build-geodata.py), compiled into the library's read-only data with C23's #embed, so
// every host — Swift, C, Python, the JVM — gets it without a resource bundle or a file path, on
// every object format (ELF on Linux and Android, Mach-O on iOS and macOS): no assembler
// directives. The array is static: the only way in is CGeoData.h.
#include "CGeoData.h"

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc23-extensions"
__attribute__((aligned(16))) static const unsigned char places15000[] = {
#embed "places15000.cgeo"
};
#pragma clang diagnostic pop

const unsigned char *cgeo_bundled_bytes(void) { return places15000; }

size_t cgeo_bundled_size(void) { return sizeof places15000; }
