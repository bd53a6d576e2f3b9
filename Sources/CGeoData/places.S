// The bundled offline geocoding data (GeoNames cities15000 in the CGEO format, built by
// scripts/build-geodata.py), assembled into the library's read-only data so every host — Swift,
// C, Python — gets it without a resource bundle or a file path. Symbols are hidden: the only
// way in is CGeoData.h.
    .section .rodata.coords_places15000,"a",@progbits
    .balign 16
    .globl cgeo_places15000_start
    .hidden cgeo_places15000_start
    .globl cgeo_places15000_end
    .hidden cgeo_places15000_end
cgeo_places15000_start:
    .incbin "places15000.cgeo"
cgeo_places15000_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
