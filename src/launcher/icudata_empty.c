/* An empty ICU data library for the self-contained tony. Debian's libxml2
 * links ICU, whose data library is 31 MB of locale and converter tables,
 * half of the whole archive; tony parses only UTF-8 XML (Hadoop's
 * configuration files), which libxml2 decodes without ICU. This library
 * takes the data library's place (same soname, same entry symbol) with a
 * valid package of no entries: ICU then answers "no data" where it would
 * have used a table, and libxml2 refuses such an encoding with an error.
 * The layout is ICU's common-data header (a 32-byte header, then an entry
 * count and an empty table of contents). */
#include <stdint.h>

#ifndef TONY_ICU_MAJOR
#error "TONY_ICU_MAJOR (the ICU version's major number) must be defined"
#endif
#define CAT2(a, b, c) a##b##c
#define CAT(a, b, c) CAT2(a, b, c)
/* icudt<major>_dat: the symbol libicuuc looks its common data up by. */
#define ENTRY CAT(icudt, TONY_ICU_MAJOR, _dat)

struct icu_empty_package {
    uint16_t header_size;
    uint8_t magic1, magic2;
    struct {
        uint16_t size, reserved;
        uint8_t big_endian, charset_family, sizeof_uchar, reserved2;
        uint8_t format[4], format_version[4], data_version[4];
    } info;
    uint8_t padding[8];
    uint32_t count, reserved;
    uint32_t toc[2];
};

__attribute__((visibility("default"), aligned(16))) const struct icu_empty_package ENTRY = {
    .header_size = 32,
    .magic1 = 0xda,
    .magic2 = 0x27,
    .info = {.size = 20,
             .big_endian = 0,
             .charset_family = 0, /* ASCII */
             .sizeof_uchar = 2,
             .format = {'T', 'o', 'C', 'P'},
             .format_version = {1, 0, 0, 0}},
    .padding = {'e', 'm', 'p', 't', 'y', 0, 0, 0},
    .count = 0,
};
