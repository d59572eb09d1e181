/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: reader/writer of the migration state image.
 *
 * The image is a header (magic, version) followed by sections
 * { u16 tag, u16 flags, u32 length, payload }, all little-endian. A reader
 * skips sections it does not know when they are flagged optional and
 * refuses the image otherwise: that is how later additions stay compatible
 * (the engine's equivalent of vmstate subsections).
 */
#ifndef RNIC_IMAGE_H
#define RNIC_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#define RNIC_IMAGE_MAGIC    0x474d4952u /* "RIMG" */
#define RNIC_IMAGE_VERSION  1
#define RNIC_SECTION_OPTIONAL 1u

typedef struct RnicImageWriter {
    GByteArray *out;
    guint section_start;        /* offset of the open section's header */
} RnicImageWriter;

void rnic_image_put_u8(RnicImageWriter *w, uint8_t v);
void rnic_image_put_u16(RnicImageWriter *w, uint16_t v);
void rnic_image_put_u32(RnicImageWriter *w, uint32_t v);
void rnic_image_put_u64(RnicImageWriter *w, uint64_t v);
void rnic_image_put_bytes(RnicImageWriter *w, const void *p, size_t len);
void rnic_image_begin_section(RnicImageWriter *w, uint16_t tag, uint16_t flags);
void rnic_image_end_section(RnicImageWriter *w);

typedef struct RnicImageReader {
    const uint8_t *data;
    size_t len;
    size_t pos;
    bool overrun;               /* set by any read past the end */
} RnicImageReader;

uint8_t rnic_image_get_u8(RnicImageReader *r);
uint16_t rnic_image_get_u16(RnicImageReader *r);
uint32_t rnic_image_get_u32(RnicImageReader *r);
uint64_t rnic_image_get_u64(RnicImageReader *r);
bool rnic_image_get_bytes(RnicImageReader *r, void *p, size_t len);
/* Next section: its tag, flags and a reader limited to its payload. */
bool rnic_image_next_section(RnicImageReader *r, uint16_t *tag,
                             uint16_t *flags, RnicImageReader *payload);

#endif /* RNIC_IMAGE_H */
